/**
 * What every step of the recording service's playbooks shares: the environment, its hosts with
 * their transports, the package and service drivers, the settings derived from the stack file, the
 * journal, and the product's APIs (`deps`). `openRecordingRun` opens it for a run (host locks
 * taken) and closes it after; `lockRecordingEnvironment` takes the environment's lock first.
 */
import { requireSection } from '../config/load.ts'
import type { Environment, RecordingConfig, RecordingHostConfig } from '../config/schema.ts'
import { BadInputError, LockedError, errorMessage, withFacts } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { Transport } from '../core/runner.ts'
import { findDebFile, packageDriver, type PackageDriver } from '../drivers/packages.ts'
import { serviceDriver, type ServiceDriver } from '../drivers/services.ts'
import { transportFor } from '../drivers/transports.ts'
import { isFinished, Journal, listRuns, type RunRecord } from '../runs/journal.ts'
import { acquireEnvironmentLock, acquireHostLock, releaseHostLock, type EnvironmentLock } from '../runs/lock.ts'
import { allOrFirstFailure } from '../runs/rollout.ts'
import type { Opened } from '../runs/playbook.ts'
import { clusterHandle, openRecordingCluster, type RecordingCluster } from './kubernetes/recording-deployment.ts'
import type { UpgradeDeps } from './deps.ts'
import { openUpgradeDeps } from './deps-wiring.ts'

/** A host taking part in a run. */
export interface HostHandle {
  name: string
  config: RecordingHostConfig
  transport: Transport
  url: string
}

/** Settings derived from the environment file, with the defaults of the lab's package layout. */
export interface RunSettings {
  package: string
  service: string
  configPath: string
  logPath: string
  errorPatterns: string[]
  healthTimeoutMs: number
  contentLimit: number
  /** The post-upgrade check's limit on the list's and the test write's answer, in ms. */
  slowResponseMs: number
  hostLockPath: string
  logLines: number
}

/** Everything a step of the recording service's playbooks needs. */
export interface RecordingContext {
  env: Environment
  rec: RecordingConfig
  journal: Journal
  /** Hosts of this run in rollout order (canary first). */
  hosts: HostHandle[]
  /** Every host of the environment: a database restore stops all of them, not only this run's. */
  allHosts: HostHandle[]
  pkg: PackageDriver
  svc: ServiceDriver
  deps: UpgradeDeps
  settings: RunSettings
  /** The Kubernetes platform (`recording.platform: kubernetes`): the Deployment is the one "host"; else undefined. */
  cluster?: RecordingCluster
  /** The local package file of a version (dpkg driver), else undefined. */
  packageFile(version: string): string | undefined
}

/** Opens the product's APIs for an environment (the real ones, or a test's). */
export type DepsFactory = (env: Environment) => Promise<UpgradeDeps>

/** Default settings for an environment's recording section. */
export function settingsFor(env: Environment, rec: RecordingConfig): RunSettings {
  const dir = env.product.dir
  return {
    package: rec.package,
    service: rec.service,
    configPath: rec.configPath ?? `/etc/opt/${dir}/recording.json`,
    logPath: rec.logPath ?? `/var/log/${dir}/recording.log`,
    errorPatterns: rec.errorPatterns ?? ['\\bERROR\\b', '\\bFATAL\\b', 'panic'],
    healthTimeoutMs: (rec.healthTimeoutSeconds ?? 60) * 1000,
    contentLimit: rec.contentLimit ?? 10_000,
    slowResponseMs: rec.slowResponseMs ?? 5_000,
    hostLockPath: '/var/lib/svcops/upgrade.lock',
    logLines: 50,
  }
}

/** Path of the host lock file on `h`. */
export function hostLockFile(ctx: Pick<RecordingContext, 'settings'>, h: HostHandle): string {
  return h.config.root ? `${h.config.root}${ctx.settings.hostLockPath}` : ctx.settings.hostLockPath
}

/** Host names given with --hosts, checked against the environment. */
export function selectHosts<T extends { name: string }>(all: T[], names: string[] | undefined, file: string): T[] {
  if (!names?.length) return all
  const unknown = names.filter((n) => !all.some((h) => h.name === n))
  if (unknown.length) {
    throw new BadInputError(
      `--hosts: ${unknown.map((n) => `'${n}'`).join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not a host of ${file}; expected one of ${all.map((h) => h.name).join(', ')}.`,
    )
  }
  return all.filter((h) => names.includes(h.name))
}

/** Builds the context of run `journal` (connections are lazy: nothing connects until used). */
export async function recordingContext(
  env: Environment,
  journal: Journal,
  openDeps: DepsFactory = openUpgradeDeps,
): Promise<RecordingContext> {
  const rec = requireSection(env, 'recording')
  const cluster = rec.platform === 'kubernetes' ? openRecordingCluster(env) : undefined
  const allHosts: HostHandle[] = cluster
    ? [clusterHandle(cluster)]
    : rec.hosts.map((config) => ({
        name: config.name,
        config,
        transport: transportFor(config),
        url: config.url,
      }))
  const hosts = journal.run.hosts.map((n) => allHosts.find((h) => h.name === n)).filter((h): h is HostHandle => !!h)
  const files = new Map<string, string>()
  return {
    env,
    rec,
    journal,
    hosts,
    allHosts,
    pkg: packageDriver(rec.packageDriver),
    svc: serviceDriver(rec.serviceDriver),
    deps: await openDeps(env),
    settings: settingsFor(env, rec),
    ...(cluster ? { cluster } : {}),
    packageFile(version) {
      if (rec.packageDriver !== 'dpkg') return undefined
      if (!files.has(version)) files.set(version, findDebFile(rec.packageDir, rec.package, version))
      return files.get(version)
    },
  }
}

/** Closes what a context opened: transports, and the manager session (tokens stay valid until they expire). */
export async function closeRecordingContext(ctx: RecordingContext): Promise<void> {
  await ctx.deps.close().catch((error: unknown) => events.warn(`Logging out of the manager failed: ${errorMessage(error)}`))
  await Promise.all(ctx.allHosts.map((h) => h.transport.close()))
  await ctx.cluster?.close()
}

/**
 * Opens the context of a run and takes the host lock of every host of the environment (a dead run
 * this one takes over, `takeOver`, may hold them). Closing releases the host locks.
 */
export function openRecordingRun(env: Environment, takeOver: string[], breakLock: boolean, openDeps?: DepsFactory) {
  return async (journal: Journal): Promise<Opened<RecordingContext>> => {
    const ctx = await recordingContext(env, journal, openDeps)
    const run = journal.run
    const holder = { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt }
    // A Deployment has no host lock: the environment's lock in the database is the run's.
    const locked = ctx.cluster ? [] : ctx.allHosts
    const close = async () => {
      await Promise.all(locked.map((h) => releaseHostLock(h.transport, hostLockFile(ctx, h), run.id).catch(() => undefined)))
      await closeRecordingContext(ctx)
    }
    try {
      await allOrFirstFailure(locked, (h) => acquireHostLock(h.transport, hostLockFile(ctx, h), holder, { takeOver, breakLock }))
      await ctx.cluster?.connect() // outside the cluster: the port-forward to the Service
    } catch (error) {
      journal.update({ phase: 'failed', finishedAt: new Date().toISOString(), cause: errorMessage(error) })
      await close()
      throw error
    }
    // On Kubernetes the stack file is the record: its copy in the run folder outlives a job's pod.
    return { ctx, close, ...(ctx.cluster ? { records: [env.file] } : {}) }
  }
}

/**
 * Takes the environment lock for `run`. A run that died holding it must be resumed or rolled back
 * first: starting a new one on top of a half-upgraded fleet is refused (exit 3) unless `breakLock`.
 */
export async function lockRecordingEnvironment(
  env: Environment,
  run: Pick<RunRecord, 'id' | 'holder' | 'startedAt'>,
  options: { breakLock?: boolean; resuming?: string },
): Promise<{ lock: EnvironmentLock; takeOver: string[] }> {
  const rec = requireSection(env, 'recording')
  const lock = await acquireEnvironmentLock(rec.database, {
    environment: env.name,
    holder: { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt },
    ...options,
  })
  const dead = lock.deadHolder
  if (dead && !options.breakLock) {
    let unfinished = true
    let where = 'an unknown step'
    try {
      const journal = Journal.open(dead.runId)
      unfinished = !isFinished(journal.run)
      const last = journal.entries().at(-1)
      if (last) where = `${last.step}${last.host ? ` on ${last.host}` : ''}`
    } catch {
      // No local journal: the run was started elsewhere; treat it as unfinished.
    }
    if (unfinished) {
      await lock.release()
      throw withFacts(
        new LockedError(
          `Environment '${env.name}': run ${dead.runId} (${dead.holder}, since ${dead.since}) died during ${where} without finishing.`,
          `Resume it: svcops resume ${dead.runId}   or roll it back: svcops rollback recording --env ${env.name} --run ${dead.runId}   (or --break-lock to ignore it)`,
        ),
        { lockedBy: dead, unfinishedRun: dead.runId },
      )
    }
  }
  return { lock, takeOver: [dead?.runId, lock.broken?.runId].filter((x): x is string => !!x) }
}

/** The run `svcops rollback recording` acts on: `runId`, or the environment's newest upgrade run not yet rolled back. */
export function findRunToRollBack(env: Environment, runId?: string): string {
  const id =
    runId ??
    listRuns().find((r) => r.environment === env.name && r.kind === 'upgrade' && r.system !== 'live' && r.phase !== 'rolled-back')?.id
  if (!id) {
    throw new BadInputError(
      `There is no upgrade run of environment '${env.name}' to roll back.`,
      `Give a version instead: svcops rollback recording --env ${env.name} --to VERSION`,
    )
  }
  const run = Journal.open(id).run
  if (run.system === 'live')
    throw new BadInputError(
      `Run ${id} is an upgrade of the live production system, not of the recording service.`,
      `Roll it back with: svcops rollback live --env ${env.name} --run ${id}`,
    )
  if (run.environment !== env.name) throw new BadInputError(`Run ${id} belongs to environment '${run.environment}', not '${env.name}'.`)
  if (run.phase === 'rolled-back') throw new BadInputError(`Run ${id} was already rolled back.`)
  return id
}
