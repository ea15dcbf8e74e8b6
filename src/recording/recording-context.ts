/**
 * What every step of the recording service's playbooks shares: the environment, the platform it
 * runs on and its targets, the settings derived from the stack file, the journal, and the
 * product's APIs (`deps`). `openRecordingRun` opens it for a run (each target's lock taken) and
 * closes it after; `lockRecordingEnvironment` takes the environment's lock first.
 */
import { requireSection } from '../config/load.ts'
import type { Environment, RecordingConfig } from '../config/schema.ts'
import { BadInputError, LockedError, errorMessage, withFacts } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { Journal } from '../runs/journal.ts'
import { listEnvironmentRuns, openRunToContinue, type RunAccess } from '../runs/run-listing.ts'
import { recordingDescription } from './recording-description.ts'
import { isFinished, type RunRecord } from '../runs/run-record.ts'
import { isBackupRun } from '../backup/held-by-runs.ts'
import { acquireEnvironmentLock, breakRefused, type EnvironmentLock, type LockHolder } from '../runs/lock.ts'
import type { LockPolicy } from '../runs/lock-policy.ts'
import type { Opened } from '../runs/playbook.ts'
import type { UpgradeDeps } from './deps.ts'
import type { RecordingParams } from './recording-params.ts'
import { openUpgradeDeps } from './deps-wiring.ts'
import type { RecordingPlatform, RecordingTarget } from './recording-platform.ts'
import { openRecordingPlatform } from './recording-platforms.ts'
import { settingsFor, type RecordingSettings } from './recording-settings.ts'

/** Everything a step of the recording service's playbooks needs. */
export interface RecordingContext {
  env: Environment
  rec: RecordingConfig
  journal: Journal<RecordingParams>
  /** The platform the service runs on (hosts, Kubernetes): every step reaches the service through it. */
  platform: RecordingPlatform
  /** Targets of this run in rollout order (canary first): hosts, or on Kubernetes the Deployment. */
  targets: RecordingTarget[]
  /** Every target of the environment: a database restore stops all of them, not only this run's. */
  allTargets: RecordingTarget[]
  deps: UpgradeDeps
  settings: RecordingSettings
}

/** Opens the product's APIs for an environment (the real ones, or a test's). */
export type DepsFactory = (env: Environment) => Promise<UpgradeDeps>

/** Target names given with --hosts, checked against the environment. */
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
  journal: Journal<RecordingParams>,
  openDeps: DepsFactory = openUpgradeDeps,
): Promise<RecordingContext> {
  const rec = requireSection(env, 'recording')
  const settings = settingsFor(env, rec)
  const platform = openRecordingPlatform(env, settings)
  const allTargets = platform.targets
  const targets = journal.run.params.hosts.map((n) => allTargets.find((t) => t.name === n)).filter((t): t is RecordingTarget => !!t)
  return { env, rec, journal, platform, targets, allTargets, deps: await openDeps(env), settings }
}

/** Closes what a context opened: the platform's connections, and the manager session (tokens stay valid until they expire). */
export async function closeRecordingContext(ctx: RecordingContext): Promise<void> {
  await ctx.deps.close().catch((error: unknown) => events.warn(`Logging out of the manager failed: ${errorMessage(error)}`))
  await ctx.platform.close()
}

/**
 * Opens the context of a run and takes each target's own lock (a dead run this one takes over,
 * `takeOver`, may hold them). Closing releases them.
 */
export function openRecordingRun(env: Environment, takeOver: string[], lockPolicy: LockPolicy, openDeps?: DepsFactory) {
  return async (journal: Journal<RecordingParams>): Promise<Opened<RecordingContext>> => {
    const ctx = await recordingContext(env, journal, openDeps)
    const run = journal.run
    const holder = { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt }
    const close = async () => {
      await ctx.platform.unlockTargets(run.id)
      await closeRecordingContext(ctx)
    }
    try {
      await ctx.platform.lockTargets(holder, { takeOver, lockPolicy })
      await ctx.platform.connect()
    } catch (error) {
      journal.update({ phase: 'failed', finishedAt: new Date().toISOString(), cause: errorMessage(error) })
      await close()
      throw error
    }
    return { ctx, close, records: ctx.platform.records() }
  }
}

/**
 * Takes the environment lock for `run`. A run that died holding it must be resumed or rolled back
 * first: starting a new one on top of a half-upgraded fleet is refused (exit 3) unless `lockPolicy` is `break-any`.
 */
export async function lockRecordingEnvironment(
  env: Environment,
  run: Pick<RunRecord, 'id' | 'holder' | 'startedAt'>,
  options: { lockPolicy?: LockPolicy; resuming?: string },
): Promise<{ lock: EnvironmentLock; takeOver: string[] }> {
  const rec = requireSection(env, 'recording')
  const lock = await acquireEnvironmentLock(rec.database, {
    environment: env.name,
    holder: { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt },
    ...options,
    judgeDead: (dead) =>
      options.lockPolicy === 'break-any' ? undefined : unfinishedHolder(env, dead, options.lockPolicy === 'break-finished'),
  })
  return { lock, takeOver: [lock.deadHolder?.runId, lock.broken?.runId].filter((x): x is string => !!x) }
}

/** False for a run that ended before its backup (refused, a no-op): it changed nothing, so it is never "the run to roll back". */
function changedSomething(run: RunRecord): boolean {
  if (run.phase === 'no-op') return false
  return !(run.phase === 'failed' && typeof run.params.backupId !== 'string')
}

/**
 * A dead holder's run that did not finish refuses a new run, naming the two commands that finish
 * it; with `--break-lock` (and no `--force`), also what breaking it would risk.
 */
function unfinishedHolder(env: Environment, dead: LockHolder, breaking: boolean): Error | undefined {
  let where = 'an unknown step'
  try {
    const journal = Journal.open(dead.runId)
    // A rehearsal changed nothing in production: killed, it leaves nothing to finish (the next one drops its copy);
    // nor does a backup run (the restore is one transaction, the others are run again).
    if (isFinished(journal.run) || journal.run.kind === 'rehearse' || isBackupRun(journal.run)) return undefined
    const last = journal.entries().at(-1)
    if (last) where = `${last.step}${last.host ? ` on ${last.host}` : ''}`
  } catch {
    // No local journal: the run was started elsewhere; treat it as unfinished.
  }
  const held = `run ${dead.runId} (${dead.holder}, since ${dead.since}) holds environment '${env.name}' and was interrupted during ${where} without finishing`
  if (breaking) return breakRefused(held, dead.runId)
  return withFacts(
    new LockedError(
      `Environment '${env.name}': ${held}.`,
      `Continue it: svcops resume ${dead.runId}   or roll it back: svcops resume ${dead.runId} --rollback`,
    ),
    { lockedBy: dead, unfinishedRun: dead.runId },
  )
}

/**
 * The run `svcops rollback recording` acts on: `runId`, or the environment's newest upgrade run not
 * yet rolled back — from the local folder or the environment's store (a run started on another
 * machine is checked, and copied into the local folder first unless `access.dryRun`: run-listing.ts).
 */
export async function findRunToRollBack(env: Environment, runId?: string, access: RunAccess = {}): Promise<Journal> {
  // This system's runs: the local folder and its own store in the environment.
  const systems = [recordingDescription]
  const upgrades = runId
    ? []
    : (await listEnvironmentRuns(env, systems)).filter(
        (r) => r.environment === env.name && r.kind === 'upgrade' && r.system === 'recording' && changedSomething(r),
      )
  const id = runId ?? upgrades.find((r) => r.phase !== 'rolled-back')?.id
  // Neither here nor in the environment: the local folder's own sentence.
  const journal = id ? ((await openRunToContinue(env, systems, id, access)) ?? Journal.open(id)) : undefined
  if (!id || !journal) {
    // The newest upgrade was rolled back already (automatically, or on request): say which, not that there is none.
    const undone = upgrades[0]
    throw new BadInputError(
      undone
        ? `There is no upgrade run of environment '${env.name}' left to roll back: its newest, ${undone.id} (to ${undone.targetVersion}), was already rolled back${undone.rollbackRequested ? ' on request' : ` automatically${undone.cause ? ` after: ${undone.cause.replace(/\.$/, '')}` : ''}`}.`
        : `There is no upgrade run of environment '${env.name}' to roll back.`,
      undone
        ? `See it with: svcops runs show ${undone.id}; to move every host to another version: svcops rollback recording --env ${env.name} --to VERSION`
        : `Give a version instead: svcops rollback recording --env ${env.name} --to VERSION`,
    )
  }
  const run = journal.run
  if (run.system !== 'recording')
    throw new BadInputError(
      `Run ${id} is an upgrade of the live production system, not of the recording service.`,
      `Roll it back with: svcops rollback live --env ${env.name} --run ${id}`,
    )
  if (run.environment !== env.name) throw new BadInputError(`Run ${id} belongs to environment '${run.environment}', not '${env.name}'.`)
  if (run.phase === 'rolled-back') throw new BadInputError(`Run ${id} was already rolled back.`)
  if (run.phase === 'no-op')
    throw new BadInputError(`Run ${id} changed nothing (every host was already on ${run.targetVersion}); there is nothing to roll back.`)
  return journal
}
