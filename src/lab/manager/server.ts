/**
 * The manager emulator: the three auth endpoints of the seed (login, token, logout) over real HTTP
 * on loopback, plus the JWKS lab services verify tokens with and a fault switch for tests (which
 * needs the lab's admin token: anything on the machine can reach a loopback port).
 *
 * Status codes. The seed fixes 200/401/500 for login and token and 200/400/500 for logout. A request
 * that is not even well-formed (not JSON, not an object, a field missing or of the wrong type,
 * grant_type other than `session`) gets 400 on every endpoint: it is the caller's bug, not a failed
 * authentication, and answering 401 would send a client into a pointless re-login. Wrong
 * credentials are 401 at login; an unknown, wrong, logged-out or expired session is 401 at token and
 * 400 at logout. Error bodies are `{ "error": code, "message": sentence }` (the seed leaves them open).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { z } from 'zod'
import { AUTH_API_PREFIX, authRevisionFacts, type AuthRevision } from '../../releases/auth.ts'
import { verifyPassword } from './passwords.ts'
import { audiencesOf, createTokenSigner, type TokenSigner } from './tokens.ts'
import { errorMessage } from '../../core/errors.ts'

export type ApiRevision = AuthRevision
export type AuthEndpoint = 'login' | 'token' | 'logout'

export interface ManagerUser {
  email: string
  /** From `hashPassword`; the emulator never sees a plain password except in a login request. */
  passwordHash: string
  /** Scopes this user may be granted. */
  permissions: string[]
}

export interface ManagerEmulatorOptions {
  users: ManagerUser[]
  host?: string
  /** 0 or absent: a free port. */
  port?: number
  /** 1.4.1 issues tokens for 300 s, later revisions for 3600 s. */
  apiRevision?: ApiRevision
  /** Overrides the revision's token lifetime (tests use short ones). */
  tokenLifetimeSeconds?: number
  sessionLifetimeSeconds?: number
  /** Clock in milliseconds; tests move it forward instead of sleeping. */
  now?: () => number
  /** Remember issued session and access tokens so the redaction test can search outputs for them. */
  recordIssued?: boolean
  /** One line per request (method, path, status; never bodies). */
  log?: (line: string) => void
  /**
   * Bearer token that `POST /lab/fault` requires (the lab's admin token, a 0600 secret file of the
   * lab). Without it the fault switch over HTTP is off; tests in the same process use `setFault`.
   */
  adminToken?: string
  /** The same as its SHA-256 (hex), so a config file on disk holds no usable token. */
  adminTokenSha256?: string
}

/** Makes endpoints answer 500. `count` limits it to that many requests; absent means until cleared. */
export interface FaultSpec {
  endpoints?: AuthEndpoint[]
  count?: number
}

export interface ManagerEmulator {
  /** Base URL, also the `iss` claim of every token. */
  readonly url: string
  readonly port: number
  readonly apiRevision: ApiRevision
  setFault(fault: FaultSpec | undefined): void
  /** Session and access tokens issued so far (only with `recordIssued`). */
  issuedSecrets(): string[]
  close(): Promise<void>
}

interface Session {
  id: string
  tokenHash: Buffer
  email: string
  expiresAt: number
  loggedOut: boolean
}

class RequestError extends Error {
  readonly status: number
  readonly code: string
  constructor(status: number, code: string, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

const MAX_BODY_BYTES = 64 * 1024
const nonEmpty = (field: string) => z.string({ error: `${field}: expected a string` }).min(1, `${field}: expected a non-empty string`)
const loginBody = z.object({ email: z.email({ error: 'email: expected an e-mail address' }), password: nonEmpty('password') })
const sessionFields = { session_id: nonEmpty('session_id'), session_token: nonEmpty('session_token') }
const tokenBody = z.object({
  ...sessionFields,
  grant_type: z.literal('session', { error: 'grant_type: expected "session"' }),
  scope: z.string({ error: 'scope: expected a space-separated string of scopes' }),
})
const logoutBody = z.object(sessionFields)
const faultBody = z.object({
  enabled: z.boolean({ error: 'enabled: expected true or false' }),
  endpoints: z.array(z.enum(['login', 'token', 'logout'])).optional(),
  count: z.number().int().positive().optional(),
})

/** ISO 8601 with an explicit UTC offset, as the seed's `verified_at` / `expires_at`. */
export function formatTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '+00:00')
}

function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type']
  if (type !== undefined && !/^application\/json\b/i.test(type)) {
    throw new RequestError(415, 'unsupported_media_type', `Content-Type '${type}' is not supported; expected application/json.`)
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) throw new RequestError(413, 'payload_too_large', `The request body exceeds ${MAX_BODY_BYTES} bytes.`)
    chunks.push(chunk)
  }
  const text = Buffer.concat(chunks).toString('utf8')
  if (text.trim() === '') throw new RequestError(400, 'invalid_request', 'The request body is empty; expected a JSON object.')
  try {
    return JSON.parse(text)
  } catch {
    throw new RequestError(400, 'invalid_request', 'The request body is not valid JSON.')
  }
}

function validate<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new RequestError(400, 'invalid_request', 'The request body must be a JSON object.')
  }
  const result = schema.safeParse(body)
  if (result.success) return result.data
  const issue = result.error.issues[0]
  const field = issue?.path.map(String).join('.') ?? ''
  const message = issue?.message.startsWith(`${field}:`) ? issue.message : `${field || '(body)'}: ${issue?.message ?? 'invalid'}`
  throw new RequestError(400, 'invalid_request', `${message.replace(/, received .*$/, '')}.`)
}

/** Starts the emulator on loopback. */
export async function startManagerEmulator(options: ManagerEmulatorOptions): Promise<ManagerEmulator> {
  const apiRevision = options.apiRevision ?? '1.6.2'
  const tokenLifetime = options.tokenLifetimeSeconds ?? authRevisionFacts(apiRevision).tokenLifetimeSeconds
  const sessionLifetime = options.sessionLifetimeSeconds ?? 8 * 3600
  const now = options.now ?? Date.now
  const users = new Map(options.users.map((u) => [u.email.toLowerCase(), u]))
  const sessions = new Map<string, Session>()
  const issued: string[] = []
  const signer: TokenSigner = await createTokenSigner()
  let fault: FaultSpec | undefined
  let baseUrl = ''

  const remember = (secret: string) => {
    if (options.recordIssued) issued.push(secret)
  }

  function takeFault(endpoint: AuthEndpoint): boolean {
    if (!fault || (fault.endpoints && !fault.endpoints.includes(endpoint))) return false
    if (fault.count !== undefined) {
      fault.count -= 1
      if (fault.count <= 0) fault = undefined
    }
    return true
  }

  /** The live session named by the request, or undefined when unknown, wrong, logged out or expired. */
  function findSession(id: string, token: string): Session | undefined {
    const session = sessions.get(id)
    if (!session || !timingSafeEqual(session.tokenHash, hashToken(token))) return undefined
    if (session.loggedOut || now() >= session.expiresAt) return undefined
    return session
  }

  async function login(body: unknown): Promise<unknown> {
    const { email, password } = validate(loginBody, body)
    const user = users.get(email.toLowerCase())
    const ok = await verifyPassword(password, user?.passwordHash)
    if (!user || !ok) throw new RequestError(401, 'invalid_credentials', 'The e-mail or password is not valid.')
    const verifiedAt = now()
    const sessionToken = randomBytes(32).toString('base64url')
    // Only a hash is kept: the emulator's memory holds no usable session token.
    const session: Session = {
      id: `ses_${randomBytes(12).toString('base64url')}`,
      tokenHash: hashToken(sessionToken),
      email: user.email,
      expiresAt: verifiedAt + sessionLifetime * 1000,
      loggedOut: false,
    }
    sessions.set(session.id, session)
    remember(sessionToken)
    return {
      session_id: session.id,
      session_token: sessionToken,
      verified_at: formatTimestamp(verifiedAt),
      expires_at: formatTimestamp(session.expiresAt),
    }
  }

  async function token(body: unknown): Promise<unknown> {
    const request = validate(tokenBody, body)
    const session = findSession(request.session_id, request.session_token)
    const user = session && users.get(session.email.toLowerCase())
    if (!session || !user) throw new RequestError(401, 'invalid_session', 'The session is unknown, logged out or expired; log in again.')
    const requested = [...new Set(request.scope.split(/\s+/).filter(Boolean))]
    const granted = requested.filter((scope) => user.permissions.includes(scope))
    const issuedAt = Math.floor(now() / 1000)
    const accessToken = await signer.sign({
      issuer: baseUrl,
      email: user.email,
      sessionId: session.id,
      scopes: granted,
      audience: audiencesOf(granted),
      issuedAt,
      expiresAt: issuedAt + tokenLifetime,
    })
    remember(accessToken)
    return { access_token: accessToken, scope: granted.join(' '), expires_in: tokenLifetime, token_type: 'bearer' }
  }

  function logout(body: unknown): unknown {
    const request = validate(logoutBody, body)
    const session = findSession(request.session_id, request.session_token)
    if (!session) throw new RequestError(400, 'invalid_session', 'The session parameters do not name a live session.')
    // Only the session ends: access tokens issued from it stay valid until they expire (seed).
    session.loggedOut = true
    return { status: 'Ok' }
  }

  const adminHash = options.adminToken
    ? hashToken(options.adminToken)
    : options.adminTokenSha256
      ? Buffer.from(options.adminTokenSha256, 'hex')
      : undefined
  function isAdmin(header: string | undefined): boolean {
    const presented = /^Bearer (\S+)$/i.exec(header ?? '')?.[1]
    return adminHash !== undefined && presented !== undefined && timingSafeEqual(hashToken(presented), adminHash)
  }

  async function route(req: IncomingMessage): Promise<[number, unknown]> {
    const path = new URL(req.url ?? '/', 'http://emulator').pathname
    const endpoints: Record<string, (body: unknown) => unknown> = {
      [`${AUTH_API_PREFIX}/login`]: login,
      [`${AUTH_API_PREFIX}/token`]: token,
      [`${AUTH_API_PREFIX}/logout`]: logout,
    }
    const handler = endpoints[path]
    if (handler) {
      if (req.method !== 'POST') throw new RequestError(405, 'method_not_allowed', `${path} accepts POST only.`)
      if (takeFault(path.split('/').pop() as AuthEndpoint)) {
        req.resume()
        throw new RequestError(500, 'backend_error', 'The identity backend failed (lab fault switch).')
      }
      return [200, await handler(await readJson(req))]
    }
    if (path === '/.well-known/jwks.json' && req.method === 'GET') return [200, signer.jwks]
    if (path === '/lab/health' && req.method === 'GET') return [200, { status: 'Ok', apiRevision, sessions: sessions.size }]
    if (path === '/lab/fault' && req.method === 'POST') {
      if (!isAdmin(req.headers.authorization)) {
        req.resume()
        throw new RequestError(401, 'unauthorized', "The fault switch needs the lab's admin token as a bearer token.")
      }
      const spec = validate(faultBody, await readJson(req))
      fault = spec.enabled
        ? { ...(spec.endpoints ? { endpoints: spec.endpoints } : {}), ...(spec.count ? { count: spec.count } : {}) }
        : undefined
      return [200, { status: 'Ok', fault: fault ?? null }]
    }
    throw new RequestError(404, 'not_found', `No endpoint ${req.method ?? ''} ${path}.`)
  }

  function answer(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  }

  const server = createServer((req, res) => {
    route(req)
      .then(([status, body]) => {
        answer(res, status, body)
        options.log?.(`${req.method} ${req.url} ${status}`)
      })
      .catch((error: unknown) => {
        const known = error instanceof RequestError
        const status = known ? error.status : 500
        answer(
          res,
          status,
          known
            ? { error: error.code, message: error.message }
            : { error: 'internal_error', message: 'The manager emulator failed to handle the request.' },
        )
        options.log?.(`${req.method} ${req.url} ${status}${known ? '' : ` internal: ${errorMessage(error)}`}`)
      })
  })
  server.on('clientError', (_error, socket) => socket.destroy())

  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  baseUrl = `http://${host}:${port}`

  return {
    url: baseUrl,
    port,
    apiRevision,
    setFault: (spec) => {
      fault = spec ? { ...spec } : undefined
    },
    issuedSecrets: () => [...issued],
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()))
        server.closeAllConnections()
      }),
  }
}
