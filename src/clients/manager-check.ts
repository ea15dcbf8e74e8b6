/** The work of `svcops auth check`: one login, one token exchange, one logout; the report never holds a token. */
import { requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { managerClientFor } from './manager-client.ts'

export interface AuthCheckReport {
  manager: string
  apiRevision: string
  email: string
  requested: string[]
  granted: string[]
  expiresIn: number
  tokenExpiresAt: string
  sessionExpiresAt: string
  loggedOut: boolean
}

/**
 * Checks that the environment's manager accepts its credentials and grants `scopes` (default: the
 * recording scopes of the environment, or the product defaults). Logs out even when the check fails.
 */
export async function checkAuth(env: Environment, scopes?: string[]): Promise<AuthCheckReport> {
  const manager = requireSection(env, 'manager')
  const recording = env.recording?.scopes ?? { read: 'urn:svc:recorder:content:read', write: 'urn:svc:recorder:content:write' }
  const client = managerClientFor(env)
  try {
    const grant = await client.describeGrant(scopes && scopes.length > 0 ? scopes : [recording.read, recording.write])
    await client.logout()
    return {
      manager: manager.url,
      apiRevision: manager.apiRevision,
      email: manager.email,
      requested: grant.requested,
      granted: grant.scopes,
      expiresIn: grant.expiresIn,
      tokenExpiresAt: grant.expiresAt.toISOString(),
      sessionExpiresAt: grant.sessionExpiresAt.toISOString(),
      loggedOut: true,
    }
  } finally {
    // Best effort after a failure: the check's own error is the one to report.
    await client.logout().catch(() => undefined)
  }
}
