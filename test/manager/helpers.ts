import { hashPassword } from '../../src/lab/manager/passwords.ts'
import { startManagerEmulator, type ManagerEmulator, type ManagerEmulatorOptions } from '../../src/lab/manager/server.ts'

export const READ = 'urn:svc:recorder:content:read'
export const WRITE = 'urn:svc:recorder:content:write'
export const OPERATOR = { email: 'operator@lab.test', password: 'operator-known-password-7f3a', permissions: [READ, WRITE] }
/** The admin token the test emulators' fault switch answers to. */
export const ADMIN_TOKEN = 'lab-admin-token-for-tests-4b7e9d'
export const READER = { email: 'reader@lab.test', password: 'reader-known-password-91c2', permissions: [READ] }

/** An emulator with an operator (read + write) and a reader (read only), on a free loopback port. */
export async function startTestManager(options: Partial<ManagerEmulatorOptions> = {}): Promise<ManagerEmulator> {
  const users = await Promise.all(
    [OPERATOR, READER].map(async (u) => ({ email: u.email, passwordHash: await hashPassword(u.password), permissions: u.permissions })),
  )
  return startManagerEmulator({ users, recordIssued: true, adminToken: ADMIN_TOKEN, ...options })
}

/** Raw POST: `body` is sent as is when it is a string, else as JSON. */
export async function post(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) })
  const text = await response.text()
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }
}

/** Logs in and returns the session fields. */
export async function login(
  base: string,
  user: { email: string; password: string } = OPERATOR,
): Promise<{ session_id: string; session_token: string; verified_at: string; expires_at: string }> {
  const answer = await post(base, '/api/v1/auth/login', { email: user.email, password: user.password })
  if (answer.status !== 200) throw new Error(`login answered ${answer.status}`)
  return answer.body as { session_id: string; session_token: string; verified_at: string; expires_at: string }
}

/** A clock tests move forward instead of sleeping. */
export function movableClock(start = Date.now()): { now: () => number; advance: (seconds: number) => void } {
  let t = start
  return { now: () => t, advance: (seconds) => (t += seconds * 1000) }
}
