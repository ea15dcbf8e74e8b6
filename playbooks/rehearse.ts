#!/usr/bin/env node
/**
 * Playbook: rehearse an upgrade of the recording service before the window. The environment's
 * verified backup is restored into the rehearsal's scratch database; on the stack's rehearsal host
 * the current release starts on the copy, its session there is checked (a host whose configuration
 * names another database stops the rehearsal before any migration) and its recordings are listed;
 * then the real upgrade's
 * steps run there — stop, install the target, review configuration, start (its migrations run on
 * the copy, timed), wait until healthy, check status and logs, verify the content (every recording
 * listed before is listed after; a test recording written and read) — and the real rollback's —
 * the copy restored when the schema changed, the previous release installed and started, timed.
 * Production is read, never changed (checked at the end); the scratch database is dropped and the
 * rehearsal host's service stopped when the run ends, also when interrupted.
 *
 *   npx zx playbooks/rehearse.ts --env prod --to 2.1.0 [--batch 2] [--window 90m] [--dry-run]
 */
import { diagnoseHost } from '../src/recording/doctor/doctor-steps.ts'
import { errorMessage } from '../src/core/errors.ts'
import { snapshotContent } from '../src/recording/content-steps.ts'
import { stagePackages } from '../src/recording/preflight.ts'
import type { RecordingParams } from '../src/recording/recording-params.ts'
import { checkServiceUsesCopy } from '../src/recording/rehearse/copy-in-use.ts'
import type { RehearsalContext } from '../src/recording/rehearse/rehearsal-context.ts'
import { predict, describePrediction, type Measures, type Prediction } from '../src/recording/rehearse/prediction.ts'
import {
  checkProductionUnchanged,
  readProduction,
  recordPrediction,
  restoreForRollback,
  restoreRehearsalCopy,
  stopRehearsalService,
  takeRehearsalBackup,
  type ProductionFacts,
} from '../src/recording/rehearse/rehearsal-steps.ts'
import { productionBatches, rehearsalSystem, type RehearseRequest } from '../src/recording/rehearse/rehearsal-system.ts'
import { checkStatusAndLogs, installPackage, reviewConfig, startService, verifyHost, waitHealthy } from '../src/recording/target-steps.ts'
import type { Run } from '../src/runs/engine.ts'
import type { Playbook, RunOutcome } from '../src/runs/playbook.ts'
import { planSystemRun, renderRunPlan, startSystemRun } from '../src/runs/run-actions.ts'
import type { RunPlan } from '../src/runs/run-system.ts'
import { printPlanOn, showRunOn, type CommandIO } from '../src/edge/command-io.ts'
import { REHEARSE_RECORDING, type RehearseRecordingFlags } from './lib/rehearse-commands.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'

type Ctx = RehearsalContext

/** The procedure, top to bottom. */
async function rehearse(run: Run<Ctx>): Promise<void> {
  const { ctx } = run
  const h = ctx.host
  const to = ctx.journal.run.targetVersion
  const production = (await run.step(readProduction)).data as ProductionFacts | undefined // versions, schema, size, right to migrate
  const from = production?.from ?? '(the version production runs)'
  await run.onHost(h, stagePackages) // the target and the current package on the rehearsal host
  await run.step(takeRehearsalBackup) // a recent verified backup, or a new one (pg_dump only reads)
  await run.onHost(h, stopRehearsalService) // the rehearsal host's service, never production's
  await run.step(restoreRehearsalCopy) // the copy, in the scratch database
  await run.onHost(h, installPackage, from) // the current release, as production runs it
  await run.onHost(h, startService)
  await run.onHost(h, waitHealthy)
  await run.onHost(h, checkServiceUsesCopy, 'current') // its session is on the copy, else stop before anything migrates
  await run.step(snapshotContent) // every recording the copy lists before the upgrade
  const m: Measures = {}
  try {
    m.stopMs = await timed(() => run.onHost(h, stopRehearsalService)) // 1. stop
    m.installMs = await timed(() => run.onHost(h, installPackage, to)) // 2. install the target
    await run.onHost(h, reviewConfig) // 3. review configuration changes
    m.firstStartMs = await timed(async () => {
      await run.onHost(h, startService) // 4. start: the migrations run on the copy
      await run.onHost(h, waitHealthy)
    })
    await run.onHost(h, checkServiceUsesCopy, 'target') // the migration ran on the copy; production's schema as it was
    await run.onHost(h, checkStatusAndLogs) // 5. status and the last log lines
    m.verifyMs = await timed(() => run.onHost(h, verifyHost)) // every recording listed before is listed; a test recording
    m.restartMs = await timed(async () => {
      await run.onHost(h, stopRehearsalService) // a later host's start: the schema is migrated already
      await run.onHost(h, startService)
      await run.onHost(h, waitHealthy)
    })
    m.rollbackMs = await timed(async () => {
      await run.onHost(h, stopRehearsalService) // the rollback as the real one: stop,
      m.rollbackRestoreMs = Number((await run.step(restoreForRollback)).data?.restoreMs ?? 0) // restore when the schema changed,
      await run.onHost(h, installPackage, from) // the previous release,
      await run.onHost(h, startService)
      await run.onHost(h, waitHealthy)
      await run.onHost(h, verifyHost) // and every recording there again
    })
  } catch (failure) {
    await run.onHost(h, diagnoseHost, failure) // the doctor's causes on the rehearsal host
    await run.step(recordPrediction, await predictionOf(run, production, m, failure))
    throw failure
  }
  await run.step(checkProductionUnchanged) // production's versions and schema as they were
  await run.step(recordPrediction, await predictionOf(run, production, m))
}

/** How long `fn` took, in ms. */
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = Date.now()
  await fn()
  return Date.now() - started
}

/** The prediction from what was measured (or the failure, with the service's log lines since its start). */
async function predictionOf(run: Run<Ctx>, production: ProductionFacts | undefined, m: Measures, failure?: unknown): Promise<Prediction> {
  const { ctx } = run
  const record = ctx.journal.run
  const windowMs = record.params.deadline ? Date.parse(record.params.deadline) - Date.parse(record.startedAt) : undefined
  const logLines = failure === undefined ? [] : await ctx.platform.logsSinceStart(ctx.host).catch(() => [])
  return predict(m, {
    from: production?.from ?? '',
    to: record.targetVersion,
    fingerprint: production?.fingerprint ?? '',
    databaseBytes: production?.databaseBytes ?? 0,
    batches: productionBatches(ctx.production, record.params.batchSize),
    ...(windowMs !== undefined ? { windowMs } : {}),
    ...(record.params.fingerprintAfter ? { schemaChanged: record.params.fingerprintAfter !== record.params.fingerprintBefore } : {}),
    ...(failure === undefined ? {} : { failure: { cause: errorMessage(failure), logLines } }),
  })
}

/** The playbook: the procedure; its failure policy needs no rollback (nothing in production is stopped). */
export const rehearseRecording: Playbook<Ctx, RecordingParams> = {
  kind: 'rehearse',
  what: (record) => `Rehearsal of ${record.targetVersion}`,
  rollbackCommand: (record) =>
    `svcops rehearse recording --env ${record.environment} --to ${record.targetVersion} (a rehearsal starts over)`,
  // `svcops resume` refuses a rehearsal (src/recording/recording-system.ts): it is started over.
  afterInterruption: (record) =>
    `A rehearsal is not resumed; rehearse again: svcops rehearse recording --env ${record.environment} --to ${record.targetVersion}`,
  procedure: rehearse,
}

/** The rehearsal as the engine runs it. */
export const rehearsal = rehearsalSystem(rehearseRecording)

/** `svcops rehearse recording`: the rehearsal run; throws (exit 1) when the rehearsed upgrade failed. */
export function rehearseRecordingService(request: RehearseRequest): Promise<RunOutcome> {
  return startSystemRun(rehearsal, request)
}

/** `svcops rehearse recording --dry-run`: the procedure in plan mode; reads only. */
export function planRehearsal(request: RehearseRequest): Promise<RunPlan> {
  return planSystemRun(rehearsal, request)
}

/** The prediction a rehearsal run journaled, if it got that far. */
export function predictionOfRun(journal: { entries(): { step: string; data?: Record<string, unknown> }[] }): Prediction | undefined {
  return journal.entries().findLast((e) => e.step === recordPrediction.id && e.data)?.data as Prediction | undefined
}

/** `svcops rehearse recording`, and this file run as a script. */
export async function rehearseRecordingCommand(flags: RehearseRecordingFlags, io: CommandIO): Promise<void> {
  const env = await io.environment()
  const request: RehearseRequest = {
    env,
    to: flags.to,
    batch: flags.batch,
    ...(flags.window ? { windowMs: flags.window } : {}),
    ...(flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}),
  }
  if (flags.dryRun) {
    const plan = await planRehearsal(request)
    printPlanOn(io, plan, () => renderRunPlan(rehearsal, plan), { spread: true })
    return
  }
  const { Journal } = await import('../src/runs/journal.ts')
  await showRunOn(io, () => rehearseRecordingService(request), {
    ...(flags.metricsFile ? { metricsFile: flags.metricsFile } : {}),
    human: (outcome) => {
      const p = predictionOfRun(Journal.open(outcome.runId))
      return [`Run ${outcome.runId}: ${outcome.phase}.`, ...(p ? describePrediction(p) : [])].join('\n')
    },
  })
}

if (startedAsScript(import.meta)) await runScript(import.meta, REHEARSE_RECORDING, rehearseRecordingCommand)
