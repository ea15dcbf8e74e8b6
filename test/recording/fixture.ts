/**
 * The lab of an upgrade test file: the worker's pooled lab reset for the file (test/recording/lab-pool.ts:
 * real PostgreSQL, manager emulator, sshd, sandboxed hosts with dpkg and supervisord, recordings
 * created through the API), or a lab of the file's own under another config; plus a backup key pair
 * and store, a runs folder and an environment file of the file's own. Helpers read what a user would
 * check: installed versions, service health, and every recording through the API.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { managerClientFor } from '../../src/clients/manager-client.ts'
import { RecordingClient } from '../../src/clients/recording-client.ts'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import type { Environment } from '../../src/config/schema.ts'
import { generateBackupKey } from '../../src/backup/keys.ts'
import { connectDatabase, databaseTarget } from '../../src/drivers/postgres.ts'
import { schemaFingerprint } from '../../src/drivers/fingerprint.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { packageDriver, readInstalledVersion } from '../../src/drivers/packages.ts'
import type { Recording } from '../../src/recording/content-snapshot.ts'
import { runSvcops, runSvcopsInProcess, type CliRun } from '../support/cli.ts'
import { takeRecordingLab, type HeldLab } from './lab-pool.ts'

export interface UpgradeLab {
  /** The file's own directory: keys, backups, runs, stacks (the environment file). */
  dir: string
  /** The lab's directory (secrets/, logs/, state.json): pooled labs keep it between files. */
  labDir: string
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
  /** The file is done: the lab goes back to the worker's pool (or down, when it is the file's own). */
  stop(): Promise<void>
  /** The file broke the lab beyond a reset (stopped PostgreSQL, removed a host): down, so the next file gets a fresh one. */
  discard(): Promise<void>
}

/** A lab with `hosts` hosts on `version` and `recordings` recordings: the worker's, reset, or a new one. */
export async function startUpgradeLab(options: { hosts: number; version: string; recordings: number }): Promise<UpgradeLab> {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-upgrade-'))
  // One package cache for every lab of this test run (TMPDIR is the run's own), built once, as the live labs do.
  process.env.SVCOPS_LAB_PACKAGES_DIR ??= join(tmpdir(), 'svcops-test-lab-packages')
  const held = await takeRecordingLab(options, dir)
  try {
    return await prepareFileLab(dir, held)
  } catch (error) {
    await held.release()
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
}

/** The file's own part of its lab: backup keys and store, environment file, runs folder, and the helpers. */
async function prepareFileLab(dir: string, held: HeldLab): Promise<UpgradeLab> {
  const stacksDir = join(dir, 'stacks')
  const key = await generateBackupKey({ name: 'svcops upgrade test' })
  const keyDir = join(dir, 'keys')
  mkdirSync(keyDir, { mode: 0o700 })
  writeFileSync(join(keyDir, 'backup.pub.asc'), key.publicKey)
  writeFileSync(join(keyDir, 'backup.key.asc'), key.privateKey, { mode: 0o600 })
  const doc = parseYaml(readFileSync(join(held.stacksDir, 'Pulumi.lab.yaml'), 'utf8')) as { config: Record<string, unknown> }
  doc.config['svcops:backup'] = {
    store: { path: join(dir, 'backups') },
    recipients: [join(keyDir, 'backup.pub.asc')],
    identity: { file: join(keyDir, 'backup.key.asc') },
  }
  doc.config['svcops:recording'] = { ...(doc.config['svcops:recording'] as object), healthTimeoutSeconds: 10 }
  mkdirSync(stacksDir, { recursive: true })
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
  const leave = async (done: () => Promise<void>): Promise<void> => {
    await manager.logout().catch(() => undefined)
    try {
      await done()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return {
    dir,
    labDir: held.labDir,
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
    stop: () => leave(() => held.release()),
    discard: () => leave(() => held.discard()),
  }
}

/** Runs the CLI in a child process (as a scheduler would) and returns its exit code and output. */
export function runCli(args: string[], extraEnv: Record<string, string> = {}): Promise<CliRun> {
  return runSvcops(args, { env: extraEnv, cwd: process.cwd() })
}

/**
 * `runCli` in the test's process (`runSvcopsInProcess`), for the cases that read only the answer, exit
 * code and what the run left: a start of the CLI is ~0.3-0.5 s of CPU loading its modules again.
 */
export function runCliInProcess(args: string[], extraEnv: Record<string, string> = {}): Promise<CliRun> {
  return runSvcopsInProcess(args, { env: extraEnv })
}

/**
 * Waits until a run in `runsDir` that is not in `known` has a record saying it is paused after its
 * canary (`--pause-after-canary`); its id. `upgrade`, the run's own promise when it runs in this
 * process: the wait fails at once, with what it ended with, if the run ends without pausing.
 */
export async function waitForPausedRun(runsDir: string, known: string[], upgrade?: Promise<unknown>): Promise<string> {
  let ended = false
  void upgrade?.then(() => (ended = true))
  for (let i = 0; i < 1200 && !ended; i++) {
    for (const id of (existsSync(runsDir) ? readdirSync(runsDir) : []).filter((d) => !known.includes(d))) {
      const file = join(runsDir, id, 'run.json')
      if (!existsSync(file)) continue
      const record = JSON.parse(readFileSync(file, 'utf8')) as { pausedAt?: string; phase: string }
      if (record.pausedAt && record.phase === 'running') return id
    }
    await new Promise((r) => setTimeout(r, 250))
  }
  throw new Error(`no run paused after its canary: ${ended ? String(await upgrade) : 'none within 300 s'}`)
}
