import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ManagerClient, managerClientFor, type ManagerClientOptions } from '../../src/clients/manager-client.ts'
import { parseEnvironment } from '../../src/config/load.ts'
import { AuthError, BadInputError, HttpError, ProtocolError } from '../../src/core/errors.ts'
import { collect } from '../../src/core/events.ts'
import type { ManagerEmulator } from '../../src/lab/manager/server.ts'
import { movableClock, OPERATOR, READ, READER, startTestManager, WRITE } from './helpers.ts'
import { startResourceServer } from './resource.ts'

const fastRetry = { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 }

describe('manager client against the emulator', () => {
  const clock = movableClock()
  let manager: ManagerEmulator
  const clients: ManagerClient[] = []

  beforeAll(async () => {
    manager = await startTestManager({ now: clock.now, tokenLifetimeSeconds: 120, sessionLifetimeSeconds: 300 })
  })
  afterAll(async () => {
    await manager?.close()
  })
  afterEach(async () => {
    manager.setFault(undefined)
    await Promise.all(clients.splice(0).map((c) => c.logout().catch(() => undefined)))
  })

  function clientFor(user: { email: string; password: string } = OPERATOR, options: Partial<ManagerClientOptions> = {}): ManagerClient {
    const client = new ManagerClient({
      url: manager.url,
      email: user.email,
      password: () => user.password,
      now: clock.now,
      retry: fastRetry,
      ...options,
    })
    clients.push(client)
    return client
  }

  it('logs in, exchanges the session for a bearer token with the requested scopes, and logs out', async () => {
    const client = clientFor()
    const token = await client.accessToken([READ, WRITE])
    const jwks = createRemoteJWKSet(new URL(`${manager.url}/.well-known/jwks.json`))
    const { payload } = await jwtVerify(token, jwks, { issuer: manager.url, currentDate: new Date(clock.now()) })
    expect(payload.scope).toBe(`${READ} ${WRITE}`)
    const grant = await client.describeGrant([READ])
    expect(grant).toMatchObject({ scopes: [READ, WRITE], expiresIn: 120 })
    await client.logout()
    expect(client.stats).toEqual({ logins: 1, exchanges: 1, logouts: 1 })
  })

  it('caches the token and renews it before it expires, from the same session', async () => {
    const client = clientFor()
    const first = await client.accessToken([READ])
    expect(await client.accessToken([READ])).toBe(first)
    clock.advance(59) // renewal starts 60 s before expiry (at most half the lifetime): not yet
    expect(await client.accessToken([READ])).toBe(first)
    clock.advance(2)
    const renewed = await client.accessToken([READ])
    expect(renewed).not.toBe(first)
    expect(client.stats).toMatchObject({ logins: 1, exchanges: 2 })
  })

  it('logs in again when the session expired', async () => {
    const client = clientFor()
    await client.accessToken([READ])
    clock.advance(301)
    await client.accessToken([READ])
    expect(client.stats).toMatchObject({ logins: 2, exchanges: 2 })
  })

  it('logs in again once when the manager rejects the session at token exchange', async () => {
    // The client's clock lags a minute: it still trusts the session when the manager has ended it.
    const client = clientFor(OPERATOR, { now: () => clock.now() - 60_000 })
    await client.accessToken([READ])
    clock.advance(301)
    await expect(client.accessToken([WRITE])).resolves.toEqual(expect.any(String))
    expect(client.stats).toMatchObject({ logins: 2, exchanges: 2 })
  })

  it('fails with AuthError naming the user, never the password, for a wrong password', async () => {
    const client = clientFor({ email: OPERATOR.email, password: 'definitely-wrong-password' })
    const error = await client.accessToken([READ]).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(AuthError)
    expect((error as Error).message).toBe(`The manager at ${manager.url} refused the credentials of '${OPERATOR.email}' (401 at login).`)
    expect((error as Error).message).not.toContain('definitely-wrong-password')
  })

  it('fails with AuthError listing the scopes the user lacks', async () => {
    const client = clientFor(READER)
    const error = await client.accessToken([READ, WRITE]).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(AuthError)
    expect((error as AuthError).missingScopes).toEqual([WRITE])
    expect((error as Error).message).toBe(`The manager user '${READER.email}' lacks the scope ${WRITE} (granted: ${READ}).`)
    await expect(client.accessToken([READ])).resolves.toEqual(expect.any(String))
  })

  it('retries 500 answers with backoff and succeeds when the backend recovers', async () => {
    const log = collect()
    manager.setFault({ endpoints: ['login'], count: 2 })
    const client = clientFor()
    await expect(client.accessToken([READ])).resolves.toEqual(expect.any(String))
    log.stop()
    const retries = log.events.filter((e) => e.kind === 'retry')
    expect(retries.map((e) => (e.kind === 'retry' ? e.what : ''))).toEqual(['manager login', 'manager login'])
  })

  it('gives up after the bounded retries with a clear error when the backend keeps failing', async () => {
    manager.setFault({})
    const client = clientFor()
    const error = await client.accessToken([READ]).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(HttpError)
    expect((error as HttpError).status).toBe(500)
    expect((error as Error).message).toBe(
      `The manager at ${manager.url} answered 500 at login (a backend or state error), 3 attempts in a row.`,
    )
  })

  it('re-authenticates once when a resource server answers 401, and only once', async () => {
    const resource = await startResourceServer(manager.url, clock.now)
    try {
      const client = clientFor()
      resource.rejectNext = 1
      const ok = await client.authorizedRequest([READ], { peer: 'recording-service', method: 'GET', url: `${resource.url}/api/v1/content` })
      expect(ok.status).toBe(200)
      expect(resource.calls).toBe(2)
      // Re-authentication: the old session ended, a new login, a new token.
      expect(client.stats).toEqual({ logins: 2, exchanges: 2, logouts: 1 })

      resource.rejectNext = 5
      const refused = await client.authorizedRequest([READ], {
        peer: 'recording-service',
        method: 'GET',
        url: `${resource.url}/api/v1/content`,
      })
      expect(refused.status).toBe(401)
      expect(resource.calls).toBe(4)
    } finally {
      await resource.close()
    }
  })

  it('keeps a token usable at a resource server after logout (logout does not revoke it)', async () => {
    const resource = await startResourceServer(manager.url, clock.now)
    try {
      const client = clientFor()
      const token = await client.accessToken([READ])
      await client.logout()
      const response = await fetch(`${resource.url}/`, { headers: { authorization: `Bearer ${token}` } })
      expect(response.status).toBe(200)
    } finally {
      await resource.close()
    }
  })
})

describe('manager client credentials and answers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-manager-client-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const envWith = (url: string, password: Record<string, string>) =>
    parseEnvironment({ 'svcops:manager': { url, email: OPERATOR.email, password } }, 'test', join(dir, 'Pulumi.test.yaml'))

  it('reads the password from a 0600 file and refuses a group-readable one', async () => {
    const manager = await startTestManager()
    try {
      const file = join(dir, 'password')
      writeFileSync(file, `${OPERATOR.password}\n`, { mode: 0o600 })
      const client = managerClientFor(envWith(manager.url, { file }), { retry: fastRetry })
      await expect(client.accessToken([READ])).resolves.toEqual(expect.any(String))
      await client.logout()

      chmodSync(file, 0o640)
      const refused = await managerClientFor(envWith(manager.url, { file }))
        .accessToken([READ])
        .catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(BadInputError)
      expect((refused as Error).message).toContain('mode 0640')
    } finally {
      await manager.close()
    }
  })

  it('reads the password from an environment variable', async () => {
    const manager = await startTestManager()
    try {
      process.env.SVCOPS_TEST_MANAGER_PASSWORD = OPERATOR.password
      const client = managerClientFor(envWith(manager.url, { env: 'SVCOPS_TEST_MANAGER_PASSWORD' }))
      await expect(client.accessToken([READ])).resolves.toEqual(expect.any(String))
      await client.logout()
    } finally {
      delete process.env.SVCOPS_TEST_MANAGER_PASSWORD
      await manager.close()
    }
  })

  it('rejects an answer of the wrong shape with a ProtocolError that does not echo the secret in it', async () => {
    const secret = 'leaky-session-token-0123456789'
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ session_id: 42, session_token: secret, verified_at: 'yesterday', expires_at: '2030-01-01T00:00:00+00:00' }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const error = await new ManagerClient({ url, email: OPERATOR.email, password: () => 'x-password' })
        .accessToken([READ])
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(ProtocolError)
      expect((error as Error).message).toMatch(/^The manager login answer does not have the documented shape: session_id: .*verified_at: /)
      expect((error as Error).message).not.toContain(secret)
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
