/**
 * Where a rehearsal acts: the stack's rehearsal host (on Kubernetes the rehearsal's Job of the
 * target's image) as the only target, and the scratch database as the service's database. The
 * rehearsal's context is the recording context of that derived environment (so the upgrade's own
 * steps — install, start, wait, logs, content checks — run unchanged against the copy), plus the
 * production environment it only reads (versions, schema fingerprint, size, backups). Closing it
 * stops the service on the rehearsal host (deletes the Job) and drops the scratch database,
 * whatever way the rehearsal ended.
 */
import { requireSection } from '../../config/load.ts'
import type { Environment } from '../../config/schema.ts'
import { BadInputError, errorMessage } from '../../core/errors.ts'
import { events } from '../../core/events.ts'
import { databaseTarget, type DatabaseTarget } from '../../drivers/postgres.ts'
import type { Journal } from '../../runs/journal.ts'
import type { LockPolicy } from '../../runs/lock-policy.ts'
import type { Opened } from '../../runs/playbook.ts'
import { closeRecordingContext, recordingContext, type RecordingContext } from '../recording-context.ts'
import type { RecordingParams } from '../recording-params.ts'
import type { RecordingTarget } from '../recording-platform.ts'
import { settingsFor } from '../recording-settings.ts'
import { openUpgradeDeps } from '../deps-wiring.ts'
import { openRehearsalJobPlatform, rehearsalJobLimits } from '../kubernetes/rehearsal-job-platform.ts'
import { rehearsalJobName } from '../kubernetes/rehearsal-job.ts'
import { UnmarkedScratchError, dropScratch, scratchTarget } from './scratch-copy.ts'

/** A rehearsal's context: the recording context on the rehearsal host and the copy, and production to read. */
export interface RehearsalContext extends RecordingContext {
  /** The environment as the stack file gives it: read only (versions, fingerprint, size, backups). */
  production: Environment
  /** The service's database (read only) and the scratch copy the rehearsal works on. */
  databases: { production: DatabaseTarget; scratch: DatabaseTarget }
  /** The rehearsal host (on Kubernetes the rehearsal's Job), the run's one target. */
  host: RecordingTarget
  /** Why its timings cannot stand for production's, if they cannot (the prediction then gives no number). */
  limits: string[]
}

/**
 * The environment a rehearsal acts on: the scratch database as the service's database and, on
 * hosts, the stack's rehearsal host as the only host (its canary); on Kubernetes no host (the
 * rehearsal's target is its Job, rehearsal-job-platform.ts). Refused in one sentence where a
 * rehearsal cannot run: no `recording.rehearsal` section, or no rehearsal host on hosts.
 */
export function rehearsalEnvironment(env: Environment): Environment {
  const rec = requireSection(env, 'recording')
  const rehearsal = rec.rehearsal
  if (!rehearsal)
    throw new BadInputError(
      `${env.file}: recording.rehearsal: missing; expected { host, database }: the host a rehearsal runs on (none on Kubernetes) and its scratch database.`,
    )
  const { rehearsal: _kept, ...rest } = rec
  const database = { ...rec.database, name: rehearsal.database }
  if (rec.platform === 'kubernetes') return { ...env, recording: { ...rest, hosts: [], database } }
  if (!rehearsal.host)
    throw new BadInputError(
      `${env.file}: recording.rehearsal.host: missing; expected the host a rehearsal runs on (recording.platform hosts).`,
    )
  return { ...env, recording: { ...rest, hosts: [{ ...rehearsal.host, canary: true }], database } }
}

/** The name of a rehearsal's one target: the rehearsal host, or on Kubernetes its Job. */
export function rehearsalTargetName(env: Environment): string {
  const rec = requireSection(env, 'recording')
  return rec.platform === 'kubernetes' ? rehearsalJobName(env) : (rec.rehearsal?.host?.name ?? '')
}

/** The recording context of `derived` whose platform is the rehearsal's Job of `production` (Kubernetes). */
async function jobContext(production: Environment, derived: Environment, journal: Journal<RecordingParams>): Promise<RecordingContext> {
  const rec = requireSection(derived, 'recording')
  const settings = settingsFor(derived, rec)
  const platform = openRehearsalJobPlatform(production, settings, journal.run.id)
  return {
    env: derived,
    rec,
    journal,
    platform,
    targets: platform.targets,
    allTargets: platform.targets,
    deps: await openUpgradeDeps(derived),
    settings,
  }
}

/** The context of rehearsal run `journal` of `production`; nothing connects until used. */
export async function rehearsalContext(production: Environment, journal: Journal<RecordingParams>): Promise<RehearsalContext> {
  const derived = rehearsalEnvironment(production)
  const onKubernetes = production.recording?.platform === 'kubernetes'
  const ctx = onKubernetes ? await jobContext(production, derived, journal) : await recordingContext(derived, journal)
  const host = ctx.allTargets[0]
  if (!host) throw new BadInputError(`${production.file}: recording.rehearsal.host: missing.`)
  return {
    ...ctx,
    production,
    databases: { production: databaseTarget(requireSection(production, 'recording').database), scratch: scratchTarget(production) },
    host,
    limits: onKubernetes ? rehearsalJobLimits(production) : [],
  }
}

/**
 * Stops the service on the rehearsal host (deletes the rehearsal's Job) and drops the scratch
 * database; never throws (a cleanup that fails is said, with what to remove by hand).
 */
export async function cleanUpRehearsal(ctx: RehearsalContext): Promise<void> {
  try {
    await ctx.platform.stop(ctx.host)
  } catch (error) {
    events.warn(`Could not stop the service on the rehearsal host ${ctx.host.name}: ${errorMessage(error)}`)
  }
  try {
    if (await dropScratch(ctx.databases.production, ctx.databases.scratch))
      events.info(`Dropped the rehearsal's scratch database ${ctx.databases.scratch.name}.`)
  } catch (error) {
    // A database svcops did not make is not its to drop, by hand or otherwise: the refusal says so.
    if (error instanceof UnmarkedScratchError) events.warn(error.message)
    else
      events.warn(
        `Could not drop the rehearsal's scratch database ${ctx.databases.scratch.name}: ${errorMessage(error)}; drop it by hand (DROP DATABASE ${ctx.databases.scratch.name}).`,
      )
  }
}

/** Opens a rehearsal's context for a run; closing it cleans up (service stopped, copy dropped) and closes connections. */
export async function openRehearsal(
  production: Environment,
  journal: Journal<RecordingParams>,
  options: { takeOver: string[]; lockPolicy: LockPolicy },
): Promise<Opened<RehearsalContext>> {
  const ctx = await rehearsalContext(production, journal)
  const run = journal.run
  const holder = { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt }
  const close = async (): Promise<void> => {
    await cleanUpRehearsal(ctx)
    await ctx.platform.unlockTargets(run.id)
    await closeRecordingContext(ctx)
  }
  try {
    await ctx.platform.lockTargets(holder, options)
    await ctx.platform.connect()
  } catch (error) {
    journal.update({ phase: 'failed', finishedAt: new Date().toISOString(), cause: errorMessage(error) })
    await ctx.platform.unlockTargets(run.id)
    await closeRecordingContext(ctx)
    throw error
  }
  return { ctx, close }
}

/** The context of a rehearsal's dry run: reads only, cleans nothing. */
export async function openRehearsalToPlan(production: Environment, journal: Journal<RecordingParams>): Promise<Opened<RehearsalContext>> {
  const ctx = await rehearsalContext(production, journal)
  return { ctx, close: () => closeRecordingContext(ctx) }
}
