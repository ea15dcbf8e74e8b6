/**
 * The recording service as the run engine runs it (src/runs/run-system.ts): how `svcops upgrade
 * recording`'s request becomes a run (hosts, batch size, --max-fail, version and window checked
 * before anything is read), how its environment is locked (the database's run lock), how its
 * context is opened and closed, and how its dry run and its report read. The playbooks are given
 * by playbooks/upgrade.ts (`recordingSystem(playbookOf)`), so this module never depends on a
 * playbook file.
 */
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { soakOf } from '../config/analysis.ts'
import { assertVersion } from '../releases/versions.ts'
import type { Journal } from '../runs/journal.ts'
import type { LockPolicy } from '../runs/lock-policy.ts'
import type { Playbook } from '../runs/playbook.ts'
import { newRunRecord, type RunRecord } from '../runs/run-record.ts'
import type { NewRun, RunPlan, RunSystem } from '../runs/run-system.ts'
import { parseMaxFail, planBatches } from '../runs/rollout.ts'
import {
  closeRecordingContext,
  lockRecordingEnvironment,
  openRecordingRun,
  recordingContext,
  selectHosts,
  type RecordingContext,
} from './recording-context.ts'
import { emptyRecordingParams, type RecordingParams } from './recording-params.ts'
import { recordingTargets } from './recording-platforms.ts'
import { batchesOf, recordingDescription } from './recording-description.ts'
import { gatePromotion } from './promotion-gate.ts'
import { describeLatestRehearsal, requirePassingRehearsal } from './rehearse/latest-rehearsal.ts'

/** `svcops upgrade recording` (and `rollback recording --to`, `resume --retry`) as a request. */
export interface UpgradeRequest {
  env: Environment
  to: string
  hosts?: string[]
  batch?: number
  maxFail?: string
  autoRollback?: boolean
  lockPolicy?: LockPolicy
  /** Maintenance window from the start of the run, in ms (`--window`). */
  windowMs?: number
  /** `resume ID --retry`: the failed, rolled-back run whose verified backup and snapshot this run reuses. */
  retryOf?: RunRecord<RecordingParams>
  /** Recorded in the run, so a resume follows the same procedure (`RunRecord.procedure`). */
  procedure?: 'downgrade'
  /** `rollback recording --to V`: moving to an older version is what was asked. */
  downgrade?: boolean
  /** `--pause-after-canary`: wait after the verified canary for `svcops runs promote|abort ID`. */
  pauseAfterCanary?: boolean
  /** `--soak`, in ms: the canary's analysis before batch 1 (default: the stack's `analysis.soak`). */
  soakMs?: number
  /** `--skip-promotion-gate`: go without the earlier environment's upgrade (svcops:upgrade.promoteFrom); recorded in the run. */
  skipPromotionGate?: boolean
}

/** The recording service as the engine runs it. */
export type RecordingSystem = RunSystem<RecordingParams, UpgradeRequest, RecordingContext>

export { recordingDescription } from './recording-description.ts'

/** A new upgrade run's fields from its request (validated: hosts, batch size, --max-fail, version). */
export function newUpgradeRun(req: UpgradeRequest): NewRun<RecordingParams> {
  assertVersion(req.to)
  const hosts = selectHosts(recordingTargets(req.env), req.hosts, req.env.file)
  const batch = req.batch ?? 1
  const maxFail = req.maxFail ?? '0'
  parseMaxFail(maxFail, hosts.length)
  return {
    kind: 'upgrade',
    targetVersion: req.to,
    autoRollback: req.autoRollback ?? true,
    ...(req.procedure ? { procedure: req.procedure } : {}),
    params: {
      ...emptyRecordingParams(),
      hosts: planBatches(hosts, batch)
        .flat()
        .map((h) => h.name),
      batchSize: batch,
      maxFail,
      ...(req.windowMs ? { deadline: new Date(Date.now() + req.windowMs).toISOString() } : {}),
      ...(req.retryOf ? retriedFacts(req.retryOf) : {}),
      ...(req.downgrade || req.procedure === 'downgrade' ? { downgrade: true } : {}),
      ...(req.pauseAfterCanary ? { pauseAfterCanary: true } : {}),
      ...(req.skipPromotionGate ? { skipPromotionGate: true } : {}),
      ...soakParam(req, hosts.length),
    },
  }
}

/** The record of a new upgrade run (the dry run's, and the tests' that drive steps themselves). */
export function newUpgradeRecord(req: UpgradeRequest): RunRecord<RecordingParams> {
  return newRunRecord({ ...newUpgradeRun(req), system: 'recording', environment: req.env.name, envFile: req.env.file })
}

/**
 * What a retry takes over from the run it retries: the same verified backup, the schema it was taken
 * on and the snapshot of that time (so a second rollback re-creates what was written since).
 */
function retriedFacts(old: RunRecord<RecordingParams>): Partial<RecordingParams> {
  const { backupId, fingerprintBefore, snapshotIds } = old.params
  if (old.phase !== 'rolled-back' || !backupId || !fingerprintBefore)
    throw new BadInputError(
      `Run ${old.id} is ${old.phase}${backupId ? '' : ' without a verified backup'}: only a rolled-back upgrade with its backup can be retried.`,
      `Start a new upgrade: svcops upgrade recording --env ${old.environment} --to ${old.targetVersion}`,
    )
  return { backupId, fingerprintBefore, snapshotIds: snapshotIds ?? [] }
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

function lastStep(journal: Journal): string {
  const last = journal.entries().at(-1)
  return last ? `${last.step}${last.host ? ` on ${last.host}` : ''} (${last.status})` : 'none'
}

/**
 * A rehearsal (playbooks/rehearse.ts) acts on the rehearsal host and a scratch copy: continued as
 * one of this system's runs it would act on production, so it is refused; a rehearsal starts over.
 */
function refuseRehearsal(run: RunRecord<RecordingParams>): void {
  if (run.kind === 'rehearse')
    throw new BadInputError(
      `Run ${run.id} is a rehearsal; a rehearsal is not resumed or rolled back (it changed nothing in production), it starts over.`,
      `Rehearse again: svcops rehearse recording --env ${run.environment} --to ${run.targetVersion}`,
    )
}

/** The recording service as the engine runs it, each run following the playbook `playbookOf` names for it. */
export function recordingSystem(
  playbookOf: (run: RunRecord<RecordingParams>) => Playbook<RecordingContext, RecordingParams>,
): RecordingSystem {
  return {
    ...recordingDescription,
    newRun: newUpgradeRun,
    announce: (run, env) =>
      `Run ${run.id}: upgrade ${env.recording?.package ?? ''} to ${run.targetVersion} on ${run.params.hosts.join(', ')} (environment ${env.name}).`,
    lock: async (env, run, options) => {
      refuseRehearsal(run)
      // A new upgrade (scheduled ones too) meets the stack's rehearsal policy before any lock or run folder.
      if (run.kind === 'upgrade' && !options.resuming && !run.params.downgrade) {
        // The promotion gate first: what it found is kept in the run (its record is written after the lock).
        const promotion = await gatePromotion(env, run.targetVersion, run.params.skipPromotionGate ?? false)
        if (promotion) run.params.promotion = promotion
        await requirePassingRehearsal(env, run.targetVersion, run.params.hosts)
      }
      return lockRecordingEnvironment(env, run, options)
    },
    open: (env, journal, options) => openRecordingRun(env, options.takeOver, options.lockPolicy)(journal),
    async openToPlan(env, journal) {
      const ctx = await recordingContext(env, journal)
      return { ctx, close: () => closeRecordingContext(ctx) }
    },
    playbook: (run) => {
      refuseRehearsal(run)
      return playbookOf(run)
    },
    plan: {
      title: (plan) => `Dry run: upgrade of environment '${plan.environment}' to ${plan.target} (nothing will be changed).`,
      facts: (run, req) => ({
        batches: batchesOf(run.params),
        ...(req?.windowMs ? { window: describeWindow(req.windowMs) } : {}),
        ...(req && !req.downgrade ? { rehearsal: describeLatestRehearsal(req.env, run.targetVersion) } : {}),
      }),
      lines: (plan: RunPlan) => [
        ...(typeof plan.window === 'string'
          ? [`Window: ${plan.window}`]
          : plan.what === 'upgrade'
            ? ['Window: none (--window not given)']
            : []),
        `Rollout: ${((plan.batches as string[][] | undefined) ?? []).map((b, i) => `${i === 0 ? 'canary' : `batch ${i}`} [${b.join(', ')}]`).join(' -> ')}`,
        ...(typeof plan.rehearsal === 'string' ? [plan.rehearsal] : []),
      ],
      continuation: (journal, env) => ({
        what: journal.run.kind,
        unfinished: `the last: ${lastStep(journal)}`,
        more: [`take the run lock of environment '${env.name}' again as this run`],
      }),
      nothingToUndo: 'no host was stopped by this run; it is only marked failed',
    },
  }
}

/** The run's soak: `--soak`, else the stack's `analysis.soak`; none for a downgrade (there is nothing newer to judge). */
function soakParam(req: UpgradeRequest, hosts: number): { soakMs?: number } {
  if (req.downgrade || req.procedure === 'downgrade') return {}
  // One target: no host stays on the old release to judge the canary against.
  if (req.soakMs !== undefined && hosts < 2)
    throw new BadInputError(
      `--soak: the run upgrades ${hosts} target, so none stays on the old release to compare the canary with; expected at least two hosts (--hosts, or the stack's recording.hosts).`,
    )
  const ms = hosts < 2 ? undefined : soakOf(req.soakMs, req.env.upgrade?.analysis)
  return ms ? { soakMs: ms } : {}
}
