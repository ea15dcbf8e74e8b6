/**
 * The manager's three auth endpoints as typed calls: one request each, answers validated with zod,
 * secrets registered with the redaction layer the moment they arrive (before validation, so not
 * even a shape error can leak one). Retries, caching and renewal live in `manager.ts`.
 */
import { z } from 'zod'
import { AuthError, HttpError } from '../core/errors.ts'
import { parseAnswer, sendRequest, type HttpResponse } from '../core/http.ts'
import { registerSecret } from '../core/redact.ts'
import { AUTH_API_PREFIX } from '../releases/auth.ts'

const timestamp = z.iso.datetime({ offset: true, error: 'expected an ISO 8601 timestamp with UTC offset' })

export const sessionAnswer = z.object({
  session_id: z.string().min(1),
  session_token: z.string().min(1),
  verified_at: timestamp,
  expires_at: timestamp,
})

export const tokenAnswer = z.object({
  access_token: z.string().min(1),
  scope: z.string(),
  expires_in: z.number().int().positive(),
  token_type: z.string().regex(/^bearer$/i, 'expected "bearer"'),
})

export const logoutAnswer = z.object({ status: z.literal('Ok') })

export type SessionAnswer = z.infer<typeof sessionAnswer>
export type TokenAnswer = z.infer<typeof tokenAnswer>

/** A session as the client keeps it. */
export interface ManagerSession {
  id: string
  token: string
  /** Unix milliseconds. */
  expiresAt: number
}

/** Secret-named fields of an answer are registered before anything else looks at the body. */
function registerAnswerSecrets(body: unknown): void {
  if (!body || typeof body !== 'object') return
  for (const key of ['session_token', 'access_token'] as const) {
    const value = (body as Record<string, unknown>)[key]
    if (typeof value === 'string') registerSecret(value)
  }
}

async function post(
  baseUrl: string,
  endpoint: 'login' | 'token' | 'logout',
  body: unknown,
  timeoutMs: number | undefined,
): Promise<HttpResponse> {
  const response = await sendRequest({
    peer: 'manager',
    method: 'POST',
    url: `${baseUrl.replace(/\/+$/, '')}${AUTH_API_PREFIX}/${endpoint}`,
    body,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  })
  registerAnswerSecrets(response.body)
  return response
}

function unexpected(endpoint: string, baseUrl: string, response: HttpResponse): HttpError {
  const what = response.status >= 500 ? 'a backend or state error' : 'an undocumented status'
  return new HttpError(`The manager at ${baseUrl} answered ${response.status} at ${endpoint} (${what}).`, response.status)
}

/** POST /api/v1/auth/login. A 401 is an AuthError that names the user, never the password. */
export async function requestSession(baseUrl: string, email: string, password: string, timeoutMs?: number): Promise<ManagerSession> {
  const response = await post(baseUrl, 'login', { email, password }, timeoutMs)
  if (response.status === 401) {
    throw new AuthError(`The manager at ${baseUrl} refused the credentials of '${email}' (401 at login).`)
  }
  if (response.status !== 200) throw unexpected('login', baseUrl, response)
  const session = parseAnswer(sessionAnswer, response.body, 'The manager login answer')
  return { id: session.session_id, token: session.session_token, expiresAt: Date.parse(session.expires_at) }
}

/** Thrown when the manager no longer accepts a session (401 at token): log in again. */
export class SessionRejectedError extends AuthError {}

/** POST /api/v1/auth/token with grant type `session`. */
export async function requestAccessToken(
  baseUrl: string,
  session: ManagerSession,
  scopes: string[],
  timeoutMs?: number,
): Promise<TokenAnswer> {
  const response = await post(
    baseUrl,
    'token',
    { session_id: session.id, session_token: session.token, grant_type: 'session', scope: scopes.join(' ') },
    timeoutMs,
  )
  if (response.status === 401) {
    throw new SessionRejectedError(
      `The manager at ${baseUrl} rejected the session at token exchange (401: unknown, logged out or expired).`,
    )
  }
  if (response.status !== 200) throw unexpected('token', baseUrl, response)
  return parseAnswer(tokenAnswer, response.body, 'The manager token answer')
}

/** POST /api/v1/auth/logout. Returns false when the manager says the session was already invalid (400). */
export async function requestLogout(baseUrl: string, session: ManagerSession, timeoutMs?: number): Promise<boolean> {
  const response = await post(baseUrl, 'logout', { session_id: session.id, session_token: session.token }, timeoutMs)
  if (response.status === 400) return false
  if (response.status !== 200) throw unexpected('logout', baseUrl, response)
  parseAnswer(logoutAnswer, response.body, 'The manager logout answer')
  return true
}
