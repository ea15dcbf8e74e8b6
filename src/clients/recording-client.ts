/**
 * Typed client of the recording service's management API: `GET /` (health), `GET
 * /api/v1/content?limit=N` and `POST /api/v1/content`. Calls carry a bearer token from the
 * manager; a 401 gets one fresh token and one retry. Answers are validated with zod. The seed does
 * not show the list body, so a bare array and an object holding exactly one array are accepted;
 * anything else is a ProtocolError.
 */
import { z } from 'zod'
import type { Environment } from '../config/schema.ts'
import { requireSection } from '../config/load.ts'
import { AuthError, BadInputError, HttpError, ProtocolError } from '../core/errors.ts'
import { parseAnswer, sendRequest, type HttpRequest, type HttpResponse } from '../core/http.ts'
import { redact } from '../core/redact.ts'

/** Default scopes in the seed's URN shape; environments may name others (`svcops:recording.scopes`). */
export const DEFAULT_RECORDING_SCOPES = { read: 'urn:svc:recorder:content:read', write: 'urn:svc:recorder:content:write' } as const

/** A function giving an access token for scopes; `fresh` asks it not to return a cached one. */
export type AccessTokenFunction = (scopes: string[], options?: { fresh?: boolean }) => Promise<string>
/** Anything that calls `fn` with a bearer token and re-authenticates once on a 401 (the ManagerClient does). */
export interface BearerProvider {
  withBearer<T>(scopes: string[], fn: (token: string) => Promise<T>): Promise<T>
}

export interface RecordingClientOptions {
  /** Base URL of one host's recording service. */
  url: string
  /** Where access tokens come from: the ManagerClient, or a function. */
  auth: AccessTokenFunction | BearerProvider
  scopes?: { read: string; write: string }
  timeoutMs?: number
}

/** What a new recording needs (the seed's creation request). */
export const recordingRequestSchema = z.strictObject({
  channelName: z.string().min(1, 'expected a channel name'),
  title: z.string().min(1, 'expected a title'),
  startTime: z.number().int('expected an integer (Unix seconds)').min(0),
  stopTime: z.number().int('expected an integer (Unix seconds)').min(0),
})
export type RecordingRequest = z.infer<typeof recordingRequestSchema>

/** A recording as the service answers it; `id` is normalized to a string, other fields pass through. */
export const recordingSchema = z.looseObject({
  id: z.union([z.string().min(1), z.number().int()]).transform(String),
  channelName: z.string(),
  title: z.string(),
  startTime: z.number().int(),
  stopTime: z.number().int(),
})
export type Recording = z.infer<typeof recordingSchema>

/** Outcome of the health check; never throws for an unhealthy or unreachable service. */
export interface HealthResult {
  healthy: boolean
  /** HTTP status, or null when there was no answer. */
  status: number | null
  durationMs: number
  /** Why it is not healthy (network error or status). */
  reason?: string
}

/** Picks the recordings out of a list answer: a bare array, or the one array an object holds. */
export function extractRecordingList(body: unknown): unknown[] {
  if (Array.isArray(body)) return body
  if (body && typeof body === 'object') {
    const arrays = Object.entries(body).filter(([, value]) => Array.isArray(value))
    if (arrays.length === 1) return arrays[0]?.[1] as unknown[]
    throw new ProtocolError(
      arrays.length === 0
        ? 'The content list answer of the recording service is an object without an array of recordings.'
        : `The content list answer of the recording service holds ${arrays.length} arrays (${arrays.map(([key]) => key).join(', ')}); expected one array of recordings.`,
    )
  }
  throw new ProtocolError(
    `The content list answer of the recording service is ${body === undefined ? 'empty' : typeof body}; expected an array of recordings or an object holding one.`,
  )
}

/** Client of one host's recording service. */
export class RecordingClient {
  private readonly scopes: { read: string; write: string }

  private readonly options: RecordingClientOptions

  constructor(options: RecordingClientOptions) {
    this.options = options
    this.scopes = options.scopes ?? DEFAULT_RECORDING_SCOPES
  }

  get url(): string {
    return this.options.url
  }

  /** `GET /` without a token: healthy on a 2xx answer. Network errors and other statuses come back as unhealthy. */
  async health(): Promise<HealthResult> {
    const started = Date.now()
    try {
      const answer = await sendRequest({
        peer: 'recording-health',
        method: 'GET',
        url: this.endpoint('/'),
        ...(this.options.timeoutMs !== undefined ? { timeoutMs: this.options.timeoutMs } : {}),
      })
      const healthy = answer.status >= 200 && answer.status < 300
      return {
        healthy,
        status: answer.status,
        durationMs: Date.now() - started,
        ...(healthy ? {} : { reason: `GET / answered ${answer.status}` }),
      }
    } catch (error) {
      if (!(error instanceof HttpError)) throw error
      return { healthy: false, status: null, durationMs: Date.now() - started, reason: error.message }
    }
  }

  /** Lists at most `limit` recordings (`limit`: integer >= 1). */
  async list(limit: number): Promise<Recording[]> {
    if (!Number.isInteger(limit) || limit < 1)
      throw new BadInputError(`limit: ${String(limit)} is not allowed; expected an integer of at least 1.`)
    const answer = await this.authorized(this.scopes.read, {
      peer: 'recording-service',
      method: 'GET',
      url: this.endpoint(`/api/v1/content?limit=${limit}`),
    })
    this.expectStatus(answer, 200, `GET /api/v1/content?limit=${limit}`)
    return parseAnswer(z.array(recordingSchema), extractRecordingList(answer.body), 'The content list answer of the recording service')
  }

  /** Creates a recording; the request is checked before anything is sent. */
  async create(request: RecordingRequest): Promise<Recording> {
    const checked = recordingRequestSchema.safeParse(request)
    if (!checked.success) {
      const issue = checked.error.issues[0]
      const field = issue?.code === 'unrecognized_keys' ? issue.keys.join(', ') : issue?.path.map(String).join('.') || '(request)'
      throw new BadInputError(
        `${field}: ${issue?.code === 'unrecognized_keys' ? 'unknown field' : (issue?.message ?? 'invalid')}; a recording needs channelName, title, startTime and stopTime.`,
      )
    }
    if (checked.data.stopTime <= checked.data.startTime)
      throw new BadInputError(`stopTime: ${checked.data.stopTime} is not after startTime ${checked.data.startTime}; expected a later time.`)
    const answer = await this.authorized(this.scopes.write, {
      peer: 'recording-service',
      method: 'POST',
      url: this.endpoint('/api/v1/content'),
      body: checked.data,
    })
    this.expectStatus(answer, 201, 'POST /api/v1/content')
    return parseAnswer(recordingSchema, answer.body, 'The created recording answered by the recording service')
  }

  private endpoint(path: string): string {
    return `${this.options.url.replace(/\/+$/, '')}${path}`
  }

  private async authorized(scope: string, request: HttpRequest): Promise<HttpResponse> {
    const timed: HttpRequest = { ...request, ...(this.options.timeoutMs !== undefined ? { timeoutMs: this.options.timeoutMs } : {}) }
    const send = (token: string): Promise<HttpResponse> =>
      sendRequest({ ...timed, headers: { ...timed.headers, authorization: `Bearer ${token}` } })
    const auth = this.options.auth
    if (typeof auth !== 'function') return auth.withBearer([scope], send)
    const first = await send(await auth([scope]))
    if (first.status !== 401) return first
    return send(await auth([scope], { fresh: true }))
  }

  private expectStatus(answer: HttpResponse, expected: number, what: string): void {
    if (answer.status === expected) return
    const said = describeErrorBody(answer.body)
    const detail = said ? `: ${said}` : ''
    if (answer.status === 401)
      throw new AuthError(
        `The recording service at ${this.options.url} refused the access token for ${what} (401)${detail}.`,
        [],
        'Check that the service trusts this manager (auth.jwksUrl and auth.issuer in its config).',
      )
    if (answer.status === 403) {
      const scope = what.startsWith('POST') ? this.scopes.write : this.scopes.read
      throw new AuthError(
        `The recording service at ${this.options.url} refused ${what} (403): the token lacks the scope ${scope}.`,
        [scope],
        `Grant ${scope} to the manager user svcops logs in as.`,
      )
    }
    throw new HttpError(
      `${what} at ${this.options.url} answered ${answer.status}, expected ${expected}${detail}.`,
      answer.status,
      answer.status >= 500 ? 'Read the last lines of the service log on that host.' : undefined,
    )
  }
}

/** The service's error sentence (`{ "error": ... }` or plain text), shortened and redacted. */
function describeErrorBody(body: unknown): string {
  let text = ''
  if (typeof body === 'string') text = body
  else if (body && typeof body === 'object') {
    const record = body as Record<string, unknown>
    const value = record.error ?? record.message
    if (typeof value === 'string') text = value
  }
  return redact(text.trim().replace(/\.$/, '').slice(0, 300))
}

/** A client for host `hostName` of environment `env` (`svcops:recording`), with its configured scopes. */
export function recordingClientFor(
  env: Environment,
  hostName: string,
  auth: AccessTokenFunction | BearerProvider,
  options: { timeoutMs?: number } = {},
): RecordingClient {
  const recording = requireSection(env, 'recording')
  const host = recording.hosts.find((candidate) => candidate.name === hostName)
  if (!host)
    throw new BadInputError(
      `recording.hosts: no host named '${hostName}'; expected one of ${recording.hosts.map((h) => h.name).join(', ')}.`,
    )
  return new RecordingClient({ url: host.url, auth, scopes: recording.scopes, ...options })
}
