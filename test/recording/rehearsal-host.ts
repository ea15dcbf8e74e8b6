/**
 * A rehearsal host beside an upgrade lab, as a site would set one up once: a sandbox with its own
 * dpkg database and supervisord, the lab's release installed from the lab's packages with real dpkg,
 * its configuration pointed at the scratch database `database` (created for the first start, as a
 * site would, and dropped again: each rehearsal makes its own copy), a copy of the recordings
 * storage (the service reads a recording's file to list it), and the stack's
 * `recording.rehearsal` section naming both.
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { readSecret } from '../../src/config/secrets.ts'
import { installHost, startHost } from '../../src/lab/hosts-fleet.ts'
import { stopLabHost } from '../../src/lab/hosts.ts'
import { LAB_RECORDING_PRODUCT } from '../../src/lab/hosts-lab.ts'
import { buildRecordingPackages } from '../../src/lab/recording/index.ts'
import { recordingPackagePaths } from '../../src/lab/recording/package.ts'
import { freePortNotIn } from '../../src/lab/ports.ts'
import type { UpgradeLab } from './fixture.ts'

export const REHEARSAL_DATABASE = 'recordings_rehearsal'

export interface RehearsalHost {
  name: string
  root: string
  url: string
  /** Whether a database of that name exists on the lab's server now. */
  databaseExists(): Promise<boolean>
  /** Points the service's own configuration file at database `name` (a site's mistake); returns how to undo it. */
  pointServiceAt(name: string): () => void
  stop(): Promise<void>
}

/** Sets up the rehearsal host on `version` and writes `recording.rehearsal` into the lab's stack file. */
export async function addRehearsalHost(lab: UpgradeLab, version: string): Promise<RehearsalHost> {
  const env = lab.env()
  const rec = env.recording!
  const user = rec.hosts[0]?.ssh?.user ?? 'svcops-lab'
  const password = readSecret(rec.database.password!, 'recording.database.password')
  const dir = mkdtempSync(join(tmpdir(), 'svcops-rehearsal-host-'))
  chmodSync(dir, 0o755)
  const packages = await buildRecordingPackages(rec.packageDir!, LAB_RECORDING_PRODUCT)
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({
      host: rec.database.host,
      port: rec.database.port,
      user: rec.database.user,
      password,
      database: rec.database.name,
    })
    await c.connect()
    try {
      return await fn(c)
    } finally {
      await c.end()
    }
  }
  const options = { dir, count: 1, version, packages, product: LAB_RECORDING_PRODUCT, user }
  const host = await installHost('rehearsal-1', options)
  await admin((c) => c.query(`CREATE DATABASE ${REHEARSAL_DATABASE}`))
  const started = await startHost(
    host,
    {
      ...options,
      database: { host: rec.database.host, port: rec.database.port, name: REHEARSAL_DATABASE, user: rec.database.user, password },
      managerUrl: env.manager!.url,
    },
    await freePortNotIn(new Set()),
  )
  // The service reads a recording's file when it lists it: the rehearsal host holds a copy of the
  // recordings storage (a site's snapshot or rsync of it), never production's own.
  const shared = join(rec.hosts[0]!.root!, 'srv/svc/recordings')
  const own = join(host.root, 'var/opt/svc/recordings')
  execFileSync('sh', ['-c', 'rm -rf "$1"/* && cp -a "$2"/. "$1"/', 'copy-storage', own, shared])
  lab.setRecording({ rehearsal: { host: { name: 'rehearsal-1', url: started.url, root: host.root }, database: REHEARSAL_DATABASE } })
  const databaseExists = () =>
    admin(async (c) => ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [REHEARSAL_DATABASE])).rowCount ?? 0) > 0)
  await admin((c) => c.query(`DROP DATABASE ${REHEARSAL_DATABASE} WITH (FORCE)`))
  return {
    name: 'rehearsal-1',
    root: host.root,
    url: started.url,
    databaseExists,
    pointServiceAt(name) {
      const file = join(host.root, recordingPackagePaths(LAB_RECORDING_PRODUCT).config)
      const text = readFileSync(file, 'utf8')
      const config = JSON.parse(text) as { database: Record<string, unknown> }
      writeFileSync(file, `${JSON.stringify({ ...config, database: { ...config.database, name } }, null, 2)}\n`)
      return () => writeFileSync(file, text)
    },
    async stop() {
      await stopLabHost({ root: host.root }, { removeFiles: true })
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
