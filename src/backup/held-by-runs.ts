/**
 * What the backup commands owe the environment's runs, wherever those runs were started: retention
 * reads the backups they hold from the environment's run stores (not only this machine's runs
 * folder), and keeps everything when a store cannot be read; `backup restore` and `backup delete`
 * take the environment's lock, so they never act beside a run that is running, paused, or was
 * interrupted without finishing.
 */
import { requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { LockedError, errorMessage, withFacts } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { acquireEnvironmentLock, type EnvironmentLock, type LockHolder } from '../runs/lock.ts'
import { listEnvironmentRuns } from '../runs/run-listing.ts'
import { isFinished, isRunId, type RunKind, type RunRecord } from '../runs/run-record.ts'
import type { SystemDescription } from '../runs/system-description.ts'
import { heldBackups } from './prune.ts'

/** The backups runs hold (`heldBackups`), or why they are unknown (then retention removes nothing). */
export interface HeldByRuns {
  held: Map<string, string>
  /**
   * Set when which backups runs hold is unknown: a store of the environment's runs could not be
   * read, or holds a record that is refused (changed after it was signed; it may be a paused run's).
   */
  unknown?: string
  /** The runs read (refused ones left out, never followed), for the lock of `backup restore`/`delete`. */
  runs: RunRecord[]
}

/**
 * The backups runs can still roll back to, from every run of `env` by `system` (the one whose
 * database is backed up): the local runs folder and that system's store in the environment
 * (`listEnvironmentRuns`), so a run paused or interrupted on another machine keeps its backup. A
 * store that cannot be read, or a record in it that is refused (a byte changed in a paused run's row
 * must not free its backup), gives `unknown` instead of a guess; other systems' stores (the live
 * host's) are not asked, as their runs hold no database backup. Retention, `backup list`, `backup
 * restore` and `backup delete` all read it here.
 */
export async function readHeldBackups(env: Environment, system: SystemDescription): Promise<HeldByRuns> {
  let listed: RunRecord[]
  try {
    listed = await listEnvironmentRuns(env, [system], { strict: true, system: system.name, includeRefused: true })
  } catch (error) {
    return unknownHeld(env, errorMessage(error))
  }
  const runs = listed.filter((r) => r.trust?.state !== 'refused')
  const refused = listed.filter((r) => r.trust?.state === 'refused')
  const [first] = refused
  if (first?.trust?.state !== 'refused') return { held: heldBackups(runs), runs }
  const more = refused.length > 1 ? ` (and ${refused.length - 1} more refused record(s))` : ''
  return { ...unknownHeld(env, `${first.trust.sentence.replace(/\.$/, '')}${more}`), runs }
}

/** Which backups runs hold is unknown because of `why`: said once, and nothing is held for sure. */
function unknownHeld(env: Environment, why: string): HeldByRuns {
  events.warn(
    `Retention keeps every backup of '${env.name}' and backup delete needs --force: ${why.replace(/\.$/, '')}, so which backups runs still need is unknown.`,
  )
  return { held: new Map(), unknown: why, runs: [] }
}

const BACKUP_KINDS: ReadonlySet<RunKind> = new Set(['backup', 'restore', 'delete', 'prune'])

/** True for a run of a backup kind (backup, restore, delete, prune): interrupted, it is run again, never resumed. */
export function isBackupRun(run: Pick<RunRecord, 'kind'>): boolean {
  return BACKUP_KINDS.has(run.kind)
}

/** What a backup command does, for its lock's row and its refusals. */
export interface BackupCommand {
  /** `backup restore`, `backup delete`. */
  verb: string
  /** What would have been changed ("restored", "deleted"). */
  done: string
}

/**
 * Takes environment `env`'s lock for a backup command's run (`run`: its id, who, since when), or
 * refuses naming the run that holds it: a run that is running or paused (its holder alive), or one
 * interrupted without finishing (its holder gone, its rollback may still need the database as it
 * is). `runs` are the environment's runs (`listEnvironmentRuns`), to tell a finished run's leftover
 * row from an unfinished one; a backup command's own run leaves nothing to finish.
 */
export async function lockForBackupCommand(
  env: Environment,
  command: BackupCommand,
  runs: RunRecord[],
  run: Pick<LockHolder, 'runId' | 'holder' | 'since'>,
): Promise<EnvironmentLock> {
  const database = requireSection(env, 'recording').database
  const holder: LockHolder = { ...run, pid: process.pid }
  try {
    return await acquireEnvironmentLock(database, {
      environment: env.name,
      holder,
      judgeDead: (dead) => {
        const held = runs.find((r) => r.id === dead.runId)
        return held && (isFinished(held) || isBackupRun(held))
          ? undefined
          : refusal(env, command, dead, 'was interrupted without finishing')
      },
    })
  } catch (error) {
    const by = error instanceof LockedError ? (error.facts.lockedBy as LockHolder | null | undefined) : undefined
    if (by && error instanceof LockedError && !error.facts.refusedBackupCommand) throw refusal(env, command, by, 'is running or paused')
    throw error
  }
}

function refusal(env: Environment, command: BackupCommand, run: LockHolder, state: string): LockedError {
  if (!isRunId(run.runId))
    // Another backup command (its row names the command, not a run): it ends by itself.
    return withFacts(
      new LockedError(
        `${command.verb}: another command (${run.runId}, ${run.holder}, pid ${run.pid}, since ${run.since}) holds the lock of environment '${env.name}'; nothing was ${command.done}.`,
        'Wait for it to end, then run this again.',
      ),
      { lockedBy: run, refusedBackupCommand: true },
    )
  return withFacts(
    new LockedError(
      `${command.verb}: run ${run.runId} (${run.holder}, pid ${run.pid}, since ${run.since}) ${state} and holds the lock of environment '${env.name}'; nothing was ${command.done}.`,
      `Let it end, or end it first: svcops runs show ${run.runId} --env ${env.name}   then svcops resume ${run.runId} [--rollback] (or svcops runs abort ${run.runId} while it waits after its canary)`,
    ),
    { lockedBy: run, refusedBackupCommand: true },
  )
}
