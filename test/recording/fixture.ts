/**
 * One lab per test file for the upgrade tests: `labUp` (real PostgreSQL, manager emulator, sshd,
 * sandboxed hosts with dpkg and supervisord, recordings created through the API), plus a backup
 * key pair and store, written into an environment file of its own. Helpers read what a user would
 * check: installed versions, service health, and every recording through the API.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { managerClientFor } from '../../src/clients/manager-client.ts'
import { RecordingClient } from '../../src/clients/recording-client.ts'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import type { Environment } from '../../src/config/schema.ts'
import { labDown, labUp } from '../../src/lab/lab.ts'
import { generateBackupKey } from '../../src/backup/keys.ts'
import { connectDatabase, databaseTarget } from '../../src/drivers/postgres.ts'
import { schemaFingerprint } from '../../src/drivers/fingerprint.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { acquireEnvironmentLock } from '../../src/runs/lock.ts'
import { packageDriver, readInstalledVersion } from '../../src/drivers/packages.ts'
import type { Recording } from '../../src/recording/content-snapshot.ts'
import { runSvcops, type CliRun } from '../support/cli.ts'

export interface UpgradeLab {
  dir: string
  envFile: string
  runsDir: string
  env(): Environment
  versions(): Promise<Record<string, string | undefined>>
  listAll(host?: number): Promise<Recording[]>
  create(title: string, host?: number): Promise<Recording>
  healthy(): Promise<boolean[]>
  fingerprint(): Promise<string>
  /** Edits the environment's recording section (e.g. health timeout) for the next runs. */
  setRecording(fields: Record<string, unknown>): void
  stop(): Promise<void>
}

/** Starts a lab with `hosts` hosts on `version` and `recordings` recordings. */
export async function startUpgradeLab(options: { hosts: number; version: string; recordings: number }): Promise<UpgradeLab> {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-upgrade-'))
  const labDir = join(dir, 'lab')
  const stacksDir = join(dir, 'stacks')
  await labUp({ dir: labDir, stacksDir, hosts: options.hosts, version: options.version, recordings: options.recordings })
  const key = await generateBackupKey({ name: 'svcops upgrade test' })
  const keyDir = join(dir, 'keys')
  mkdirSync(keyDir, { mode: 0o700 })
  writeFileSync(join(keyDir, 'backup.pub.asc'), key.publicKey)
  writeFileSync(join(keyDir, 'backup.key.asc'), key.privateKey, { mode: 0o600 })
  const doc = parseYaml(readFileSync(join(stacksDir, 'Pulumi.lab.yaml'), 'utf8')) as { config: Record<string, unknown> }
  doc.config['svcops:backup'] = {
    store: { path: join(dir, 'backups') },
    recipients: [join(keyDir, 'backup.pub.asc')],
    identity: { file: join(keyDir, 'backup.key.asc') },
  }
  doc.config['svcops:recording'] = { ...(doc.config['svcops:recording'] as object), healthTimeoutSeconds: 10 }
  const envFile = join(stacksDir, 'Pulumi.upgrade.yaml')
  writeFileSync(envFile, toYaml(doc))
  const runsDir = join(dir, 'runs')
  process.env.SVCOPS_RUNS_DIR = runsDir
  const env = () => loadEnvironmentFile(envFile, 'lab')
  const manager = managerClientFor(env())
  const client = (i: number) => {
    const host = env().recording?.hosts[i]
    if (!host) throw new Error(`no host ${i}`)
    return new RecordingClient({ url: host.url, auth: manager })
  }
  await tuneLabDatabase(labDir, env())
  // The first lock creates svcops' own table (part of the schema fingerprint from then on); take it once so tests compare like with like.
  const lock = await acquireEnvironmentLock(env().recording!.database, {
    environment: 'lab',
    holder: { runId: '19700101T000000Z-000000', holder: 'fixture', pid: process.pid, since: new Date().toISOString() },
  })
  await lock.release()
  return {
    dir,
    envFile,
    runsDir,
    env,
    async versions() {
      const rec = env().recording!
      const out: Record<string, string | undefined> = {}
      for (const h of rec.hosts) {
        const t = transportFor(h)
        out[h.name] = await readInstalledVersion(packageDriver(rec.packageDriver), t, h, rec.package)
        await t.close()
      }
      return out
    },
    listAll: (host = 0) => client(host).list(10_000),
    create: (title, host = 0) =>
      client(host).create({ channelName: 'test-channel', title, startTime: 1_700_000_000, stopTime: 1_700_000_600 }),
    async healthy() {
      return Promise.all(env().recording!.hosts.map(async (_h, i) => (await client(i).health()).healthy))
    },
    async fingerprint() {
      const c = await connectDatabase(databaseTarget(env().recording!.database))
      try {
        return await schemaFingerprint(c)
      } finally {
        await c.end()
      }
    },
    setRecording(fields) {
      const d = parseYaml(readFileSync(envFile, 'utf8')) as { config: Record<string, unknown> }
      d.config['svcops:recording'] = { ...(d.config['svcops:recording'] as object), ...fields }
      writeFileSync(envFile, toYaml(d))
    },
    async stop() {
      await manager.logout().catch(() => undefined)
      await labDown({ dir: labDir, stacksDir })
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Test speed and the full backup check: fsync off (reloadable), and CREATEDB for the service role so
 * that the backup's test restore into a scratch database runs (without it svcops falls back to a
 * decrypt-only verification).
 */
async function tuneLabDatabase(labDir: string, env: Environment): Promise<void> {
  const db = env.recording!.database
  const password = readFileSync(join(labDir, 'secrets', 'postgres-password'), 'utf8').trim()
  const client = new pg.Client({ host: db.host, port: db.port, user: 'postgres', password, database: 'postgres' })
  await client.connect()
  try {
    await client.query('ALTER SYSTEM SET fsync = off')
    await client.query('ALTER SYSTEM SET synchronous_commit = off')
    await client.query('SELECT pg_reload_conf()')
    await client.query(`ALTER ROLE ${pg.escapeIdentifier(db.user)} CREATEDB`)
  } finally {
    await client.end()
  }
}

/** Runs the CLI in a child process (as a scheduler would) and returns its exit code and output. */
export function runCli(args: string[], extraEnv: Record<string, string> = {}): Promise<CliRun> {
  return runSvcops(args, { env: extraEnv, cwd: process.cwd() })
}
