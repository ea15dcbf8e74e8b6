/**
 * The one HTTP client of svcops: JSON over HTTP for the typed clients and the checks. Every call
 * emits an `http` event (method, redacted URL, status, time; never bodies), has a timeout, and
 * answers are validated with zod: a mismatch is a ProtocolError naming the field and what was
 * expected, never echoing a value (it may be a secret).
 *
 * Redirects are never followed (`redirect: 'manual'`): the calls carry a password, a session token
 * or a bearer token in their body or headers, and a redirect would hand them to another origin
 * (fetch keeps a 307/308 body, and https -> http too). A 3xx is an HttpError naming the target.
 *
 * Every request names what it talks to (`peer`), and `limitsOf` alone decides its deadline and the
 * cap of its answer from that (HTTP_LIMITS): no caller picks a cap, so a broken or hostile server
 * (an endless body, an answer that never comes) costs a bounded time and a bounded memory. The
 * Kubernetes driver's calls take theirs from the same table (src/drivers/kubernetes-limits.ts).
 *
 * A client that trusts one CA only (the stack's, for the live system's controller behind its
 * Service) is made with `createHttpClient({ ca, serverName })`: its own undici `Agent`, loaded
 * only then, so a run that never needs one never loads undici.
 */
import { checkServerIdentity, type PeerCertificate } from 'node:tls'
import type { z } from 'zod'
import type { Agent } from 'undici'
import { HttpError, ProtocolError, errorMessage } from './errors.ts'
import { events } from './events.ts'
import { redact } from './redact.ts'
import { formatBytes } from './units.ts'

/** What a request talks to: each has its own deadline and body cap in HTTP_LIMITS. */
export type HttpPeer =
  | 'manager'
  | 'recording-service'
  | 'recording-health'
  | 'webhook'
  | 'pushgateway'
  | 'live-check'
  | 'live-controller'
  | 'kubernetes-api'
  | 'kubernetes-log'
  | 'kubernetes-proxy'
  | 'prometheus'

export interface HttpRequest {
  /** What the request talks to: decides its deadline and body cap (limitsOf). */
  peer: HttpPeer
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  /** JSON body; serialized here. */
  body?: unknown
  /** A body sent as it is (a webhook's prepared JSON, a Pushgateway's text exposition), with its content type. */
  text?: { content: string; type: string }
  headers?: Record<string, string>
  /**
   * A deadline the operator configured (the environment file's `timeoutMs`) or what is left of a
   * caller's overall deadline (a webhook's retries); never above the peer's own.
   */
  timeoutMs?: number
}

/** The deadline and the body cap of one request. */
export interface Limits {
  timeoutMs: number
  maxBodyBytes: number
}

const KiB = 1024
const MiB = 1024 * KiB

/**
 * The deadline and body cap of each peer: an API answer of svcops is a few KB, a content list or a
 * pod list a few MB at most; a log read asks the API for `limitBytes` and is capped a little above
 * it (the API "may return slightly more"); a pod's /metrics through the proxy a few MiB.
 */
export const HTTP_LIMITS: Readonly<Record<HttpPeer, Readonly<Limits>>> = {
  manager: { timeoutMs: 15_000, maxBodyBytes: 1 * MiB },
  'recording-service': { timeoutMs: 15_000, maxBodyBytes: 4 * MiB },
  'recording-health': { timeoutMs: 5_000, maxBodyBytes: 64 * KiB },
  webhook: { timeoutMs: 10_000, maxBodyBytes: 64 * KiB },
  pushgateway: { timeoutMs: 5_000, maxBodyBytes: 64 * KiB },
  'live-check': { timeoutMs: 3_000, maxBodyBytes: 1 * MiB },
  'live-controller': { timeoutMs: 5_000, maxBodyBytes: 1 * MiB },
  'kubernetes-api': { timeoutMs: 30_000, maxBodyBytes: 16 * MiB },
  'kubernetes-log': { timeoutMs: 30_000, maxBodyBytes: 320 * KiB },
  'kubernetes-proxy': { timeoutMs: 15_000, maxBodyBytes: 4 * MiB },
  prometheus: { timeoutMs: 5_000, maxBodyBytes: 1 * MiB },
}

/** The bytes of log a pod-log read asks the API for (`limitBytes`, as `kubectl logs --limit-bytes`). */
export const LOG_LIMIT_BYTES = 256 * KiB

export interface HttpResponse {
  status: number
  headers: Headers
  /** Parsed JSON, the text when it is not JSON, or undefined when empty. */
  body: unknown
}

/** What a client trusts when it speaks TLS; nothing given: the system's CAs, the URL's host name. */
export interface HttpClientOptions {
  /** PEM of the only CA trusted (e.g. the stack's CA). */
  ca?: string
  /** The name the server's certificate must hold, when the server is reached by another address (a port-forward's 127.0.0.1). */
  serverName?: string
}

/** A client: requests sent with its trust, and `close` to end its connections. */
export interface HttpClient {
  send(request: HttpRequest): Promise<HttpResponse>
  close(): Promise<void>
}

/**
 * The one place a request's deadline and body cap are decided: the peer's (HTTP_LIMITS), the
 * deadline shortened by a configured one (`timeoutMs`), never lengthened.
 */
export function limitsOf(request: { peer: HttpPeer; timeoutMs?: number | undefined }): Limits {
  const own = HTTP_LIMITS[request.peer]
  const configured = request.timeoutMs
  return {
    timeoutMs: configured !== undefined && configured > 0 ? Math.min(configured, own.timeoutMs) : own.timeoutMs,
    maxBodyBytes: own.maxBodyBytes,
  }
}

/** The error of an answer longer than its cap: names the request and the cap. */
export function tooLargeError(what: string, max: number, status: number | undefined): HttpError {
  return new HttpError(
    `${what} answered more than ${formatBytes(max)}${status !== undefined ? ` (status ${status})` : ''}, the cap of its answers; it was refused unread.`,
    status,
  )
}

/** The error of a request without an answer within its deadline. */
export function deadlineError(what: string, timeoutMs: number): HttpError {
  return new HttpError(`${what} failed: no answer within ${timeoutMs} ms, the deadline of the call.`, undefined)
}

/**
 * Reads a body stream as text, refused (the stream cancelled, which drops the connection) as soon
 * as it passes `max` bytes: never buffered beyond the cap.
 */
export async function readCappedStream(
  body: AsyncIterable<Uint8Array> | null | undefined,
  max: number,
  tooLarge: () => Error,
): Promise<string> {
  if (!body) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  // Leaving the loop early cancels the stream.
  for await (const chunk of body) {
    size += chunk.byteLength
    if (size > max) throw tooLarge()
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** A client with its own trust (`options`): a CA of its own goes through an undici `Agent` of its own. */
export function createHttpClient(options: HttpClientOptions = {}): HttpClient {
  let agent: Promise<Agent> | undefined
  const dispatcher = (): Promise<Agent> | undefined => {
    if (options.ca === undefined && options.serverName === undefined) return undefined
    agent ??= import('undici').then(({ Agent }) => new Agent({ connect: tlsOptions(options) }))
    return agent
  }
  return {
    send: async (request) => send(request, await dispatcher()),
    async close() {
      if (agent) await (await agent).close()
      agent = undefined
    },
  }
}

/** The TLS options of a client: only `ca` trusted, and the certificate checked for `serverName` whatever address was dialled. */
function tlsOptions(options: HttpClientOptions): Record<string, unknown> {
  const { serverName, ca } = options
  return {
    ...(ca !== undefined ? { ca } : {}),
    ...(serverName !== undefined
      ? { servername: serverName, checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(serverName, cert) }
      : {}),
  }
}

const defaultClient = createHttpClient()

/** Sends one request with the system's trust. Network failures and timeouts become HttpError with status undefined. */
export function sendRequest(request: HttpRequest): Promise<HttpResponse> {
  return defaultClient.send(request)
}

async function send(request: HttpRequest, dispatcher: Agent | undefined): Promise<HttpResponse> {
  const started = Date.now()
  const limits = limitsOf(request)
  const shownUrl = redact(request.url)
  const headers: Record<string, string> = { accept: 'application/json', ...request.headers }
  if (request.body !== undefined) headers['content-type'] = 'application/json'
  if (request.text !== undefined) headers['content-type'] = request.text.type
  let response: Response
  try {
    response = await fetch(request.url, {
      method: request.method,
      headers,
      ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : request.text ? { body: request.text.content } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(limits.timeoutMs),
      ...(dispatcher ? { dispatcher } : {}),
    })
  } catch (error) {
    events.emit({ kind: 'http', method: request.method, url: shownUrl, status: null, durationMs: Date.now() - started })
    if (error instanceof Error && error.name === 'TimeoutError') throw deadlineError(`${request.method} ${shownUrl}`, limits.timeoutMs)
    throw new HttpError(`${request.method} ${shownUrl} failed: ${describeNetworkError(error)}.`, undefined)
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel().catch(() => undefined)
    events.emit({ kind: 'http', method: request.method, url: shownUrl, status: response.status, durationMs: Date.now() - started })
    const location = response.headers.get('location')
    const target = location ? redact(new URL(location, request.url).href.replace(/\/\/[^/@]*@/, '//')) : 'no Location header'
    throw new HttpError(
      `${request.method} ${shownUrl} answered ${response.status}, a redirect to ${target}; svcops does not follow redirects with credentials.`,
      response.status,
      'Set the URL in the environment file to the final address.',
    )
  }
  let text: string
  try {
    text = await readCapped(response, limits.maxBodyBytes, `${request.method} ${shownUrl}`)
  } catch (error) {
    if (error instanceof Error && error.name === 'TimeoutError') throw deadlineError(`${request.method} ${shownUrl}`, limits.timeoutMs)
    throw error
  }
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

/** The body as text, refused (and the connection dropped) as soon as it passes `max` bytes. */
async function readCapped(response: Response, max: number, what: string): Promise<string> {
  const tooLarge = (): HttpError => tooLargeError(what, max, response.status)
  const declared = Number(response.headers.get('content-length') ?? NaN)
  if (declared > max) {
    await response.body?.cancel().catch(() => undefined)
    throw tooLarge()
  }
  return readCappedStream(response.body as AsyncIterable<Uint8Array> | null, max, tooLarge)
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
