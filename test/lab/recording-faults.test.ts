import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PostgresCluster } from '../../src/lab/lab-postgres.ts'
import {
  createServiceDatabase,
  installDeb,
  recordingDebs,
  runInstalledService,
  type ServiceDatabase,
  startRecordingHost,
  startTestBed,
  type TestBed,
  type TestIssuer,
  waitForLog,
} from './recording-fixture.ts'

type Host = Awaited<ReturnType<typeof startRecordingHost>>

let pg: PostgresCluster
let issuer: TestIssuer
let token: string
const hosts: Host[] = []

let bed: TestBed

beforeAll(async () => {
  bed = await startTestBed()
  ;({ pg, issuer, token } = bed)
}, 60_000)

afterAll(async () => {
  await Promise.all(hosts.map((host) => host.cleanup()))
  await bed?.stop()
})

/** A host on 2.0.0 (schema 2) holding five recordings, stopped, then upgraded to `version` and started. */
async function upgradeTo(
  version: string,
  waitMs?: number,
): Promise<{ host: Host; database: ServiceDatabase; service: Awaited<ReturnType<typeof runInstalledService>> }> {
  const database = await createServiceDatabase(pg)
  const host = await startRecordingHost({ version: '2.0.0', pg, database, issuer })
  hosts.push(host)
  for (let i = 1; i <= 5; i++) {
    const answer = await fetch(`${host.url}/api/v1/content`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channelName: 'c', title: `r${i}`, startTime: 1000 * i, stopTime: 1000 * i + 60 }),
    })
    expect(answer.status).toBe(201)
  }
  await host.stop()
  await installDeb(host.root, (await recordingDebs())[version] as string)
  const service = await runInstalledService(host.root, host.port, waitMs !== undefined ? { waitMs } : {})
  hosts.push({ ...host, ...service, cleanup: () => service.stop() })
  return { host, database, service }
}

async function schemaOf(database: ServiceDatabase): Promise<number> {
  const rows = await pg.query<{ version: number }>('SELECT max(version)::int AS version FROM schema_migrations', [], database.name)
  return rows[0]?.version ?? 0
}

async function titles(database: ServiceDatabase): Promise<string[]> {
  return (await pg.query<{ title: string }>('SELECT title FROM recordings ORDER BY id', [], database.name)).map((row) => row.title)
}

async function listTitles(url: string): Promise<string[]> {
  const body = (await (await fetch(`${url}/api/v1/content?limit=100`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
    content: { title: string }[]
  }
  return body.content.map((item) => item.title)
}

describe.concurrent('fault releases', () => {
  it('2.1.0 (the good one) migrates to schema 3 and keeps every recording', async () => {
    const { database, service } = await upgradeTo('2.1.0')
    expect((await fetch(`${service.url}/`)).status).toBe(200)
    expect(await schemaOf(database)).toBe(3)
    expect(await listTitles(service.url)).toEqual(['r1', 'r2', 'r3', 'r4', 'r5'])
  })

  it('2.1.0+migfail: the migration fails midway, is rolled back (schema 2, data and columns unchanged), exit non-zero', async () => {
    const { database, service } = await upgradeTo('2.1.0+migfail')
    expect(await service.exited).toBe(1)
    expect(service.log()).toMatch(
      / INFO applying migration 3 \(recording creator\)\n.* FATAL migration to schema 3 failed and was rolled back: relation "recording_locations" does not exist$/m,
    )
    expect(await schemaOf(database)).toBe(2)
    expect(await titles(database)).toEqual(['r1', 'r2', 'r3', 'r4', 'r5'])
    const columns = await pg.query<{ column_name: string }>(
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'recordings' AND column_name = 'created_by'",
      [],
      database.name,
    )
    expect(columns).toEqual([])
  })

  it('2.1.0+crash: migrates to schema 3, then crashes at start with a FATAL line', async () => {
    const { database, service } = await upgradeTo('2.1.0+crash')
    expect(await service.exited).toBe(1)
    expect(service.log()).toMatch(/ FATAL unhandled error while starting: /)
    expect(await schemaOf(database)).toBe(3)
  })

  it('2.1.0+unhealthy: runs and listens, but health and API answer 503 forever', async () => {
    const { database, service } = await upgradeTo('2.1.0+unhealthy')
    for (let i = 0; i < 3; i++) {
      const health = await fetch(`${service.url}/`)
      expect(health.status).toBe(503)
      expect(await health.text()).toBe('')
      await new Promise((resolve) => setTimeout(resolve, 300))
    }
    expect((await fetch(`${service.url}/api/v1/content?limit=1`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(503)
    expect(service.child.exitCode).toBeNull()
    expect(await schemaOf(database)).toBe(3)
  })

  it('2.1.0+slowstart: does not answer for seconds after start, then becomes healthy', async () => {
    const { service } = await upgradeTo('2.1.0+slowstart', 500)
    expect(await waitForLog(service, / INFO loading the content index$/m)).toBe(true)
    const started = Date.now()
    await expect(fetch(`${service.url}/`)).rejects.toThrow(/fetch failed/)
    let status = 0
    while (Date.now() - started < 15_000 && status !== 200) {
      status = await fetch(`${service.url}/`).then(
        (answer) => answer.status,
        () => 0,
      )
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(status).toBe(200)
    expect(Date.now() - started).toBeGreaterThan(3000)
  })

  it('2.1.0+lossy: looks healthy and logs no problem, but every third recording is gone', async () => {
    const { database, service } = await upgradeTo('2.1.0+lossy')
    expect((await fetch(`${service.url}/`)).status).toBe(200)
    expect(await listTitles(service.url)).toEqual(['r2', 'r3', 'r5'])
    expect(await titles(database)).toEqual(['r2', 'r3', 'r5'])
    expect(service.log()).not.toMatch(/ (WARN|ERROR|FATAL) /)
    expect(service.log()).toMatch(/ INFO migrated the database schema from version 2 to 3$/m)
  })
})
