/**
 * Revisions of the manager's authentication API (the seed's "Authentication API" versioning).
 * The auth client and the lab's emulator read token lifetimes and documented rules from here.
 */

/** Revisions of the auth API, oldest first. */
export const AUTH_REVISIONS = ['1.4.1', '1.6.1', '1.6.2'] as const
export type AuthRevision = (typeof AUTH_REVISIONS)[number]

export interface AuthRevisionFacts {
  revision: AuthRevision
  /** Example `expires_in` of an access token, in seconds. */
  tokenLifetimeSeconds: number
  /** Scopes are filtered to the user's permissions; URN-style names are recommended. */
  scopeRulesDocumented: boolean
  /** 400 on logout, 401 on login and token, 500 on backend or state errors. */
  errorCodesDocumented: boolean
  /** Logout revokes the session but not access tokens already issued. */
  logoutKeepsTokensDocumented: boolean
  /** A verbatim fragment of the seed. */
  seed: string
}

/** The path prefix of the auth API in every revision. */
export const AUTH_API_PREFIX = '/api/v1/auth'

const RULES_FROM_1_6_1 =
  'the scope resolution and scope naming rules, the documented error codes and the note that logout does not revoke access tokens are given from 1.6.1'

export const AUTH_API: readonly AuthRevisionFacts[] = [
  {
    revision: '1.4.1',
    tokenLifetimeSeconds: 300,
    scopeRulesDocumented: false,
    errorCodesDocumented: false,
    logoutKeepsTokensDocumented: false,
    seed: 'the example token lifetime is 300 seconds in 1.4.1',
  },
  {
    revision: '1.6.1',
    tokenLifetimeSeconds: 3600,
    scopeRulesDocumented: true,
    errorCodesDocumented: true,
    logoutKeepsTokensDocumented: true,
    seed: `3600 in 1.6.1; ${RULES_FROM_1_6_1}`,
  },
  {
    revision: '1.6.2',
    tokenLifetimeSeconds: 3600,
    scopeRulesDocumented: true,
    errorCodesDocumented: true,
    logoutKeepsTokensDocumented: true,
    seed: 'Revisions of this API are numbered 1.4.1, 1.6.1 and 1.6.2 (latest).',
  },
]

/** The documented error statuses of the auth API (from 1.6.1). */
export const AUTH_ERRORS = [
  { status: 400, endpoint: 'POST /api/v1/auth/logout', condition: 'invalid session parameters' },
  { status: 401, endpoint: 'POST /api/v1/auth/login', condition: 'authentication failure (invalid credentials)' },
  { status: 401, endpoint: 'POST /api/v1/auth/token', condition: 'authentication failure (invalid session)' },
  { status: 500, endpoint: 'login, token, logout', condition: 'backend or state error' },
] as const

/** The facts of one revision. */
export function authRevisionFacts(revision: AuthRevision): AuthRevisionFacts {
  const facts = AUTH_API.find((r) => r.revision === revision)
  if (!facts) throw new Error(`No auth API revision '${revision}' in the catalog.`)
  return facts
}
