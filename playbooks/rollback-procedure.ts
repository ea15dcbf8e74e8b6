/**
 * The recording service's rollback (seed, Versioning > Recording service, "Rollback"): stop the
 * service; downgrade the package to the previous version; restore the database backup only if the
 * schema changed; start the service. Made lossless: recordings written after the backup are
 * exported before the restore and re-created after it, and every host is verified. The upgrade's
 * failure policy (playbooks/upgrade.ts) runs this same procedure; `svcops resume ID` continues it.
 *
 * The script that runs it on its own is playbooks/rollback.ts: it needs the recording service's
 * system, which playbooks/upgrade.ts builds from this file and the upgrade, so the procedure and
 * the script are two files (one would import the other both ways).
 */
import type { HostFailure, Run } from '../src/runs/engine.ts'
import type { Playbook } from '../src/runs/playbook.ts'
import { Phase } from '../src/runs/step.ts'
import type { RecordingContext as Ctx } from '../src/recording/recording-context.ts'
import type { RecordingParams } from '../src/recording/recording-params.ts'
import type { RecordingTarget as Host } from '../src/recording/recording-platform.ts'
import { checkStatusAndLogs, installPackage, startService, stopService, verifyHost, waitHealthy } from '../src/recording/target-steps.ts'
import { backupAndVerify } from '../src/recording/backup-step.ts'
import { preflight, stagePackages } from '../src/recording/preflight.ts'
import { checkRollbackReady, startOnWhatTheyHave } from '../src/recording/rollback-preconditions.ts'
import { chooseSchemaBackup, chosenBackup, exportAllRecordings, restoreTargetBackup } from '../src/recording/schema-backup.ts'
import { decideRestore, decisionOf, exportLaterRecordings, hostsOf, leftStopped, schemaChanged } from '../src/recording/rollback-steps.ts'
import { recreateLaterRecordings, restoreBackup, rollbackSummary, verifyRecreated } from '../src/recording/rollback-steps.ts'
import { rollbackRecordingSite } from './site/recording.ts'

/** The rollback of a run, in the seed's order. Returns what it did, in one line. */
export async function rollBackRecording(run: Run<Ctx>, options: { dataLoss: boolean }): Promise<string> {
  const decision = decisionOf(await run.step(decideRestore, options)) // restore only if the schema changed
  const hosts = hostsOf(run.ctx, decision)
  const previous = (h: Host) => run.ctx.journal.run.params.previousVersions[h.name]
  await run
    .step(checkRollbackReady, { by: 'rollback', restore: decision.restore, hosts })
    .catch((e: unknown) => startOnWhatTheyHave(run, e)) // backup, packages, hosts, rights: before anything stops
  if (decision.restore) await run.step(exportLaterRecordings) // recordings written after the backup
  await backOnto(run, hosts, previous, () => (decision.restore ? run.step(restoreBackup) : undefined))
  return rollbackSummary(run.ctx, decision, await verifyAll(run, hosts, decision.restore))
}

/** One host back on its previous version while the rollout goes on (`--max-fail`); left stopped when the schema changed. */
export async function rollBackOneHost(run: Run<Ctx>, failure: HostFailure, h: Host): Promise<void> {
  const back = run.inPhase(Phase.hostRollback)
  const changed = await schemaChanged(run.ctx) // its previous version cannot run on a changed schema
  await back.onHost(h, stopService)
  if (changed) return leftStopped(failure, h)
  await back.onHost(h, installPackage, run.ctx.journal.run.params.previousVersions[h.name])
  for (const step of [startService, waitHealthy, checkStatusAndLogs, verifyHost]) await back.onHost(h, step)
}

/**
 * `rollback recording --to V` across a schema change: every host gets V and the newest verified
 * backup taken on V is restored; what was written since is re-created. Today's database is backed
 * up first: if this fails, the run's own rollback puts it back.
 */
async function downgradeAcrossSchema(run: Run<Ctx>): Promise<void> {
  const hosts = run.ctx.allTargets
  await run.step(preflight) // scopes, database privileges, room for the backup, installed versions
  await run.everyHost(hosts, (h) => run.onHost(h, stagePackages)) // V and today's package on every host
  const backup = chosenBackup(await run.step(chooseSchemaBackup)) // the newest verified backup taken on V
  await run.step(backupAndVerify) // today's database: the way back if this fails
  await run.step(exportAllRecordings) // V's backup is older: what was written since is re-created
  await backOnto(
    run,
    hosts,
    () => run.ctx.journal.run.targetVersion,
    () => run.step(restoreTargetBackup, backup),
  )
  await verifyAll(run, hosts, true)
}

/** The seed's four steps on `hosts`: 1. stop the service, 2. install `version`, 3. `restore` the database (if it must), 4. start. */
async function backOnto(
  run: Run<Ctx>,
  hosts: Host[],
  version: (h: Host) => string | undefined,
  restore: () => Promise<unknown> | undefined,
) {
  await run.everyHost(hosts, (h) => run.onHost(h, stopService))
  await run.everyHost(hosts, (h) => run.onHost(h, installPackage, version(h)))
  await restore()
  await run.everyHost(hosts, async (h) => {
    for (const step of [startService, waitHealthy, checkStatusAndLogs]) await run.onHost(h, step)
  })
}

/** After a restore, what was written since the backup re-created (nothing is lost); every host verified. */
async function verifyAll(run: Run<Ctx>, hosts: Host[], restored: boolean): Promise<{ data?: Record<string, unknown> }> {
  const first = restored ? hosts[0] : undefined
  const recreated = first ? await run.onHost(first, recreateLaterRecordings) : {}
  await run.everyHost(hosts, (h) => run.onHost(h, verifyHost))
  if (first) await run.onHost(first, verifyRecreated)
  return recreated
}

/** The playbook of `rollback recording --to V` across a schema change; its own failure is rolled back like an upgrade's. */
export const downgradeRecording: Playbook<Ctx, RecordingParams> = {
  kind: 'upgrade',
  what: (record) => `Rollback to ${record.targetVersion} across a schema change`,
  rollbackCommand: (record) => `svcops rollback recording --env ${record.environment} --run ${record.id}`,
  procedure: downgradeAcrossSchema,
  rollback: rollBackRecording,
  site: rollbackRecordingSite, // the site's steps: playbooks/site/
}
