#!/usr/bin/env node
/**
 * Playbook: rehearse an upgrade of the recording service before the window (docs/upgrade.md,
 * "Rehearse first"). The environment's verified backup is restored into the scratch database; on
 * the stack's rehearsal host the current release starts on the copy (its session there checked) and
 * its recordings are listed; then the real upgrade's steps run there (its migrations run on the
 * copy, timed), the content is verified, and the real rollback's (restore when the schema changed),
 * timed. Production is read, never changed (checked at the end); the scratch database is dropped
 * and the rehearsal host's service stopped when the run ends, also when interrupted.
 *
 *   npx zx playbooks/rehearse.ts --env prod --to 2.1.0 [--batch 2] [--window 90m] [--dry-run]
 */
import { diagnoseHost } from '../src/recording/doctor/doctor-steps.ts'
import { snapshotContent } from '../src/recording/content-steps.ts'
import { stagePackages } from '../src/recording/preflight.ts'
import type { RecordingParams } from '../src/recording/recording-params.ts'
import { checkServiceUsesCopy } from '../src/recording/rehearse/copy-in-use.ts'
import type { Measures } from '../src/recording/rehearse/prediction.ts'
import type { RehearsalContext } from '../src/recording/rehearse/rehearsal-context.ts'
import { predictionOf, timed } from '../src/recording/rehearse/rehearsal-measures.ts'
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
import { rehearsalSystem, type RehearseRequest } from '../src/recording/rehearse/rehearsal-system.ts'
import { checkStatusAndLogs, installPackage, reviewConfig, startService, verifyHost, waitHealthy } from '../src/recording/target-steps.ts'
import type { Run } from '../src/runs/engine.ts'
import type { Playbook, RunOutcome } from '../src/runs/playbook.ts'
import { startSystemRun } from '../src/runs/run-actions.ts'
import { rehearseRecordingCommand } from './lib/rehearse-actions.ts'
import { REHEARSE_RECORDING } from './lib/rehearse-commands.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'

/** The prediction a rehearsal run journaled (its tests read it here). */
export { predictionOfRun } from '../src/recording/rehearse/rehearsal-measures.ts'

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

if (startedAsScript(import.meta)) await runScript(import.meta, REHEARSE_RECORDING, rehearseRecordingCommand(rehearsal))
