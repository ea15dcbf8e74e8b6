/**
 * `svcops lab up / status / down`: the embedded environment on this machine. `lab up` is a sequence
 * of small named start functions; each one records what it started in the state file (src/lab/state.ts)
 * the moment it exists, so `lab down` — or Ctrl-C during `lab up` — stops exactly that. Services run
 * as detached processes that outlive the CLI. To add a service: write a `startLabXxx(lab)` that calls
 * `lab.record(...)`, add a stopper for its `kind` to `stoppers`, call it from `labUp` as a
 * `lab.step(...)`, name it in `labUpPlan`, and pass its section to `writeLabEnvironment`
 * (environment-file.ts).
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { BadInputError, OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { onShutdown } from '../core/lifecycle.ts'
import type { AuthRevision } from '../releases/auth.ts'
import type { EmulatorConfig } from './manager/main.ts'
import { hashPassword } from './manager/passwords.ts'
import { freePort } from './ports.ts'
import { projectPath } from '../core/paths.ts'
import { startPostgres, stopPostgres, type PostgresCluster, type PostgresInfo } from './lab-postgres.ts'
import { isAlive, processStartTicks } from '../core/process.ts'
import { isRunning, readTail, spawnDetached, stopProcess, waitForHealth } from './lab-processes.ts'
import { prepareLabBackup, prepareLabRunKey } from './lab-backup.ts'
import {
  checkLabHostsOptions,
  finishLabRecording,
  hostCheckers,
  hostStoppers,
  labHostsPlan,
  prepareLabRecording,
  recordingSection,
  type LabHostsOptions,
} from './hosts-lab.ts'
import { finishLabRehearsalHost, labRehearsalHostPlan, prepareLabRehearsalHost } from './lab-rehearsal-host.ts'
import { checkLabLiveOptions, labLivePlan, liveCheckers, liveSection, liveStoppers, startLabLive, type LabLiveOptions } from './live-lab.ts'
import { liveHostsSection, startLabLiveHosts } from './live-hosts-lab.ts'
import { prepareSystemdRecording, systemdHostCheckers, systemdHostStoppers } from './systemd-lab.ts'
import { startSystemdLiveHosts, systemdLivePlan } from './systemd-live-lab.ts'
import {
  labPaths,
  readLabState,
  writeLabSecret,
  writeLabState,
  type LabEntry,
  type LabPaths,
  type LabState,
  type LabSteps,
} from './state.ts'
import { LAB_USERS, type LabManager } from './manager/lab-users.ts'
import { managerSection, refuseForeignEnvironmentFile, writeLabEnvironment } from './environment-file.ts'

export { labPaths, type LabEntry, type LabPaths, type LabState } from './state.ts'

export interface LabUpOptions extends LabHostsOptions, LabLiveOptions {
  dir?: string
  stacksDir?: string
  /** Auth API revision the manager emulator runs as (1.4.1 issues 300 s tokens). */
  managerRevision?: AuthRevision
  /** Also a rehearsal host for `svcops rehearse recording` (sandbox hosts only: src/lab/lab-rehearsal-host.ts). */
  rehearsalHost?: boolean
}

/** A `lab up` in progress: records what was started, and stops it all on failure or Ctrl-C. */
export class LabRun implements LabSteps {
  readonly state: LabState
  private aborted = false
  /** Steps running now (the hosts are prepared while PostgreSQL and the manager start). */
  private readonly inFlight = new Set<Promise<unknown>>()
  private stopping: Promise<void> | undefined

  readonly paths: LabPaths

  constructor(paths: LabPaths, options: Record<string, unknown>) {
    this.paths = paths
    this.state = { version: 1, startedAt: new Date().toISOString(), options, complete: false, envFile: paths.envFile, entries: [] }
    writeLabState(paths, this.state)
  }

  /** Runs one named start function as an event step; refuses to start anything once interrupted. */
  async step<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
    if (this.aborted) throw new OperationError(`lab up was interrupted before '${name}'.`)
    const running = events.step(name, async () => fn())
    this.inFlight.add(running)
    const settle = (): void => void this.inFlight.delete(running)
    running.then(settle, settle)
    return running
  }

  /** Adds a started thing to the state file, at once (before waiting for it to become ready). */
  record(entry: LabEntry): void {
    this.state.entries.push(entry)
    writeLabState(this.paths, this.state)
  }

  /** Removes an entry that its start function already stopped itself (a failed attempt). */
  forget(entry: LabEntry): void {
    this.state.entries = this.state.entries.filter((e) => e !== entry)
    writeLabState(this.paths, this.state)
  }

  /** Writes a secret to a 0600 file under the lab dir; returns its path. */
  secret(name: string, value: string): string {
    return writeLabSecret(this.paths, name, value)
  }

  finish(): void {
    this.state.complete = true
    writeLabState(this.paths, this.state)
  }

  /** Ctrl-C: let the start in progress finish (so what it starts is recorded), then stop everything. */
  async abort(): Promise<void> {
    this.aborted = true
    await this.stopAll()
  }

  /**
   * Waits for the steps in progress (what they start gets recorded), then stops everything recorded,
   * newest first, and says what it stopped. Safe to call twice.
   */
  stopAll(): Promise<void> {
    this.stopping ??= Promise.allSettled([...this.inFlight]).then(async () => {
      const names = [...this.state.entries].reverse().map((e) => e.name)
      await stopLab(this.paths, this.state)
      events.info(`lab up stopped what it had started: ${names.length > 0 ? names.join(', ') : 'nothing'}.`)
    })
    return this.stopping
  }
}

/** What `lab up` would do, one line per step (for --dry-run). */
export function labUpPlan(options: LabUpOptions = {}): string[] {
  const paths = labPaths(options)
  const liveOnly = isLiveOnly(options)
  return [
    ...(liveOnly
      ? []
      : [
          `start PostgreSQL (fsync on) on a free loopback port, in a temp dir`,
          `start the manager emulator (auth API revision ${options.managerRevision ?? '1.6.2'}) with users ${LAB_USERS.map((u) => `${u.email} (${u.scopes.join(' ')})`).join(' and ')}; passwords in 0600 files under ${paths.secretsDir}`,
        ]),
    ...labHostsPlan(options),
    ...(options.rehearsalHost ? labRehearsalHostPlan() : []),
    ...(options.hostKind === 'systemd' && (options.liveHosts ?? 0) > 0 ? systemdLivePlan(options) : labLivePlan(options)),
    ...((options.hosts ?? 3) > 0 ? [`create the backup key pair (OpenPGP, private key 0600) and the backup store under ${paths.dir}`] : []),
    `write the environment file ${paths.envFile}`,
  ]
}

/** `--hosts 0 --live V`: only the live host (no PostgreSQL, manager or recording hosts, so it is up in seconds). */
function isLiveOnly(options: LabUpOptions): boolean {
  return options.live !== undefined && checkLabHostsOptions(options).hosts === 0
}

/** Brings the lab up and returns what runs where. Fails if a lab is already up in the same dir. */
export async function labUp(options: LabUpOptions = {}): Promise<LabState> {
  const paths = labPaths(options)
  const hostOptions = checkLabHostsOptions(options)
  const liveOptions = checkLabLiveOptions(options)
  if (options.rehearsalHost && (hostOptions.hostKind !== 'sandbox' || hostOptions.hosts === 0))
    throw new BadInputError(
      `--rehearsal-host: the lab sets one up beside sandbox recording hosts only; expected --host-kind sandbox and --hosts of at least 1.`,
    )
  await clearStaleLab(paths)
  const managerRevision = options.managerRevision ?? '1.6.2'
  const lab = new LabRun(paths, { managerRevision, ...hostOptions, ...liveOptions })
  const release = onShutdown(() => lab.abort())
  try {
    // The keys folder too: the run key is made in it for every lab, the backup keys only with a database.
    lab.record({
      kind: 'files',
      name: 'lab files',
      info: {},
      paths: [paths.secretsDir, paths.logsDir, join(paths.dir, 'keys')],
      stop: 'nothing runs',
    })
    for (const dir of [paths.secretsDir, paths.logsDir]) mkdirSync(dir, { recursive: true, mode: 0o700 })
    // The hosts need neither PostgreSQL nor the manager until their services start: prepare them meanwhile.
    // Either kind of host ends in a function that starts the services once PostgreSQL and the manager run.
    const prepareHosts = async (): Promise<(cluster: PostgresCluster, manager: LabManager) => Promise<Record<string, unknown>>> => {
      if (hostOptions.hostKind === 'systemd') return prepareSystemdRecording(lab, hostOptions)
      const prepared = await prepareLabRecording(lab, hostOptions)
      const rehearsal = options.rehearsalHost ? await prepareLabRehearsalHost(lab, prepared) : undefined
      return async (cluster, manager) => {
        const part = await finishLabRecording(lab, prepared, cluster, manager)
        if (!rehearsal) return recordingSection(part)
        const section = await lab.step(`start the rehearsal host ${rehearsal.name}`, () =>
          finishLabRehearsalHost(lab, rehearsal, prepared, part, manager),
        )
        return { ...recordingSection(part), rehearsal: section }
      }
    }
    const preparing = hostOptions.hosts > 0 ? lab.step('prepare the recording hosts', prepareHosts) : undefined
    // The live host needs nothing else of the lab: it comes up meanwhile too.
    const living = liveOptions
      ? liveOptions.liveHosts > 0
        ? hostOptions.hostKind === 'systemd'
          ? lab.step('start the live systemd hosts', () => startSystemdLiveHosts(lab, liveOptions))
          : lab.step('start the live hosts', () => startLabLiveHosts(lab, liveOptions))
        : lab.step('start the live host', () => startLabLive(lab, liveOptions))
      : undefined
    // Observed here so that a failure before it is awaited is not an unhandled rejection; stopAll waits for it.
    preparing?.catch(() => undefined)
    living?.catch(() => undefined)
    let manager: LabManager | undefined
    let recording: Record<string, unknown> | undefined
    if (!isLiveOnly(options)) {
      const cluster = await lab.step('start PostgreSQL', () => startLabPostgres(lab))
      const started = await lab.step('start the manager emulator', () => startLabManager(lab, { apiRevision: managerRevision }))
      manager = started
      recording = preparing ? await (await preparing)(cluster, started) : undefined
    }
    const live = living ? await living : undefined
    // Backups need the recording database; the key pair is the lab's own, the private key 0600 in the lab dir.
    const backup = recording
      ? await lab.step('create the backup key pair and store', () => {
          const store = join(paths.dir, 'backups')
          lab.record({
            kind: 'files',
            name: 'backup keys and store',
            info: {},
            paths: [join(paths.dir, 'keys'), store],
            stop: 'nothing runs',
          })
          mkdirSync(store, { recursive: true, mode: 0o700 })
          return prepareLabBackup(paths.dir)
        })
      : undefined
    await lab.step('write the lab environment file', () =>
      writeLabEnvironment(lab, {
        environment: 'lab',
        ...(manager ? { manager: managerSection(manager) } : {}),
        ...(recording ? { recording } : {}),
        ...(live ? { live: 'section' in live ? live.section : 'hosts' in live ? liveHostsSection(live) : liveSection(live) } : {}),
        ...(backup ? { backup } : {}),
        // The runs kept in the lab's stores are signed with a run key of the lab's own, as a site's are.
        runs: prepareLabRunKey(paths.dir),
      }),
    )
    lab.finish()
    return lab.state
  } catch (error) {
    // The failure is what the user needs to read; a stop that failed as well is told, not thrown.
    await lab.stopAll().catch((stopError: unknown) => events.warn(errorMessage(stopError)))
    throw error
  } finally {
    release()
  }
}

/** PostgreSQL with fsync on; the superuser password goes to a 0600 file, never into the state. */
export async function startLabPostgres(lab: LabRun): Promise<PostgresCluster> {
  const cluster = await startPostgres({ fsync: true })
  const { password, ...info } = cluster.info
  const passwordFile = lab.secret('postgres-password', password)
  lab.record({
    kind: 'postgres',
    name: 'PostgreSQL',
    info: { ...info, passwordFile },
    port: info.port,
    log: info.logFile,
    paths: [info.dir],
    stop: `pg_ctl -D ${info.dataDir} -m fast stop`,
  })
  return cluster
}

/** The manager emulator as a detached process, with the lab users (random passwords, hashed in its config). */
export async function startLabManager(lab: LabRun, options: { apiRevision: AuthRevision }): Promise<LabManager> {
  const dir = join(lab.paths.dir, 'manager')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const users = {} as LabManager['users']
  const configUsers: EmulatorConfig['users'] = []
  for (const user of LAB_USERS) {
    const password = randomBytes(24).toString('base64url')
    users[user.key] = { email: user.email, scopes: [...user.scopes], passwordFile: lab.secret(`manager-${user.key}-password`, password) }
    configUsers.push({ email: user.email, passwordHash: await hashPassword(password), permissions: [...user.scopes] })
  }
  // The fault switch of the emulator answers only this token; its config file keeps only the hash.
  const adminToken = randomBytes(32).toString('base64url')
  lab.secret('manager-admin-token', adminToken)
  const adminTokenSha256 = createHash('sha256').update(adminToken).digest('hex')
  mkdirSync(lab.paths.logsDir, { recursive: true })
  const log = join(lab.paths.logsDir, 'manager.log')
  const configFile = join(dir, 'config.json')
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    const config: EmulatorConfig = { host: '127.0.0.1', port, apiRevision: options.apiRevision, adminTokenSha256, users: configUsers }
    writeFileSync(configFile, JSON.stringify(config, null, 2), { mode: 0o600 })
    const url = `http://127.0.0.1:${port}`
    const argv = [process.execPath, projectPath('src/lab/manager/main.ts'), '--config', configFile]
    const pid = spawnDetached(argv, log)
    const entry: LabEntry = {
      kind: 'process',
      name: 'manager emulator',
      info: { startTicks: processStartTicks(pid) ?? '' },
      pid,
      port,
      url,
      log,
      paths: [dir],
      stop: `SIGTERM to pid ${pid}`,
    }
    lab.record(entry)
    if (await waitForHealth(`${url}/lab/health`, pid)) return { url, apiRevision: options.apiRevision, users }
    await stopProcess(entry)
    lab.forget(entry)
    const tail = readTail(log)
    if (attempt >= 3 || !/EADDRINUSE/.test(tail))
      throw new OperationError(`The manager emulator did not start on ${url}: ${tail || 'no output'} (log: ${log}).`)
  }
}

/** How each kind of entry is stopped (also from another process). Add a kind here with its start function. */
const stoppers: Record<string, (entry: LabEntry) => Promise<void>> = {
  files: () => Promise.resolve(),
  process: stopProcess,
  postgres: (entry) => stopPostgres({ ...(entry.info as unknown as PostgresInfo), password: '' }),
  ...hostStoppers,
  ...systemdHostStoppers,
  ...liveStoppers,
}

/** How each kind of entry is checked by `lab status`; kinds without one count as running while their paths exist. */
const checkers: Record<string, (entry: LabEntry) => boolean> = {
  process: isRunning,
  postgres: (entry) => {
    const pidFile = join(String(entry.info.dataDir), 'postmaster.pid')
    if (!existsSync(pidFile)) return false
    return isAlive(Number(readFileSync(pidFile, 'utf8').split('\n')[0]))
  },
  ...hostCheckers,
  ...systemdHostCheckers,
  ...liveCheckers,
}

/** Stops every entry of `state`, newest first, removes their paths, the state file and the lab dir if empty. */
export async function stopLab(paths: LabPaths, state: LabState): Promise<void> {
  const failures: string[] = []
  for (const entry of [...state.entries].reverse()) {
    try {
      await (stoppers[entry.kind] ?? (() => Promise.resolve()))(entry)
      for (const path of entry.paths) rmSync(path, { recursive: true, force: true })
      state.entries = state.entries.filter((e) => e !== entry)
    } catch (error) {
      failures.push(`${entry.name}: ${errorMessage(error)}`)
    }
  }
  if (failures.length > 0) {
    writeLabState(paths, state)
    throw new OperationError(`lab down could not stop ${failures.join('; ')}`, `Fix that, then run: svcops lab down`)
  }
  rmSync(paths.stateFile, { force: true })
  if (existsSync(paths.dir) && readdirSync(paths.dir).length === 0) rmdirSync(paths.dir)
}

export interface LabEntryStatus {
  name: string
  kind: string
  running: boolean
  pid?: number
  port?: number
  url?: string
}

/** What the state file lists and whether each part still runs. */
export function labStatus(options: { dir?: string; stacksDir?: string } = {}): {
  up: boolean
  complete: boolean
  stateFile: string
  envFile?: string
  entries: LabEntryStatus[]
} {
  const paths = labPaths(options)
  const state = readLabState(paths)
  if (!state) return { up: false, complete: false, stateFile: paths.stateFile, entries: [] }
  const entries = state.entries.map((e) => ({
    name: e.name,
    kind: e.kind,
    running: (checkers[e.kind] ?? ((x: LabEntry) => x.paths.every((p) => existsSync(p))))(e),
    ...(e.pid !== undefined ? { pid: e.pid } : {}),
    ...(e.port !== undefined ? { port: e.port } : {}),
    ...(e.url ? { url: e.url } : {}),
  }))
  return {
    up: entries.some((e) => e.running),
    complete: state.complete,
    stateFile: paths.stateFile,
    ...(state.envFile ? { envFile: state.envFile } : {}),
    entries,
  }
}

/** Stops what the state file lists. Idempotent: without a state file there is nothing to do. */
export async function labDown(options: { dir?: string; stacksDir?: string } = {}): Promise<{ stopped: string[] }> {
  const paths = labPaths(options)
  const state = readLabState(paths)
  if (!state) return { stopped: [] }
  const names = [...state.entries].reverse().map((e) => e.name)
  await stopLab(paths, state)
  return { stopped: names }
}

/** What `lab down` would stop (for --dry-run). */
export function labDownPlan(options: { dir?: string; stacksDir?: string } = {}): string[] {
  const state = readLabState(labPaths(options))
  return state
    ? [...state.entries].reverse().map((e) => `${e.name}: ${e.stop}${e.paths.length ? `; then remove ${e.paths.join(', ')}` : ''}`)
    : []
}

/** Refuses when a lab runs in this dir; cleans up after a lab whose processes are all gone (a crash). */
async function clearStaleLab(paths: LabPaths): Promise<void> {
  // Checked before anything starts, so the refusal has no side effect.
  refuseForeignEnvironmentFile(paths.envFile)
  const state = readLabState(paths)
  if (!state) return
  const status = labStatus({ dir: paths.dir, stacksDir: dirname(paths.envFile) })
  if (status.entries.some((e) => e.running && e.kind !== 'files')) {
    throw new OperationError(`A lab is already up in ${paths.dir} (started ${state.startedAt}).`, 'Run: svcops lab down')
  }
  events.info(`Cleaning up after a lab that is no longer running (${paths.stateFile}).`)
  await stopLab(paths, state)
}
