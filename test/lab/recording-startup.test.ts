import { chmodSync, chownSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
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
} from './recording-fixture.ts'

let pg: PostgresCluster
let issuer: TestIssuer
let token: string

let bed: TestBed

beforeAll(async () => {
  bed = await startTestBed()
  ;({ pg, issuer, token } = bed)
}, 60_000)

afterAll(async () => {
  await bed?.stop()
})

async function migrations(database: ServiceDatabase): Promise<{ version: number; release: string }[]> {
  return pg.query<{ version: number; release: string }>(
    'SELECT version, release FROM schema_migrations ORDER BY version',
    [],
    database.name,
  )
}

async function post(url: string, title: string): Promise<Response> {
  return fetch(`${url}/api/v1/content`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ channelName: 'c1', title, startTime: 100, stopTime: 200 }),
  })
}

describe.concurrent('recording service start-up', () => {
  it('applies migrations on the first start of each release, records them, and keeps the recordings', async () => {
    const database = await createServiceDatabase(pg)
    const first = await startRecordingHost({ version: '1.4.0', pg, database, issuer })
    expect(await migrations(database)).toEqual([{ version: 1, release: '1.4.0' }])
    expect(first.log()).toMatch(/ INFO migrated the database schema from version 0 to 1$/m)
    expect((await post(first.url, 'kept')).status).toBe(201)
    const list: unknown = await (
      await fetch(`${first.url}/api/v1/content?limit=10`, { headers: { authorization: `Bearer ${token}` } })
    ).json()
    expect(Array.isArray(list)).toBe(true)
    await first.stop()

    // Upgrade in place: the same sandbox, the newer package, the edited config kept.
    await installDeb(first.root, (await recordingDebs())['1.5.0'] as string)
    const second = await runInstalledService(first.root, first.port)
    expect(second.log()).toMatch(/ INFO database schema version 1 is current; nothing to migrate$/m)
    await second.stop()

    await installDeb(first.root, (await recordingDebs())['2.0.0'] as string)
    const third = await runInstalledService(first.root, first.port)
    expect(await migrations(database)).toEqual([
      { version: 1, release: '1.4.0' },
      { version: 2, release: '2.0.0' },
    ])
    const body = (await (
      await fetch(`${third.url}/api/v1/content?limit=10`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { content: { title: string; duration: number }[] }
    expect(body.content).toEqual([expect.objectContaining({ title: 'kept', duration: 100 })])
    await third.stop()
    await first.cleanup()
  })

  it('refuses to start on a schema newer than it knows, with a clear log line and a non-zero exit', async () => {
    const database = await createServiceDatabase(pg)
    const newer = await startRecordingHost({ version: '2.0.0', pg, database, issuer })
    await newer.stop()
    await installDeb(newer.root, (await recordingDebs())['1.5.0'] as string)
    const older = await runInstalledService(newer.root, newer.port)
    expect(await older.exited).not.toBe(0)
    expect(older.log()).toMatch(
      / FATAL database schema version 2 is newer than this release knows \(1\); restore the database backup taken before the upgrade/,
    )
    expect(await migrations(database)).toHaveLength(2)
    await newer.cleanup()
  })

  it('exits non-zero naming the file, line and column when the config file has a syntax error', async () => {
    const host = await startRecordingHost({ version: '1.5.0', pg, database: await createServiceDatabase(pg), issuer })
    await host.stop()
    const file = join(host.root, 'etc/opt/svc/recording.json')
    writeFileSync(file, readFileSync(file, 'utf8').replace('"listen": {', '"listen": {,'))
    const broken = await runInstalledService(host.root, host.port)
    expect(await broken.exited).not.toBe(0)
    expect(broken.log()).toContain(
      ` FATAL configuration file ${file} is not valid JSON: line 2, column 14: expected a property name or '}', found ","\n`,
    )
    await host.cleanup()
  })

  it('names the field when a config value is wrong, and warns about options the release does not know', async () => {
    const bad = await startRecordingHost({
      version: '1.4.0',
      pg,
      database: await createServiceDatabase(pg),
      issuer,
      edit: (config) => (config.listen.port = 'eighty'),
    })
    expect(await bad.exited).not.toBe(0)
    expect(bad.log()).toMatch(/ FATAL configuration file \S+: listen\.port: /)
    await bad.cleanup()
    const newer = await startRecordingHost({
      version: '1.4.0',
      pg,
      database: await createServiceDatabase(pg),
      issuer,
      edit: (config) => (config.contentInfoCacheTtlSeconds = 60),
    })
    expect(newer.log()).toMatch(/ WARN configuration option contentInfoCacheTtlSeconds is not known to release 1\.4\.0 and is ignored$/m)
    expect((await fetch(`${newer.url}/`)).status).toBe(200)
    await newer.cleanup()
  })

  it('starts with a config file of an older release (new options have defaults)', async () => {
    const host = await startRecordingHost({
      version: '2.0.0',
      pg,
      database: await createServiceDatabase(pg),
      issuer,
      edit: (config) => {
        delete config.logLevel
        delete config.contentInfoCacheTtlSeconds
      },
    })
    expect((await fetch(`${host.url}/`)).status).toBe(200)
    await host.cleanup()
  })

  it('exits non-zero naming the database when it refuses the login, without logging the password', async () => {
    const database = await createServiceDatabase(pg)
    const wrong = { ...database, password: 'wrong-password-5d1e' }
    const host = await startRecordingHost({ version: '1.5.0', pg, database: wrong, issuer })
    expect(await host.exited).toBe(1)
    expect(host.log()).toMatch(
      new RegExp(
        ` FATAL cannot connect to database ${database.name} at 127\\.0\\.0\\.1:${pg.port} as ${database.user}: password authentication failed`,
      ),
    )
    expect(host.log()).not.toContain('wrong-password-5d1e')
    await host.cleanup()
  })

  it('answers 503 and logs an error when the signing keys of the manager cannot be fetched', async () => {
    // A port held by this test that hangs up on every connection. A free port handed out and left
    // unbound can be taken meanwhile by another file's service: a clean-clone run got 401 here, as
    // when a manager emulator of another lab answers with signing keys of its own.
    const hangsUp = createServer((socket) => socket.destroy())
    await new Promise<void>((resolve) => hangsUp.listen(0, '127.0.0.1', resolve))
    const closed = `http://127.0.0.1:${(hangsUp.address() as AddressInfo).port}`
    try {
      const host = await startRecordingHost({
        version: '1.5.0',
        pg,
        database: await createServiceDatabase(pg),
        issuer: { url: issuer.url, jwksUrl: `${closed}/.well-known/jwks.json` },
      })
      const response = await fetch(`${host.url}/api/v1/content?limit=1`, { headers: { authorization: `Bearer ${token}` } })
      expect(response.status).toBe(503)
      expect(await response.json()).toEqual({ error: 'the signing keys of the manager cannot be fetched' })
      expect(host.log()).toMatch(new RegExp(` ERROR cannot fetch the signing keys from ${closed}/\\.well-known/jwks\\.json: `))
      await host.cleanup()
    } finally {
      await new Promise<void>((resolve) => hangsUp.close(() => resolve()))
    }
  })

  it('reports recordings inaccessible when the storage path is wrong', async () => {
    const host = await startRecordingHost({
      version: '1.5.0',
      pg,
      database: await createServiceDatabase(pg),
      issuer,
      edit: (config) => (config.storage.path = '/srv/missing'),
    })
    expect(host.log()).toMatch(/ ERROR recordings inaccessible: storage path \S+\/srv\/missing: no such file or directory/)
    const response = await post(host.url, 'lost')
    expect(response.status).toBe(500)
    expect(((await response.json()) as { error: string }).error).toMatch(
      /^recordings inaccessible: cannot write recording file .*\/srv\/missing\/main\/1\.json/,
    )
    const list = (await (
      await fetch(`${host.url}/api/v1/content?limit=10`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as unknown[]
    expect(list).toEqual([])
    await host.cleanup()
  })

  it('reports recordings inaccessible when a storage location name was renamed in the config', async () => {
    const database = await createServiceDatabase(pg)
    const host = await startRecordingHost({ version: '1.5.0', pg, database, issuer })
    expect((await post(host.url, 'in main')).status).toBe(201)
    await host.stop()
    const file = join(host.root, 'etc/opt/svc/recording.json')
    writeFileSync(file, readFileSync(file, 'utf8').replaceAll('"main"', '"primary"'))
    const renamed = await runInstalledService(host.root, host.port)
    const response = await fetch(`${renamed.url}/api/v1/content?limit=10`, { headers: { authorization: `Bearer ${token}` } })
    expect(response.status).toBe(500)
    expect(await response.json()).toEqual({
      error: 'recordings inaccessible: storage location "main" is not configured (configured: primary)',
    })
    expect(renamed.log()).toMatch(/ ERROR recordings inaccessible: storage location "main" is not configured/)
    await renamed.stop()
    await host.cleanup()
  })

  it('reports recordings inaccessible when the service user may not read the storage', async () => {
    const database = await createServiceDatabase(pg)
    const host = await startRecordingHost({ version: '1.5.0', pg, database, issuer })
    expect((await post(host.url, 'private')).status).toBe(201)
    await host.stop()
    // Run as an unprivileged user (root ignores file modes): the log and password are its own, the storage is not.
    const nobody = { uid: 65534, gid: 65534 }
    chownSync(join(host.root, 'var/log/svc'), nobody.uid, nobody.gid)
    chownSync(join(host.root, 'var/log/svc/recording.log'), nobody.uid, nobody.gid)
    chownSync(join(host.root, 'etc/opt/svc/recording.dbpass'), nobody.uid, nobody.gid)
    const storage = join(host.root, 'var/opt/svc/recordings')
    chmodSync(storage, 0o700)
    const denied = await runInstalledService(host.root, host.port, { user: 'nobody' })
    expect(denied.log()).toMatch(
      / ERROR recordings inaccessible: storage path \S+ (.|\n)*|storage location "main" at \S+: permission denied \(EACCES\)/,
    )
    const list = await fetch(`${denied.url}/api/v1/content?limit=10`, { headers: { authorization: `Bearer ${token}` } })
    expect(list.status).toBe(500)
    expect(((await list.json()) as { error: string }).error).toMatch(
      /^recordings inaccessible: cannot read recording file \S+\/main\/1\.json: permission denied \(EACCES\)$/,
    )
    await denied.stop()
    mkdirSync(storage, { recursive: true })
    rmSync(host.root, { recursive: true, force: true })
  })
})
