/**
 * The lab manager's users and scopes, and what `lab up` reports about the manager: shared by lab.ts,
 * which starts the manager, and hosts-lab.ts, which creates recordings as its operator.
 */
import type { AuthRevision } from '../../releases/auth.ts'

/** The recording service's scopes, as the lab's users are granted them. */
export const LAB_SCOPES = { read: 'urn:svc:recorder:content:read', write: 'urn:svc:recorder:content:write' } as const

/** Users of the lab's manager: the operator the environment file uses, and a read-only user for tests. */
export const LAB_USERS = [
  { key: 'operator', email: 'operator@lab.svcops.test', scopes: [LAB_SCOPES.read, LAB_SCOPES.write] },
  { key: 'reader', email: 'reader@lab.svcops.test', scopes: [LAB_SCOPES.read] },
] as const

/** A lab user as `lab up` reports it: the password stays in its 0600 file. */
export interface LabUserInfo {
  email: string
  scopes: string[]
  passwordFile: string
}

/** The lab's running manager emulator, as `lab up` reports it. */
export interface LabManager {
  url: string
  apiRevision: AuthRevision
  users: Record<(typeof LAB_USERS)[number]['key'], LabUserInfo>
}
