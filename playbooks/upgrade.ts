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
 * node or zx, this file is `svcops upgrade recording` (its options: playbooks/lib/recording-commands.ts;
 * what the command does with them: playbooks/lib/recording-actions.ts).
 */
import { diagnoseHost, doctorPreflight } from '../src/recording/doctor/doctor-steps.ts'
import { backupAndVerify } from '../src/recording/backup-step.ts'
import { snapshotContent } from '../src/recording/content-steps.ts'
import { verifyFleet } from '../src/recording/fleet-check.ts'
import { alreadyOnTarget, preflight, stagePackages } from '../src/recording/preflight.ts'
import { checkRollbackReady } from '../src/recording/rollback-preconditions.ts'
import type { RecordingContext } from '../src/recording/recording-context.ts'
import type { RecordingParams } from '../src/recording/recording-params.ts'
import { recordingRollout, toleratedFailures } from '../src/recording/recording-rollout.ts'
import { recordingSystem } from '../src/recording/recording-system.ts'
import {
  checkStatusAndLogs,
  installPackage,
  reviewConfig,
  startService,
  stopService,
  verifyHost,
  waitHealthy,
} from '../src/recording/target-steps.ts'
import type { Run } from '../src/runs/engine.ts'
import type { Playbook } from '../src/runs/playbook.ts'
import { upgradeRecordingCommand } from './lib/recording-actions.ts'
import { UPGRADE_RECORDING } from './lib/recording-commands.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'
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
  const tolerated = await run.rollout(recordingRollout(run, rollBackOneHost), async (h) => {
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

if (startedAsScript(import.meta)) await runScript(import.meta, UPGRADE_RECORDING, upgradeRecordingCommand(recording))
