import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPostgres, type PostgresCluster } from '../../src/lab/lab-postgres.ts'
import {
  createServiceDatabase,
  READ,
  startRecordingHost,
  startTestIssuer,
  stopAllServices,
  type TestIssuer,
  WRITE,
} from './recording-fixture.ts'

type Host = Awaited<ReturnType<typeof startRecordingHost>>

let pg: PostgresCluster
let issuer: TestIssuer
let host: Host
let both: string

beforeAll(async () => {
  ;[pg, issuer] = await Promise.all([startPostgres({ fsync: false }), startTestIssuer()])
  host = await startRecordingHost({
    version: '2.1.0',
    pg,
    database: await createServiceDatabase(pg),
    issuer,
    edit: (config) => (config.writeRateLimit = 50),
  })
  both = await issuer.sign({ scope: `${READ} ${WRITE}` })
}, 60_000)

afterAll(async () => {
  await stopAllServices()
  await host?.cleanup()
  await issuer?.close()
  await pg?.stop()
})

function call(path: string, init: { method?: string; token?: string; body?: unknown; raw?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = {}
  if (init.token) headers.authorization = `Bearer ${init.token}`
  if (init.body !== undefined || init.raw !== undefined) headers['content-type'] = 'application/json'
  return fetch(`${host.url}${path}`, {
    method: init.method ?? 'GET',
    headers,
    ...(init.raw !== undefined ? { body: init.raw } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  })
}

const valid = { channelName: 'news', title: 'Morning show', startTime: 1_700_000_000, stopTime: 1_700_003_600 }

describe('recording service API over HTTP', () => {
  it('answers the health check with 200 and no body, without a token', async () => {
    const response = await call('/')
    expect(response.status).toBe(200)
    expect(await response.text()).toBe('')
  })

  it('refuses content without a token, with a foreign or expired token (401), and without the scope (403)', async () => {
    const other = await startTestIssuer()
    try {
      expect((await call('/api/v1/content?limit=5')).status).toBe(401)
      expect((await call('/api/v1/content?limit=5', { token: 'not-a-jwt' })).status).toBe(401)
      // Same issuer URL claim would not help: the signature is checked against the service's JWKS.
      expect((await call('/api/v1/content?limit=5', { token: await other.sign({ scope: READ }) })).status).toBe(401)
      // Signed by the right manager, but for another application (aud): refused.
      expect(
        (await call('/api/v1/content?limit=5', { token: await issuer.sign({ scope: READ, audience: 'urn:svc:controller' }) })).status,
      ).toBe(401)
      const expired = await call('/api/v1/content?limit=5', { token: await issuer.sign({ scope: READ, expiresInSeconds: -60 }) })
      expect(expired.status).toBe(401)
      expect(await expired.json()).toEqual({ error: 'the access token has expired' })
      const readOnly = await issuer.sign({ scope: READ })
      expect((await call('/api/v1/content?limit=5', { token: readOnly })).status).toBe(200)
      const post = await call('/api/v1/content', { method: 'POST', token: readOnly, body: valid })
      expect(post.status).toBe(403)
      expect(await post.json()).toEqual({ error: `the access token lacks the scope ${WRITE}` })
      expect((await call('/api/v1/content?limit=5', { token: await issuer.sign({ scope: WRITE }) })).status).toBe(403)
    } finally {
      await other.close()
    }
  })

  it('creates a recording (201 with an id), stores its file, and lists it', async () => {
    const created = await call('/api/v1/content', { method: 'POST', token: both, body: valid })
    expect(created.status).toBe(201)
    const recording = (await created.json()) as Record<string, unknown>
    expect(recording).toMatchObject({ ...valid, location: 'main', duration: 3600, createdBy: 'tester@example.com' })
    expect(typeof recording.id).toBe('number')
    const file = join(host.root, 'var/opt/svc/recordings/main', `${String(recording.id)}.json`)
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ id: recording.id, title: 'Morning show' })
    const list = await call('/api/v1/content?limit=100', { token: both })
    expect(list.status).toBe(200)
    const body = (await list.json()) as { content: Record<string, unknown>[] }
    expect(body.content.map((item) => item.id)).toContain(recording.id)
    expect(host.log()).toMatch(new RegExp(`^\\S+Z INFO created recording ${String(recording.id)} on channel news$`, 'm'))
  })

  it('limits the list to `limit` items', async () => {
    for (let i = 0; i < 3; i++)
      expect((await call('/api/v1/content', { method: 'POST', token: both, body: { ...valid, title: `t${i}` } })).status).toBe(201)
    const list = (await (await call('/api/v1/content?limit=2', { token: both })).json()) as { content: unknown[] }
    expect(list.content).toHaveLength(2)
  })

  it.each(['0', '-1', 'abc', '1.5', '', '99999999999'])('answers 400 for limit=%j', async (limit) => {
    const response = await call(`/api/v1/content?limit=${limit}`, { token: both })
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: string }).error).toMatch(/^limit: expected an integer from 1 to 10000$/)
  })

  it.each([
    ['a missing field', { channelName: 'news', title: 't', startTime: 1 }, /^stopTime: /],
    ['an unknown field', { ...valid, owner: 'x' }, /^owner: unknown field$/],
    ['a string time', { ...valid, startTime: '1700000000' }, /^startTime: expected number/],
    ['a fractional time', { ...valid, stopTime: 1_700_003_600.5 }, /^stopTime: /],
    ['an empty title', { ...valid, title: '' }, /^title: /],
    ['a stop before the start', { ...valid, stopTime: valid.startTime }, /^stopTime: expected a time after startTime$/],
    ['an array body', [valid], /^\(body\): /],
  ])('answers 400 for %s and creates nothing', async (_name, body, message) => {
    const before = ((await (await call('/api/v1/content?limit=10000', { token: both })).json()) as { content: unknown[] }).content.length
    const response = await call('/api/v1/content', { method: 'POST', token: both, body })
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: string }).error).toMatch(message)
    const after = ((await (await call('/api/v1/content?limit=10000', { token: both })).json()) as { content: unknown[] }).content.length
    expect(after).toBe(before)
  })

  it('answers 400 for a body that is not JSON', async () => {
    const response = await call('/api/v1/content', { method: 'POST', token: both, raw: '{"channelName":' })
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({ error: 'the body is not valid JSON' })
  })

  it('answers 404 and 405 for other paths and methods', async () => {
    expect((await call('/api/v1/other', { token: both })).status).toBe(404)
    expect((await call('/api/v1/content', { method: 'DELETE', token: both })).status).toBe(405)
  })

  it('answers 429 beyond the configured write rate limit', async () => {
    // A host of its own with a limit of 3 per second: 20 concurrent writes would have to spread over
    // 7 seconds to stay under it, so the test holds however loaded the machine is.
    const limited = await startRecordingHost({
      version: '2.1.0',
      pg,
      database: await createServiceDatabase(pg),
      issuer,
      edit: (config) => (config.writeRateLimit = 3),
    })
    try {
      const post = (i: number) =>
        fetch(`${limited.url}/api/v1/content`, {
          method: 'POST',
          headers: { authorization: `Bearer ${both}`, 'content-type': 'application/json' },
          body: JSON.stringify({ ...valid, title: `burst ${i}` }),
        })
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i)))
      const statuses = answers.map((answer) => answer.status)
      expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(0)
      expect(statuses.filter((status) => status === 201).length).toBeGreaterThan(0)
      expect(statuses.every((status) => status === 201 || status === 429)).toBe(true)
      expect(answers.find((answer) => answer.status === 429)?.headers.get('retry-after')).toBe('1')
    } finally {
      await limited.cleanup()
    }
  })

  it('writes timestamped, levelled log lines to var/log/svc/recording.log', () => {
    const file = join(host.root, 'var/log/svc/recording.log')
    expect(existsSync(file)).toBe(true)
    const lines = readFileSync(file, 'utf8').trim().split('\n')
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARN|ERROR|FATAL) \S/)
    expect(lines[0]).toMatch(/ INFO recording service 2\.1\.0 starting/)
  })
})
