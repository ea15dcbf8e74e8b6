#!/usr/bin/env node
/**
 * Playbook: upgrade the recording service (seed, Versioning > Recording service): back up the
 * database before upgrading; then on each host stop the service, install the new package, review
 * configuration changes, start the service (migrations run on first start), check status and the
 * last log lines; then the post-upgrade check. The canary goes first, alone, and migrates the
 * shared database; then batches of --batch hosts. Any failure after the first stop is rolled back
 * by playbooks/rollback-procedure.ts (unless --no-auto-rollback); before it, nothing has changed.
 *
 *   npx zx playbooks/upgrade.ts --env lab --to 2.0.0 [--batch 2] [--window 90m] [--dry-run]
 *
 * `--dry-run` runs this same procedure in plan mode: every step says what it would do and the exact
 * command it would run. Every run is journaled; `svcops resume ID` continues it after a kill. Run by
 * node or zx, this file is `svcops upgrade recording` (its options: playbooks/lib/recording-commands.ts).
 */
import type { Environment } from '../src/config/schema.ts'
import { diagnoseHost, doctorPreflight } from '../src/doctor/doctor-steps.ts'
import { backupAndVerify } from '../src/recording/backup-step.ts'
import { recordContentBeforeStop, snapshotContent } from '../src/recording/content-steps.ts'
import { verifyFleet } from '../src/recording/fleet-check.ts'
import { alreadyOnTarget, preflight, stagePackages } from '../src/recording/preflight.ts'
import { checkRollbackReady } from '../src/recording/rollback-preconditions.ts'
import { findRunToRollBack, type RecordingContext } from '../src/recording/recording-context.ts'
import type { RecordingParams } from '../src/recording/recording-params.ts'
import { recordingSystem, type UpgradeRequest } from '../src/recording/recording-system.ts'
import { schemaPathTo } from '../src/recording/schema-backup.ts'
import {
  checkStatusAndLogs,
  installPackage,
  reviewConfig,
  startService,
  stopService,
  verifyHost,
  waitHealthy,
} from '../src/recording/target-steps.ts'
import { requireSection } from '../src/config/load.ts'
import { schemaFingerprint } from '../src/drivers/fingerprint.ts'
import { databaseTarget, withDatabase } from '../src/drivers/postgres.ts'
import { ToleratedFailures, type HostFailure, type Run } from '../src/runs/engine.ts'
import type { Playbook, RunOutcome } from '../src/runs/playbook.ts'
import {
  planSystemContinuation,
  planSystemRun,
  renderRunPlan,
  resumeSystemRun,
  recordedRun,
  startSystemRun,
  type RecordedFrom,
} from '../src/runs/run-actions.ts'
import type { RunPlan } from '../src/runs/run-system.ts'
import { parseMaxFail, planBatches } from '../src/runs/rollout.ts'
import { confirmChange, printPlanOn, showRunOn, type CommandIO } from './lib/command-io.ts'
import { UPGRADE_RECORDING, type UpgradeRecordingFlags } from './lib/recording-commands.ts'
import { runScript, startedAsScript } from './lib/script.ts'
import { downgradeRecording, rollBackOneHost, rollBackRecording } from './rollback-procedure.ts'
import { upgradeRecordingSite } from './site/recording.ts'

/** The procedure, top to bottom. */
async function upgrade(run: Run<RecordingContext>): Promise<void> {
  const { ctx } = run
  const target = ctx.journal.run.targetVersion
  await run.step(preflight) // scopes, database privileges, room for the backup, installed versions
  if (await alreadyOnTarget(run)) return // every host on the target: no backup, no stop, a no-op run
  await run.step(doctorPreflight) // the seed's common problems knowable before a stop, on every host
  await run.everyHost(ctx.targets, (h) => run.onHost(h, stagePackages)) // target and previous package on every host
  await run.step(snapshotContent) // every recording and the row counts, to prove nothing is lost
  await run.step(backupAndVerify) // back up the database before upgrading; nothing stops before it
  await run.step(checkRollbackReady, { by: 'upgrade', restore: true, hosts: ctx.targets }) // what a rollback would need: the backup, previous packages or image, hosts, rights
  const tolerated = await run.rollout(rolloutOf(run), async (h) => {
    if (run.finished(verifyHost, h.name)) return // upgraded and verified before an interruption
    try {
      await run.onHost(h, stopService) // 1. stop the service
      await run.onHost(h, installPackage, target) // 2. install the new package
      await run.onHost(h, reviewConfig) // 3. review configuration changes
      await run.onHost(h, startService) // 4. start the service; migrations run on the first start
      await run.onHost(h, waitHealthy)
      await run.onHost(h, checkStatusAndLogs) // 5. check status and the last log lines
      await run.onHost(h, verifyHost) // post-upgrade check: GET /, the content list, a test recording
    } catch (failure) {
      await run.onHost(h, diagnoseHost, failure) // why it failed: the doctor on this host, before the rollback
      throw failure
    }
  })
  await run.step(verifyFleet, tolerated) // every host on the target; the schema fingerprint after
  if (tolerated.length) throw toleratedFailures(run, tolerated)
}

/** Canary, batches, --max-fail, the maintenance window (a resumed run has none) and the pause after the canary of this run. */
function rolloutOf(run: Run<RecordingContext>) {
  const record = run.ctx.journal.run.params
  return {
    batches: planBatches(run.ctx.targets, record.batchSize),
    maxFail: parseMaxFail(record.maxFail, run.ctx.targets.length),
    ...(record.deadline && !run.resumed ? { deadline: Date.parse(record.deadline) } : {}),
    beforeBatch: (batch: RecordingContext['targets']) => run.step(recordContentBeforeStop, batch),
    onTolerated: (failure: HostFailure, h: RecordingContext['targets'][number]) => rollBackOneHost(run, failure, h),
    ...(record.pauseAfterCanary ? { pauseAfterCanary: true } : {}), // wait for svcops runs promote|abort ID
  }
}

function toleratedFailures(run: Run<RecordingContext>, failures: HostFailure[]): ToleratedFailures {
  const record = { ...run.ctx.journal.run, ...run.ctx.journal.run.params }
  const upgraded = run.ctx.targets.length - failures.length
  return new ToleratedFailures(
    `Upgraded ${upgraded} of ${run.ctx.targets.length} hosts to ${record.targetVersion}; ${failures.map((f) => f.host).join(', ')} failed ` +
      `(within --max-fail ${record.maxFail}): ${failures[0]?.message ?? ''}`,
    `See the report: ${run.journal.file('report.md')}`,
  )
}

/** The playbook: this procedure, and the lossless rollback as its failure policy. */
export const upgradeRecording: Playbook<RecordingContext, RecordingParams> = {
  kind: 'upgrade',
  what: (record) => `Upgrade to ${record.targetVersion}`,
  rollbackCommand: (record) => `svcops rollback recording --env ${record.environment} --run ${record.id}`,
  procedure: upgrade,
  rollback: rollBackRecording,
  site: upgradeRecordingSite, // the site's steps: playbooks/site/
}

/** The recording service as the engine runs it: a downgrade across a schema change continues as one. */
export const recording = recordingSystem((run) => (run.procedure === 'downgrade' ? downgradeRecording : upgradeRecording))

// Entry points of the recording service's runs; the CLI (src/commands/upgrade.ts) and the tests call these.

/** `svcops upgrade recording`; throws RolledBackError (exit 4) when it failed and was rolled back. */
export function upgradeRecordingService(request: UpgradeRequest): Promise<RunOutcome> {
  return startSystemRun(recording, request)
}

/** `svcops upgrade recording --dry-run`: this playbook in plan mode; reads only. */
export function planRecordingService(request: UpgradeRequest): Promise<RunPlan> {
  return planSystemRun(recording, request)
}

/** `svcops resume ID [--rollback]`: continues an interrupted run from its journal, or rolls it back. */
export function resumeRecordingService(
  id: string,
  options: { rollback?: boolean; breakLock?: boolean; force?: boolean; env?: Environment } = {},
): Promise<RunOutcome> {
  return resumeSystemRun(recording, id, options)
}

/**
 * `svcops resume ID --retry`: the seed's "restore backup and retry" after a rolled-back upgrade whose
 * cause was fixed: a new run to the same target on the same hosts, reusing that run's verified backup.
 */
export function retryRecordingService(
  id: string,
  options: { breakLock?: boolean; force?: boolean; env?: Environment } = {},
): Promise<RunOutcome> {
  const { journal, env } = recordedRun(recording, id, options.env ? { env: options.env } : {})
  const old = journal.run
  return upgradeRecordingService({
    env,
    to: old.targetVersion,
    hosts: old.params.hosts,
    retryOf: old,
    ...(options.breakLock ? { breakLock: true, force: options.force ?? false } : {}),
  })
}

/** `svcops resume ID --dry-run`: what is left to do (or what the rollback would do); `from`: the stack given and the run read into memory. */
export function planRecordingResume(id: string, options: { rollback?: boolean } & RecordedFrom = {}): Promise<RunPlan> {
  const { rollback, ...from } = options
  return planSystemContinuation(recording, id, { rollback: rollback ?? false, ...from })
}

/**
 * `svcops rollback recording`: rolls back run `runId` (default: the environment's newest upgrade
 * run) with playbooks/rollback-procedure.ts, or with `to` moves every host to that version through this
 * playbook (backup, verification, and its own rollback on failure).
 */
export async function rollbackRecordingService(
  env: Environment,
  options: { runId?: string; to?: string; packageOnly?: boolean; breakLock?: boolean; force?: boolean; trustUnsigned?: boolean },
): Promise<RunOutcome> {
  const breaking = options.breakLock ? { breakLock: true, force: options.force ?? false } : {}
  if (options.to) return rollBackToVersion(env, options.to, options.packageOnly === true, breaking)
  const journal = await findRunToRollBack(env, options.runId, { trustUnsigned: options.trustUnsigned ?? false })
  return resumeRecordingService(journal.run.id, { rollback: true, env, ...breaking })
}

/**
 * `rollback recording --to V`: through this playbook when V runs on today's schema; across a schema
 * change, playbooks/rollback-procedure.ts's downgrade restores the newest verified backup taken on
 * V; without one, refused (schemaPathTo names what is missing). With `packageOnly` the backup is not
 * looked for: V is installed on today's schema through this playbook, and V's own start refusing a
 * newer schema fails the canary, which is rolled back.
 */
async function rollBackToVersion(
  env: Environment,
  to: string,
  packageOnly: boolean,
  breaking: { breakLock?: boolean; force?: boolean },
): Promise<RunOutcome> {
  const request = { env, to, downgrade: true, ...breaking }
  if (!packageOnly && (await acrossSchemaChange(env, to))) return startSystemRun(recording, { ...request, procedure: 'downgrade' })
  return startSystemRun(recording, request)
}

/** True when V runs on another schema than today's (refused, naming what is missing, when no verified backup was taken on it). */
async function acrossSchemaChange(env: Environment, to: string): Promise<boolean> {
  const rec = requireSection(env, 'recording')
  const fingerprint = await withDatabase(databaseTarget(rec.database), (c) => schemaFingerprint(c))
  return (await schemaPathTo(env, to, fingerprint)).restore
}

/** `svcops rollback recording --dry-run`: with `--to V`, the procedure the run would follow (the downgrade across a schema change). */
export async function planRecordingRollback(
  env: Environment,
  options: { runId?: string; to?: string; packageOnly?: boolean; trustUnsigned?: boolean },
): Promise<RunPlan> {
  if (options.to) {
    const request = { env, to: options.to, downgrade: true }
    if (!options.packageOnly && (await acrossSchemaChange(env, options.to)))
      return planSystemRun(recording, { ...request, procedure: 'downgrade' })
    return planRecordingService(request)
  }
  // Read into memory: a dry run writes nothing to the local runs folder.
  const journal = await findRunToRollBack(env, options.runId, { dryRun: true, trustUnsigned: options.trustUnsigned ?? false })
  return planRecordingResume(journal.run.id, { rollback: true, env, journal })
}

/** `svcops upgrade recording`, and this file run as a script: the dry run's plan, or the run once confirmed. */
export async function upgradeRecordingCommand(flags: UpgradeRecordingFlags, io: CommandIO): Promise<void> {
  const env = await io.environment()
  const hosts = flags.hosts
    ?.split(',')
    .map((h) => h.trim())
    .filter(Boolean)
  const request = {
    env,
    to: flags.to,
    ...(hosts ? { hosts } : {}),
    batch: flags.batch,
    maxFail: flags.maxFail,
    autoRollback: flags.autoRollback,
    ...(flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}),
    ...(flags.window ? { windowMs: flags.window } : {}),
    ...(flags.pauseAfterCanary ? { pauseAfterCanary: true } : {}),
  }
  if (flags.dryRun) {
    const plan = await planRecordingService(request)
    printPlanOn(io, plan, () => renderRunPlan(recording, plan), { spread: true })
    return
  }
  const prompts = await io.prompts()
  const targets = hosts ?? env.recording?.hosts.map((h) => h.name) ?? []
  await confirmChange(() => prompts.upgradePrompt('the recording service', env.name, 'recording', targets, flags.to), flags.yes)
  await showRunOn(io, () => upgradeRecordingService(request), flags.metricsFile ? { metricsFile: flags.metricsFile } : {})
}

if (startedAsScript(import.meta)) await runScript(import.meta, UPGRADE_RECORDING, upgradeRecordingCommand)
