import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ManagerClient } from '../../src/clients/manager-client.ts'
import {
  extractRecordingList,
  RecordingClient,
  recordingClientFor,
  recordingSchema,
  type AccessTokenFunction,
} from '../../src/clients/recording-client.ts'
import { parseEnvironment } from '../../src/config/load.ts'
import type { ManagerEmulator } from '../../src/lab/manager/server.ts'
import { startPostgres, type PostgresCluster } from '../../src/lab/lab-postgres.ts'
import { AuthError, BadInputError, HttpError, ProtocolError } from '../../src/core/errors.ts'
import { parseAnswer } from '../../src/core/http.ts'
import {
  createServiceDatabase,
  READ,
  startRecordingHost,
  startTestIssuer,
  stopAllServices,
  WRITE,
  type TestIssuer,
} from '../lab/recording-fixture.ts'
import { OPERATOR, startTestManager } from '../manager/helpers.ts'

type Host = Awaited<ReturnType<typeof startRecordingHost>>

const fastRetry = { attempts: 2, baseDelayMs: 5, maxDelayMs: 20 }
const recording = { channelName: 'sport', title: 'Final', startTime: 1_700_000_000, stopTime: 1_700_005_400 }

let pg: PostgresCluster
let manager: ManagerEmulator
let issuer: TestIssuer
let v1: Host
let v2: Host
let managerClient: ManagerClient

const trustManager = (): { url: string; jwksUrl: string } => ({ url: manager.url, jwksUrl: `${manager.url}/.well-known/jwks.json` })

beforeAll(async () => {
  ;[pg, manager, issuer] = await Promise.all([startPostgres({ fsync: false }), startTestManager(), startTestIssuer()])
  const database = await createServiceDatabase(pg)
  // 1.5.0 answers the list as a bare array, 2.x as { "content": [...] }: the client takes both.
  v1 = await startRecordingHost({ version: '1.5.0', pg, database, issuer: trustManager() })
  v2 = await startRecordingHost({ version: '2.0.0', pg, database: await createServiceDatabase(pg), issuer: trustManager() })
  managerClient = new ManagerClient({ url: manager.url, email: OPERATOR.email, password: () => OPERATOR.password, retry: fastRetry })
}, 60_000)

afterAll(async () => {
  await managerClient?.logout()
  await stopAllServices()
  await Promise.all([v1?.cleanup(), v2?.cleanup()])
  await Promise.all([manager?.close(), issuer?.close()])
  await pg?.stop()
})

describe('recording client against the service, with tokens from the manager emulator', () => {
  it.each([
    ['1.5.0 (list as an array)', () => v1],
    ['2.0.0 (list as an object)', () => v2],
  ])('checks health, creates and lists recordings on %s', async (_name, host) => {
    const client = new RecordingClient({ url: host().url, auth: managerClient })
    expect(await client.health()).toMatchObject({ healthy: true, status: 200 })
    const created = await client.create(recording)
    expect(created).toMatchObject(recording)
    expect(created.id).toMatch(/^\d+$/)
    const listed = await client.list(50)
    expect(listed.map((item) => item.id)).toContain(created.id)
    expect(listed.find((item) => item.id === created.id)).toMatchObject(recording)
    expect(await client.list(1)).toHaveLength(1)
  })

  it('works with a plain token function too', async () => {
    const client = new RecordingClient({ url: v1.url, auth: (scopes) => managerClient.accessToken(scopes) })
    expect((await client.list(5)).length).toBeGreaterThan(0)
  })

  it('asks for a fresh token once when the service answers 401, then succeeds', async () => {
    const asked: { scopes: string[]; fresh: boolean }[] = []
    const auth: AccessTokenFunction = async (scopes, options) => {
      asked.push({ scopes, fresh: options?.fresh ?? false })
      // The first token is an expired one, as after a laptop slept through the token's lifetime.
      return options?.fresh ? managerClient.accessToken(scopes) : issuer.sign({ scope: READ, expiresInSeconds: -10 })
    }
    const client = new RecordingClient({ url: v1.url, auth })
    expect(Array.isArray(await client.list(3))).toBe(true)
    expect(asked).toEqual([
      { scopes: [READ], fresh: false },
      { scopes: [READ], fresh: true },
    ])
  })

  it('gives up after the second 401 with an AuthError that says what to check', async () => {
    // Tokens signed by a key the service does not trust are refused every time.
    const client = new RecordingClient({ url: v1.url, auth: () => issuer.sign({ scope: `${READ} ${WRITE}` }) })
    const error = await client.list(3).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(AuthError)
    expect((error as AuthError).message).toBe(
      `The recording service at ${v1.url} refused the access token for GET /api/v1/content?limit=3 (401): the access token is not valid.`,
    )
    expect((error as AuthError).hint).toMatch(/auth\.jwksUrl and auth\.issuer/)
  })

  it('re-authenticates through the manager client once on 401 and reports the second refusal', async () => {
    // A manager whose clock is two hours behind issues tokens that are already expired.
    const lagging = await startTestManager({ now: () => Date.now() - 2 * 3600_000 })
    const host = await startRecordingHost({
      version: '1.5.0',
      pg,
      database: await createServiceDatabase(pg),
      issuer: { url: lagging.url, jwksUrl: `${lagging.url}/.well-known/jwks.json` },
    })
    const client = new ManagerClient({ url: lagging.url, email: OPERATOR.email, password: () => OPERATOR.password, retry: fastRetry })
    try {
      const error = await new RecordingClient({ url: host.url, auth: client }).list(3).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(AuthError)
      expect((error as Error).message).toMatch(/\(401\): the access token has expired\.$/)
      expect(client.stats.logins).toBe(2)
    } finally {
      await host.cleanup()
      await lagging.close()
    }
  })

  it('turns a 403 into an AuthError naming the missing scope (a read-only token for a write)', async () => {
    const other = new RecordingClient({
      url: v1.url,
      auth: async (scopes) => (scopes.includes(WRITE) ? managerClient.accessToken([READ]) : managerClient.accessToken(scopes)),
    })
    const error = await other.create(recording).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(AuthError)
    expect((error as AuthError).missingScopes).toEqual([WRITE])
    expect((error as AuthError).message).toBe(
      `The recording service at ${v1.url} refused POST /api/v1/content (403): the token lacks the scope ${WRITE}.`,
    )
  })

  it('refuses bad input before sending anything', async () => {
    let asked = 0
    const client = new RecordingClient({ url: v1.url, auth: () => Promise.resolve(String(++asked)) })
    await expect(client.list(0)).rejects.toThrow(new BadInputError('limit: 0 is not allowed; expected an integer of at least 1.'))
    await expect(client.list(2.5)).rejects.toBeInstanceOf(BadInputError)
    await expect(client.create({ ...recording, stopTime: recording.startTime })).rejects.toThrow(
      /^stopTime: 1700000000 is not after startTime 1700000000; expected a later time\.$/,
    )
    await expect(client.create({ ...recording, extra: 1 } as typeof recording)).rejects.toThrow(/^extra: unknown field;/)
    await expect(client.create({ ...recording, startTime: 1.5 })).rejects.toThrow(/^startTime: expected an integer \(Unix seconds\);/)
    expect(asked).toBe(0)
  })

  it('reports the service error sentence of a 500 (recordings inaccessible)', async () => {
    const host = await startRecordingHost({
      version: '1.5.0',
      pg,
      database: await createServiceDatabase(pg),
      issuer: trustManager(),
      edit: (config) => (config.storage.path = '/nowhere'),
    })
    try {
      const error = await new RecordingClient({ url: host.url, auth: managerClient }).create(recording).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(HttpError)
      expect((error as HttpError).status).toBe(500)
      expect((error as Error).message).toMatch(
        /^POST \/api\/v1\/content at \S+ answered 500, expected 201: recordings inaccessible: cannot write recording file \S+\/nowhere\/main\/1\.json: no such file or directory \(ENOENT\)\.$/,
      )
    } finally {
      await host.cleanup()
    }
  })

  it('reports an unhealthy (503) and an unreachable service as unhealthy, without throwing', async () => {
    const host = await startRecordingHost({
      version: '2.1.0+unhealthy',
      pg,
      database: await createServiceDatabase(pg),
      issuer: trustManager(),
    })
    const client = new RecordingClient({ url: host.url, auth: managerClient })
    expect(await client.health()).toMatchObject({ healthy: false, status: 503, reason: 'GET / answered 503' })
    await host.cleanup()
    const gone = await client.health()
    expect(gone).toMatchObject({ healthy: false, status: null })
    expect(gone.reason).toMatch(/connection refused/)
  })

  it('builds a client from an environment with its configured scopes and refuses an unknown host', () => {
    const env = parseEnvironment(
      {
        'svcops:recording': {
          version: '1.5.0',
          scopes: { read: 'urn:acme:rec:content:read', write: 'urn:acme:rec:content:write' },
          hosts: [{ name: 'rec-1', url: v1.url, transport: 'local' }],
          database: { host: '127.0.0.1', name: 'recording', user: 'recording' },
        },
      },
      'test',
      '/tmp/Pulumi.test.yaml',
    )
    const requested: string[][] = []
    const client = recordingClientFor(env, 'rec-1', (scopes) => {
      requested.push(scopes)
      return Promise.resolve('x')
    })
    expect(client.url).toBe(v1.url)
    expect(() => recordingClientFor(env, 'rec-9', () => Promise.resolve('x'))).toThrow(
      new BadInputError("recording.hosts: no host named 'rec-9'; expected one of rec-1."),
    )
    return client.list(1).catch(() => expect(requested[0]).toEqual(['urn:acme:rec:content:read']))
  })
})

describe('list answers', () => {
  const item = { id: 7, channelName: 'c', title: 't', startTime: 1, stopTime: 2 }

  it.each([
    ['a bare array', [item]],
    ['an object holding one array', { content: [item] }],
    ['an object with one array and other fields', { items: [item], total: 1, limit: 10 }],
  ])('accepts %s', (_name, body) => {
    expect(parseAnswer(z.array(recordingSchema), extractRecordingList(body), 'list')).toEqual([{ ...item, id: '7' }])
  })

  it.each([
    [
      'an object without an array',
      { total: 1 },
      'The content list answer of the recording service is an object without an array of recordings.',
    ],
    [
      'an object with two arrays',
      { a: [], b: [] },
      'The content list answer of the recording service holds 2 arrays (a, b); expected one array of recordings.',
    ],
    ['text', 'OK', 'The content list answer of the recording service is string; expected an array of recordings or an object holding one.'],
    [
      'nothing',
      undefined,
      'The content list answer of the recording service is empty; expected an array of recordings or an object holding one.',
    ],
  ])('fails clearly on %s', (_name, body, message) => {
    expect(() => extractRecordingList(body)).toThrow(new ProtocolError(message))
  })

  it('names the field of an item that does not have the recording shape', () => {
    expect(() => parseAnswer(z.array(recordingSchema), [{ ...item, title: 5 }], 'The content list answer')).toThrow(
      /^The content list answer does not have the documented shape: 0\.title: /,
    )
  })
})
