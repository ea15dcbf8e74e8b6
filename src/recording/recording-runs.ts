/**
 * Runs of the recording service's playbooks: a new run (its record, the environment lock, the
 * journal), a resume or a rollback of a run from its journal, and the dry run of each — the same
 * playbook in plan mode with a journal kept in memory. The playbook itself is given by the caller
 * (`playbooks/upgrade.ts`), so this module never depends on a playbook file.
 */
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { Journal, newRunRecord, type RunRecord } from '../runs/journal.ts'
import type { PlannedStep } from '../runs/engine.ts'
import {
  continuationOf,
  journalStep,
  planRun,
  rehearsalJournal,
  resumeRun,
  startRun,
  type Playbook,
  type RunOutcome,
} from '../runs/playbook.ts'
import { parseMaxFail, planBatches } from '../runs/rollout.ts'
import { recordingTargets } from './recording-platforms.ts'
import {
  closeRecordingContext,
  lockRecordingEnvironment,
  openRecordingRun,
  recordingContext,
  selectHosts,
  type DepsFactory,
  type RecordingContext,
} from './recording-context.ts'

export interface UpgradeRequest {
  env: Environment
  to: string
  hosts?: string[]
  batch?: number
  maxFail?: string
  autoRollback?: boolean
  breakLock?: boolean
  /** Maintenance window from the start of the run, in ms (`--window`). */
  windowMs?: number
  /** `resume ID --retry`: the failed, rolled-back run whose verified backup and snapshot this run reuses. */
  retryOf?: RunRecord
  /** Recorded in the run, so a resume follows the same procedure (`RunRecord.procedure`). */
  procedure?: 'downgrade'
}

/** The dry run: what would be done, step by step, with the exact commands. */
export interface RunPlan {
  environment: string
  what: 'upgrade' | 'resume' | 'rollback'
  runId?: string
  target: string
  /** Rollout order: `[[canary], [batch 1...], ...]`. */
  batches: string[][]
  window?: string
  steps: PlannedStep[]
}

const SEMVER = /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/

/** Checks a requested version before anything is planned or changed. */
export function assertVersion(version: string, flag = '--to'): void {
  if (!SEMVER.test(version)) throw new BadInputError(`${flag}: '${version}' is not a version; expected a version like 2.0.0.`)
}

/** The record of a new upgrade run (validated: hosts, batch size, --max-fail, version). */
export function newUpgradeRecord(req: UpgradeRequest): RunRecord {
  assertVersion(req.to)
  const hosts = selectHosts(recordingTargets(req.env), req.hosts, req.env.file)
  const batch = req.batch ?? 1
  const maxFail = req.maxFail ?? '0'
  parseMaxFail(maxFail, hosts.length)
  return newRunRecord({
    kind: 'upgrade',
    environment: req.env.name,
    envFile: req.env.file,
    targetVersion: req.to,
    hosts: planBatches(hosts, batch)
      .flat()
      .map((h) => h.name),
    batchSize: batch,
    maxFail,
    autoRollback: req.autoRollback ?? true,
    ...(req.windowMs ? { deadline: new Date(Date.now() + req.windowMs).toISOString() } : {}),
    ...(req.retryOf ? retriedFacts(req.retryOf) : {}),
    ...(req.procedure ? { procedure: req.procedure } : {}),
  })
}

/**
 * What a retry takes over from the run it retries: the same verified backup, the schema it was taken
 * on and the snapshot of that time (so a second rollback re-creates what was written since).
 */
function retriedFacts(old: RunRecord): Partial<RunRecord> {
  if (old.phase !== 'rolled-back' || !old.backupId || !old.fingerprintBefore)
    throw new BadInputError(
      `Run ${old.id} is ${old.phase}${old.backupId ? '' : ' without a verified backup'}: only a rolled-back upgrade with its backup can be retried.`,
      `Start a new upgrade: svcops upgrade recording --env ${old.environment} --to ${old.targetVersion}`,
    )
  return { backupId: old.backupId, fingerprintBefore: old.fingerprintBefore, snapshotIds: old.snapshotIds ?? [] }
}

/** The record of a check of every host that changes nothing worth a journal (`svcops verify recording`). */
export function newVerifyRecord(env: Environment): RunRecord {
  return newRunRecord({ kind: 'verify', environment: env.name, envFile: env.file, hosts: recordingTargets(env).map((h) => h.name) })
}

/** Starts a new run of `playbook` (`svcops upgrade recording`). */
export async function startRecordingRun(
  playbook: Playbook<RecordingContext>,
  req: UpgradeRequest,
  openDeps?: DepsFactory,
): Promise<RunOutcome> {
  const record = newUpgradeRecord(req)
  const { lock, takeOver } = await lockRecordingEnvironment(req.env, record, req.breakLock ? { breakLock: true } : {})
  const journal = Journal.create(record)
  events.info(
    `Run ${record.id}: upgrade ${req.env.recording?.package ?? ''} to ${req.to} on ${record.hosts.join(', ')} (environment ${req.env.name}).`,
  )
  return startRun({ playbook, journal, lock, open: openRecordingRun(req.env, takeOver, req.breakLock ?? false, openDeps) })
}

/** Continues run `id` from its journal, or rolls it back with `rollback: true` (`svcops resume`). */
export async function resumeRecordingRun(
  playbook: Playbook<RecordingContext>,
  id: string,
  options: { rollback?: boolean; breakLock?: boolean },
  openDeps?: DepsFactory,
): Promise<RunOutcome> {
  const { journal, record, env } = continuationOf(playbook, id, options)
  const { lock, takeOver } = await lockRecordingEnvironment(env, record, {
    resuming: id,
    ...(options.breakLock ? { breakLock: true } : {}),
  })
  const open = openRecordingRun(env, [...takeOver, id], options.breakLock ?? false, openDeps)
  return resumeRun({ playbook, journal, lock, open }, options.rollback ? { rollback: true } : {})
}

/** The dry run of a new upgrade: the playbook in plan mode; reads versions, the lock and the package files only. */
export async function planRecordingUpgrade(playbook: Playbook<RecordingContext>, req: UpgradeRequest): Promise<RunPlan> {
  const record = newUpgradeRecord(req)
  const journal = Journal.inMemory(record)
  const steps = await planned(playbook, req.env, journal, 'start')
  return {
    environment: req.env.name,
    what: 'upgrade',
    target: req.to,
    batches: planBatches(
      record.hosts.map((name) => ({ name })),
      record.batchSize,
    ).map((b) => b.map((h) => h.name)),
    ...(req.windowMs ? { window: describeWindow(req.windowMs) } : {}),
    steps,
  }
}

/** The dry run of `svcops resume ID` (or of its rollback): what is left, from the journal. */
export async function planRecordingContinuation(
  playbook: Playbook<RecordingContext>,
  id: string,
  options: { rollback: boolean },
): Promise<RunPlan> {
  const continuation = continuationOf(playbook, id, options)
  const { env, record, rollingBack, nothingToUndo } = continuation
  const steps = await planned(playbook, env, rehearsalJournal(continuation), rollingBack ? 'rollback' : 'resume')
  return {
    environment: env.name,
    what: rollingBack ? 'rollback' : 'resume',
    runId: id,
    target: record.targetVersion,
    batches: planBatches(
      record.hosts.map((name) => ({ name })),
      record.batchSize,
    ).map((b) => b.map((h) => h.name)),
    steps: [
      journalStep(continuation, record.kind, {
        unfinished: `the last: ${lastStep(continuation.journal)}`,
        more: [`take the run lock of environment '${env.name}' again as this run`],
      }),
      ...(nothingToUndo
        ? [{ step: 'nothing to roll back' as const, title: 'no host was stopped by this run; it is only marked failed', actions: [] }]
        : steps),
    ],
  }
}

function lastStep(journal: Journal): string {
  const last = journal.entries().at(-1)
  return last ? `${last.step}${last.host ? ` on ${last.host}` : ''} (${last.status})` : 'none'
}

async function planned(
  playbook: Playbook<RecordingContext>,
  env: Environment,
  journal: Journal,
  what: 'start' | 'resume' | 'rollback',
): Promise<PlannedStep[]> {
  const ctx = await recordingContext(env, journal)
  try {
    return await planRun(playbook, ctx, journal, what)
  } finally {
    await closeRecordingContext(ctx)
  }
}

function describeWindow(ms: number): string {
  const s = Math.round(ms / 1000)
  const text = [
    s >= 3600 ? `${Math.floor(s / 3600)}h` : '',
    s % 3600 >= 60 ? `${Math.floor((s % 3600) / 60)}m` : '',
    s % 60 ? `${s % 60}s` : '',
  ].join('')
  return `${text} from the start: a batch starts only if, judged by the longest batch so far, it ends inside the window; otherwise what changed is rolled back`
}

/** The plan as text, one step per block. */
export function renderPlan(plan: RunPlan): string {
  const head =
    plan.what === 'upgrade'
      ? `Dry run: upgrade of environment '${plan.environment}' to ${plan.target} (nothing will be changed).`
      : `Dry run: ${plan.what} of run ${plan.runId ?? '?'} in environment '${plan.environment}' (nothing will be changed).`
  const lines = [head]
  if (plan.window) lines.push(`Window: ${plan.window}`)
  else if (plan.what === 'upgrade') lines.push('Window: none (--window not given)')
  lines.push(`Rollout: ${plan.batches.map((b, i) => `${i === 0 ? 'canary' : `batch ${i}`} [${b.join(', ')}]`).join(' -> ')}`, '')
  for (const s of plan.steps) {
    lines.push(`${s.host ? `[${s.host}] ` : ''}${s.batch ? `${s.batch}: ` : ''}${s.step} — ${s.title}`)
    for (const a of s.actions) lines.push(`    ${a}`)
  }
  return lines.join('\n')
}
