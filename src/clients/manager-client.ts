/**
 * Client of the manager's auth API: login -> session, session -> access token (grant type
 * `session`) -> bearer on the resource servers (the recording service, ...).
 *
 * - Tokens are cached in memory per set of scopes and renewed shortly before they expire, from the
 *   same session; a run logs in once for as long as the session lasts, and again when it expired.
 * - A task asks for the scopes it needs; when the manager grants only a subset, AuthError lists the
 *   missing ones.
 * - 5xx answers and network failures are retried with bounded exponential backoff and jitter.
 * - `logout()` ends the session. It does NOT revoke access tokens already issued: they stay valid
 *   until they expire (seed: "Logout does not revoke issued access tokens"). The client forgets
 *   them, so nothing it holds can be used after logout.
 * - Credentials come from `readSecret` (an environment variable or a 0600 file); every password,
 *   session token and access token is registered with the redaction layer when it is read.
 */
import { readSecret } from '../config/secrets.ts'
import { requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { AuthError, BadInputError, HttpError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { sendRequest, type HttpRequest, type HttpResponse } from '../core/http.ts'
import { retry, type RetryOptions } from '../core/retry.ts'
import { requestAccessToken, requestLogout, requestSession, SessionRejectedError, type ManagerSession } from './manager-api.ts'

export interface ManagerClientOptions {
  /** Base URL of the manager (the auth API lives under /api/v1/auth): https://, or http:// on loopback. */
  url: string
  /** Accept http:// to a host that is not loopback (`manager.allowInsecureHttp`); warns at every client start. */
  allowInsecureHttp?: boolean
  email: string
  /** Reads the password (through `readSecret`, which registers it); called once, at the first login. */
  password: () => string
  /** Retries of 5xx answers and network failures (default 4 attempts, 200 ms base, 5 s cap). */
  retry?: RetryOptions
  /** Renew a token this many seconds before it expires (default 60; at most half its lifetime). */
  renewBeforeSeconds?: number
  /** Clock in milliseconds (tests move it instead of sleeping). */
  now?: () => number
  timeoutMs?: number
}

/** What a token grants, without the token (for reports and `svcops auth check`). */
export interface AccessGrant {
  requested: string[]
  scopes: string[]
  expiresIn: number
  expiresAt: Date
  sessionExpiresAt: Date
}

interface CachedToken {
  token: string
  scopes: string[]
  expiresIn: number
  expiresAt: number
  renewAt: number
}

// A session this close to `expires_at` is not used for another exchange; the client logs in again.
const SESSION_MARGIN_MS = 5_000

function isTransient(error: unknown): boolean {
  return error instanceof HttpError && (error.status === undefined || error.status >= 500)
}

function isUnauthorized(value: unknown): boolean {
  return !!value && typeof value === 'object' && 'status' in value && value.status === 401
}

function normalizeScopes(scopes: string[]): string[] {
  const list = [...new Set(scopes.flatMap((s) => s.split(/\s+/)).filter(Boolean))]
  if (list.length === 0)
    throw new BadInputError('scopes: the list is empty; expected at least one scope, like urn:svc:recorder:content:read.')
  return list
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
}

/**
 * The seed's base URL is https://. Plain http:// sends the operator's password and every token in
 * clear text, so it is accepted only on loopback (the lab) or when the environment says so on
 * purpose — and then every run says so.
 */
export function assertManagerUrl(url: string, allowInsecureHttp: boolean): void {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new BadInputError(`manager.url: '${url}' is not a URL; expected https://<manager-host>.`)
  }
  if (parsed.username || parsed.password)
    throw new BadInputError(
      'manager.url: carries a user name or password; expected https://<manager-host> (the password belongs in manager.password).',
    )
  if (parsed.protocol === 'https:' || (parsed.protocol === 'http:' && isLoopback(parsed.hostname))) return
  if (parsed.protocol === 'http:' && allowInsecureHttp) {
    events.warn(
      `manager.url ${parsed.origin} is plain http:// (manager.allowInsecureHttp: true): the password and tokens cross the network unencrypted.`,
    )
    return
  }
  throw new BadInputError(
    `manager.url: '${parsed.origin}' is not https://; expected https://<manager-host> (plain http:// only on loopback, or with manager.allowInsecureHttp: true).`,
  )
}

/** A manager session with cached, self-renewing access tokens. */
export class ManagerClient {
  /** Counters for reports and tests: how many logins, token exchanges and logouts this client made. */
  readonly stats = { logins: 0, exchanges: 0, logouts: 0 }
  private session: ManagerSession | undefined
  private pendingLogin: Promise<ManagerSession> | undefined
  private tokens: CachedToken[] = []
  private password: string | undefined
  private readonly now: () => number

  private readonly options: ManagerClientOptions

  constructor(options: ManagerClientOptions) {
    assertManagerUrl(options.url, options.allowInsecureHttp ?? false)
    this.options = options
    this.now = options.now ?? Date.now
  }

  get url(): string {
    return this.options.url
  }

  get email(): string {
    return this.options.email
  }

  /** An access token carrying at least `scopes`; cached and renewed before expiry. Throws AuthError naming missing scopes. */
  async accessToken(scopes: string[]): Promise<string> {
    return (await this.obtain(normalizeScopes(scopes))).token
  }

  /** Like `accessToken`, but returns what was granted and until when, never the token. */
  async describeGrant(scopes: string[]): Promise<AccessGrant> {
    const requested = normalizeScopes(scopes)
    const cached = await this.obtain(requested)
    return {
      requested,
      scopes: cached.scopes,
      expiresIn: cached.expiresIn,
      expiresAt: new Date(cached.expiresAt),
      sessionExpiresAt: new Date(this.session?.expiresAt ?? cached.expiresAt),
    }
  }

  /**
   * Calls `fn` with a bearer token for `scopes`. When the resource server answers 401 (`fn` returns
   * or throws something with `status: 401`), the client re-authenticates once — ends the old session,
   * logs in, exchanges a new token — and calls `fn` again; a second 401 is returned/thrown as is.
   */
  async withBearer<T>(scopes: string[], fn: (token: string) => Promise<T>): Promise<T> {
    const wanted = normalizeScopes(scopes)
    const first = await this.obtain(wanted)
    try {
      const result = await fn(first.token)
      if (!isUnauthorized(result)) return result
    } catch (error) {
      if (!isUnauthorized(error)) throw error
    }
    events.info(`A resource server refused the access token of '${this.options.email}' (401); authenticating again once.`)
    // Not left open until it expires; a failure to end it must not stop the retry.
    await this.logout().catch((error: unknown) =>
      events.warn(`Ending the old manager session failed: ${error instanceof Error ? error.message : String(error)}`),
    )
    const second = await this.obtain(wanted, { freshSession: true })
    return fn(second.token)
  }

  /** Sends `request` with `Authorization: Bearer ...` for `scopes`, re-authenticating once on a 401. */
  authorizedRequest(scopes: string[], request: HttpRequest): Promise<HttpResponse> {
    return this.withBearer(scopes, (token) =>
      sendRequest({ ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } }),
    )
  }

  /**
   * Ends the session at the manager and forgets every cached token. This does not revoke access
   * tokens already issued; they stay valid until `exp`. Safe to call twice, or without a session.
   */
  async logout(): Promise<void> {
    const session = this.session
    this.session = undefined
    this.tokens = []
    if (!session) return
    const ended = await this.withRetries('logout', () => requestLogout(this.options.url, session, this.options.timeoutMs))
    this.stats.logouts += 1
    if (!ended)
      events.warn(`The manager at ${this.options.url} said the session of '${this.options.email}' was no longer valid at logout (400).`)
  }

  private async obtain(scopes: string[], options: { freshSession?: boolean } = {}): Promise<CachedToken> {
    const now = this.now()
    const cached = this.tokens.find((t) => now < t.renewAt && scopes.every((s) => t.scopes.includes(s)))
    if (cached) return cached
    let session = await this.currentSession(options.freshSession ?? false)
    let answer
    try {
      answer = await this.withRetries('token exchange', () => requestAccessToken(this.options.url, session, scopes, this.options.timeoutMs))
    } catch (error) {
      if (!(error instanceof SessionRejectedError)) throw error
      // The session ended at the manager (expired early, logged out elsewhere): one new login.
      session = await this.currentSession(true)
      answer = await this.withRetries('token exchange', () => requestAccessToken(this.options.url, session, scopes, this.options.timeoutMs))
    }
    this.stats.exchanges += 1
    const granted = answer.scope.split(/\s+/).filter(Boolean)
    const missing = scopes.filter((s) => !granted.includes(s))
    if (missing.length > 0) {
      throw new AuthError(
        `The manager user '${this.options.email}' lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (granted: ${granted.join(', ') || 'none'}).`,
        missing,
        `Ask the manager's administrator to grant ${missing.join(' ')} to ${this.options.email}.`,
      )
    }
    const lifetimeMs = answer.expires_in * 1000
    const renewBeforeMs = Math.min((this.options.renewBeforeSeconds ?? 60) * 1000, lifetimeMs / 2)
    const token: CachedToken = {
      token: answer.access_token,
      scopes: granted,
      expiresIn: answer.expires_in,
      expiresAt: now + lifetimeMs,
      renewAt: now + lifetimeMs - renewBeforeMs,
    }
    this.tokens = [...this.tokens.filter((t) => now < t.renewAt), token]
    return token
  }

  private async currentSession(fresh: boolean): Promise<ManagerSession> {
    if (fresh) this.session = undefined
    if (this.session && this.now() < this.session.expiresAt - SESSION_MARGIN_MS) return this.session
    this.session = undefined
    this.pendingLogin ??= this.login().finally(() => {
      this.pendingLogin = undefined
    })
    return this.pendingLogin
  }

  private async login(): Promise<ManagerSession> {
    this.password ??= this.options.password()
    const password = this.password
    const session = await this.withRetries('login', () =>
      requestSession(this.options.url, this.options.email, password, this.options.timeoutMs),
    )
    this.stats.logins += 1
    this.session = session
    return session
  }

  private async withRetries<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const attempts = this.options.retry?.attempts ?? 4
    try {
      return await retry(`manager ${what}`, fn, { attempts, ...this.options.retry, shouldRetry: isTransient })
    } catch (error) {
      if (!isTransient(error) || !(error instanceof HttpError)) throw error
      throw new HttpError(
        `${error.message.replace(/\.$/, '')}, ${attempts} attempts in a row.`,
        error.status,
        `Check the manager's health (lab: svcops lab status) and retry.`,
      )
    }
  }
}

/** A client for the manager of environment `env` (`svcops:manager`), password read through `readSecret`. */
export function managerClientFor(
  env: Environment,
  options: Partial<Omit<ManagerClientOptions, 'url' | 'email' | 'password'>> = {},
): ManagerClient {
  const manager = requireSection(env, 'manager')
  return new ManagerClient({
    ...options,
    url: manager.url,
    allowInsecureHttp: manager.allowInsecureHttp,
    email: manager.email,
    password: () => readSecret(manager.password, 'manager.password'),
  })
}
