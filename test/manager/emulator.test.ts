import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ManagerEmulator } from '../../src/lab/manager/server.ts'
import { ADMIN_TOKEN, login, movableClock, OPERATOR, post, READ, READER, startTestManager, WRITE } from './helpers.ts'

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$/

describe('manager emulator: the three auth endpoints over HTTP', () => {
  const clock = movableClock()
  let manager: ManagerEmulator

  beforeAll(async () => {
    manager = await startTestManager({ now: clock.now, sessionLifetimeSeconds: 600 })
  })
  afterAll(async () => {
    await manager?.close()
  })

  const token = (s: { session_id: string; session_token: string }, scope: string) =>
    post(manager.url, '/api/v1/auth/token', { session_id: s.session_id, session_token: s.session_token, grant_type: 'session', scope })

  it('runs the full flow: login, token exchange, logout with the documented fields', async () => {
    const session = await login(manager.url)
    expect(Object.keys(session).sort()).toEqual(['expires_at', 'session_id', 'session_token', 'verified_at'])
    expect(session.verified_at).toMatch(ISO_WITH_OFFSET)
    expect(session.expires_at).toMatch(ISO_WITH_OFFSET)
    expect(Date.parse(session.expires_at) - Date.parse(session.verified_at)).toBe(600_000)

    const answer = await token(session, `${READ} ${WRITE}`)
    expect(answer.status).toBe(200)
    expect(Object.keys(answer.body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type'])
    expect(answer.body).toMatchObject({ scope: `${READ} ${WRITE}`, expires_in: 3600, token_type: 'bearer' })

    const out = await post(manager.url, '/api/v1/auth/logout', { session_id: session.session_id, session_token: session.session_token })
    expect(out).toEqual({ status: 200, body: { status: 'Ok' } })
  })

  it('signs ES256 tokens with a kid that verify against the published JWKS', async () => {
    const session = await login(manager.url)
    const { body } = await token(session, READ)
    const jwt = body.access_token as string
    expect(decodeProtectedHeader(jwt)).toMatchObject({ alg: 'ES256', kid: expect.any(String) as string })
    const jwks = createRemoteJWKSet(new URL(`${manager.url}/.well-known/jwks.json`))
    const { payload } = await jwtVerify(jwt, jwks, { issuer: manager.url, currentDate: new Date(clock.now()) })
    expect(payload).toMatchObject({ sub: OPERATOR.email, sid: session.session_id, scope: READ })
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(3600)
    expect(payload.jti).toEqual(expect.any(String))
  })

  it('answers 401 at login for a wrong password and for an unknown user', async () => {
    const wrong = await post(manager.url, '/api/v1/auth/login', { email: OPERATOR.email, password: 'not-the-password' })
    expect(wrong.status).toBe(401)
    expect(wrong.body.error).toBe('invalid_credentials')
    const unknown = await post(manager.url, '/api/v1/auth/login', { email: 'nobody@lab.test', password: OPERATOR.password })
    expect(unknown.status).toBe(401)
  })

  it('grants only the permitted subset of the requested scopes', async () => {
    const session = await login(manager.url, READER)
    const answer = await token(session, `${READ} ${WRITE} urn:other:app:thing:read`)
    expect(answer.status).toBe(200)
    expect(answer.body.scope).toBe(READ)
    const none = await token(session, WRITE)
    expect(none.body.scope).toBe('')
  })

  it('answers 401 at token for unknown, wrong-token, logged-out and expired sessions', async () => {
    const session = await login(manager.url)
    expect((await token({ session_id: 'ses_unknown', session_token: session.session_token }, READ)).status).toBe(401)
    expect((await token({ session_id: session.session_id, session_token: 'wrong-token' }, READ)).status).toBe(401)

    await post(manager.url, '/api/v1/auth/logout', { session_id: session.session_id, session_token: session.session_token })
    const afterLogout = await token(session, READ)
    expect(afterLogout.status).toBe(401)
    expect(afterLogout.body.error).toBe('invalid_session')

    const other = await login(manager.url)
    expect((await token(other, READ)).status).toBe(200)
    clock.advance(601)
    expect((await token(other, READ)).status).toBe(401)
  })

  it('answers 400 at logout for bad session parameters', async () => {
    const session = await login(manager.url)
    expect((await post(manager.url, '/api/v1/auth/logout', { session_id: session.session_id, session_token: 'wrong' })).status).toBe(400)
    expect(
      (await post(manager.url, '/api/v1/auth/logout', { session_id: 'ses_unknown', session_token: session.session_token })).status,
    ).toBe(400)
    expect((await post(manager.url, '/api/v1/auth/logout', { session_id: session.session_id })).status).toBe(400)
    expect(
      (await post(manager.url, '/api/v1/auth/logout', { session_id: session.session_id, session_token: session.session_token })).status,
    ).toBe(200)
    // A second logout of the same session names no live session any more.
    expect(
      (await post(manager.url, '/api/v1/auth/logout', { session_id: session.session_id, session_token: session.session_token })).status,
    ).toBe(400)
  })

  it.each([
    ['not JSON', '/api/v1/auth/login', '{"email": ', 'not valid JSON'],
    ['an empty body', '/api/v1/auth/login', '', 'empty'],
    ['a JSON array', '/api/v1/auth/login', '[]', 'JSON object'],
    ['a missing password', '/api/v1/auth/login', { email: OPERATOR.email }, 'password'],
    ['a number as password', '/api/v1/auth/login', { email: OPERATOR.email, password: 42 }, 'password'],
    ['an e-mail that is not one', '/api/v1/auth/login', { email: 'operator', password: 'x' }, 'email'],
    [
      'another grant type',
      '/api/v1/auth/token',
      { session_id: 's', session_token: 't', grant_type: 'password', scope: READ },
      'grant_type',
    ],
    ['a missing scope', '/api/v1/auth/token', { session_id: 's', session_token: 't', grant_type: 'session' }, 'scope'],
    ['a session id of the wrong type', '/api/v1/auth/logout', { session_id: 7, session_token: 't' }, 'session_id'],
  ])('answers 400 with a clear message for %s', async (_what, path, body, mentions) => {
    const answer = await post(manager.url, path, body)
    expect(answer.status).toBe(400)
    expect(answer.body.error).toBe('invalid_request')
    expect(answer.body.message).toContain(mentions)
  })

  it('answers 415 for another content type, 405 for GET and 404 for unknown paths, and keeps serving', async () => {
    expect((await post(manager.url, '/api/v1/auth/login', 'email=a', { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(
      415,
    )
    expect((await fetch(`${manager.url}/api/v1/auth/login`)).status).toBe(405)
    expect((await post(manager.url, '/api/v1/auth/nothing', {})).status).toBe(404)
    expect((await post(manager.url, '/api/v1/auth/login', 'x'.repeat(70_000))).status).toBe(413)
    await expect(login(manager.url)).resolves.toHaveProperty('session_id')
  })

  it('answers 500 on every endpoint while the fault switch is on, and recovers when it is off', async () => {
    const session = await login(manager.url)
    const flip = (enabled: boolean, token = ADMIN_TOKEN) =>
      post(manager.url, '/lab/fault', { enabled }, { 'content-type': 'application/json', authorization: `Bearer ${token}` })
    // Anything on the machine reaches a loopback port: without the lab's admin token the switch does nothing.
    const anonymous = await post(manager.url, '/lab/fault', { enabled: true })
    expect(anonymous).toEqual({
      status: 401,
      body: { error: 'unauthorized', message: "The fault switch needs the lab's admin token as a bearer token." },
    })
    expect((await flip(true, 'guessed-token')).status).toBe(401)
    expect((await token(session, READ)).status).toBe(200)
    expect((await flip(true)).status).toBe(200)
    expect((await post(manager.url, '/api/v1/auth/login', { email: OPERATOR.email, password: OPERATOR.password })).status).toBe(500)
    expect((await token(session, READ)).status).toBe(500)
    expect(
      (await post(manager.url, '/api/v1/auth/logout', { session_id: session.session_id, session_token: session.session_token })).status,
    ).toBe(500)
    await flip(false)
    expect((await token(session, READ)).status).toBe(200)
  })

  it('keeps an access token valid after its session logged out', async () => {
    const session = await login(manager.url)
    const { body } = await token(session, READ)
    await post(manager.url, '/api/v1/auth/logout', { session_id: session.session_id, session_token: session.session_token })
    const jwks = createRemoteJWKSet(new URL(`${manager.url}/.well-known/jwks.json`))
    const { payload } = await jwtVerify(body.access_token as string, jwks, {
      issuer: manager.url,
      audience: 'urn:svc:recorder',
      currentDate: new Date(clock.now()),
    })
    expect(payload.scope).toBe(READ)
    expect(payload.aud).toBe('urn:svc:recorder')
  })
})

describe('manager emulator as API revision 1.4.1', () => {
  it('issues tokens that expire in 300 seconds', async () => {
    const manager = await startTestManager({ apiRevision: '1.4.1' })
    try {
      const session = await login(manager.url)
      const answer = await post(manager.url, '/api/v1/auth/token', {
        session_id: session.session_id,
        session_token: session.session_token,
        grant_type: 'session',
        scope: READ,
      })
      expect(answer.body.expires_in).toBe(300)
    } finally {
      await manager.close()
    }
  })
})
