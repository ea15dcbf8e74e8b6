/**
 * JSON over HTTP for the typed clients. Every call emits an `http` event (method, redacted URL,
 * status, time; never bodies), has a timeout, and answers are validated with zod: a mismatch is a
 * ProtocolError naming the field and what was expected, never echoing a value (it may be a secret).
 */
import type { z } from 'zod'
import { HttpError, ProtocolError, errorMessage } from './errors.ts'
import { events } from './events.ts'
import { redact } from './redact.ts'

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  /** JSON body; serialized here. */
  body?: unknown
  headers?: Record<string, string>
  timeoutMs?: number
}

export interface HttpResponse {
  status: number
  headers: Headers
  /** Parsed JSON, the text when it is not JSON, or undefined when empty. */
  body: unknown
}

/** Sends one request. Network failures and timeouts become HttpError with status undefined. */
export async function sendRequest(request: HttpRequest): Promise<HttpResponse> {
  const started = Date.now()
  const shownUrl = redact(request.url)
  const headers: Record<string, string> = { accept: 'application/json', ...request.headers }
  if (request.body !== undefined) headers['content-type'] = 'application/json'
  let response: Response
  try {
    response = await fetch(request.url, {
      method: request.method,
      headers,
      ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
      signal: AbortSignal.timeout(request.timeoutMs ?? 15_000),
    })
  } catch (error) {
    events.emit({ kind: 'http', method: request.method, url: shownUrl, status: null, durationMs: Date.now() - started })
    const reason =
      error instanceof Error && error.name === 'TimeoutError'
        ? `no answer within ${request.timeoutMs ?? 15_000} ms`
        : describeNetworkError(error)
    throw new HttpError(`${request.method} ${shownUrl} failed: ${reason}.`, undefined)
  }
  const text = await response.text()
  events.emit({ kind: 'http', method: request.method, url: shownUrl, status: response.status, durationMs: Date.now() - started })
  let body: unknown = undefined
  if (text.length > 0) {
    try {
      body = JSON.parse(text)
    } catch {
      body = text
    }
  }
  return { status: response.status, headers: response.headers, body }
}

function describeNetworkError(error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error
  const code = cause && typeof cause === 'object' && 'code' in cause ? String(cause.code) : undefined
  if (code === 'ECONNREFUSED') return 'connection refused'
  if (code === 'ENOTFOUND') return 'host not found'
  return redact(errorMessage(cause))
}

/**
 * Validates an answer against `schema`. `what` names the answer in the error
 * ("the login response"); the error lists the field paths and expectations, never the values.
 */
export function parseAnswer<S extends z.ZodType>(schema: S, body: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(body)
  if (result.success) return result.data
  const problems = result.error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length ? issue.path.map(String).join('.') : '(body)'}: ${issue.message.replace(/, received .*$/, '')}`)
    .join('; ')
  throw new ProtocolError(`${what} does not have the documented shape: ${problems}.`)
}
