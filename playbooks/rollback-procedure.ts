/**
 * The rollback of the recording service (seed, Versioning > Recording service, "Rollback"):
 * stop the service; downgrade the package to the previous version; restore the database backup only
 * if the schema changed; start the service. Made lossless: recordings written after the backup are
 * exported before the restore and re-created after it, and every host is verified.
 *
 * `svcops rollback recording` and playbooks/rollback.ts run these steps; the same steps roll back a
 * failed upgrade automatically (the upgrade's failure policy in playbooks/upgrade.ts), continue a
 * rollback that was interrupted (`svcops resume ID`), and show what they would do (`--dry-run`).
 * They live apart from playbooks/rollback.ts because the upgrade imports them, and that command
 * imports the upgrade.
 */
import { events } from '../src/core/events.ts'
import type { HostFailure, Run } from '../src/runs/engine.ts'
import { Phase } from '../src/runs/step.ts'
import type { RecordingContext } from '../src/recording/recording-context.ts'
import type { RecordingParams } from '../src/recording/recording-params.ts'
import type { RecordingTarget } from '../src/recording/recording-platform.ts'
import { checkStatusAndLogs, installPackage, startService, stopService, verifyHost, waitHealthy } from '../src/recording/target-steps.ts'
import { backupAndVerify } from '../src/recording/backup-step.ts'
import { preflight, stagePackages } from '../src/recording/preflight.ts'
import { checkRollbackReady, startOnWhatTheyHave } from '../src/recording/rollback-preconditions.ts'
import { chooseSchemaBackup, chosenBackup, exportAllRecordings, restoreTargetBackup } from '../src/recording/schema-backup.ts'
import type { Playbook } from '../src/runs/playbook.ts'
import { rollbackRecordingSite } from './site/recording.ts'
import {
  decideRestore,
  decisionOf,
  exportLaterRecordings,
  hostsOf,
  recreateLaterRecordings,
  restoreBackup,
  verifyRecreated,
  type RestoreDecision,
} from '../src/recording/rollback-steps.ts'

/** The rollback of a run, in the seed's order. Returns what it did, in one line. */
export async function rollBackRecording(run: Run<RecordingContext>, options: { dataLoss: boolean }): Promise<string> {
  const { ctx } = run
  const previous = (h: RecordingTarget) => ctx.journal.run.params.previousVersions[h.name]
  const decision = decisionOf(await run.step(decideRestore, options)) // restore only if the schema changed
  const hosts = hostsOf(ctx, decision)
  await run
    .step(checkRollbackReady, { by: 'rollback', restore: decision.restore, hosts })
    .catch((e: unknown) => startOnWhatTheyHave(run, e)) // backup, packages, hosts, rights: before anything stops
  if (decision.restore) await run.step(exportLaterRecordings) // recordings written after the backup
  await run.everyHost(hosts, (h) => run.onHost(h, stopService)) // 1. stop the service
  await run.everyHost(hosts, (h) => run.onHost(h, installPackage, previous(h))) // 2. downgrade the package
  if (decision.restore) await run.step(restoreBackup) // 3. restore the database backup
  await run.everyHost(hosts, async (h) => {
    await run.onHost(h, startService) // 4. start the service
    await run.onHost(h, waitHealthy)
    await run.onHost(h, checkStatusAndLogs)
  })
  const first = hosts[0]
  const recreated = decision.restore && first ? await run.onHost(first, recreateLaterRecordings) : {} // nothing written after the backup is lost
  await run.everyHost(hosts, (h) => run.onHost(h, verifyHost))
  if (decision.restore && first) await run.onHost(first, verifyRecreated)
  return summaryOf(ctx, decision, Array.isArray(recreated.data?.recreated) ? recreated.data.recreated.length : 0)
}

/**
 * One host back on its previous version, the rest of the rollout going on (`--max-fail`). When the
 * schema changed, the old version cannot run on it: the host is left stopped and reported.
 */
export async function rollBackOneHost(run: Run<RecordingContext>, failure: HostFailure, h: RecordingTarget): Promise<void> {
  const back = run.inPhase(Phase.hostRollback)
  const schemaChanged = (await run.ctx.deps.database.fingerprint()) !== run.ctx.journal.run.params.fingerprintBefore
  await back.onHost(h, stopService)
  if (schemaChanged) {
    events.warn(
      `${h.name} failed (${failure.message}) and is left stopped: the schema changed, and its previous version cannot run on it.`,
      h.name,
    )
    return
  }
  await back.onHost(h, installPackage, run.ctx.journal.run.params.previousVersions[h.name])
  await back.onHost(h, startService)
  await back.onHost(h, waitHealthy)
  await back.onHost(h, checkStatusAndLogs)
  await back.onHost(h, verifyHost)
}

/**
 * `rollback recording --to V` when the schema changed since V: V cannot run on today's schema, so
 * every host stops, gets V, and the newest verified backup taken on V is restored; every recording
 * written since is re-created. Today's database is backed up first: if this fails, the run's own
 * rollback puts it back.
 */
async function downgradeAcrossSchema(run: Run<RecordingContext>): Promise<void> {
  const { ctx } = run
  const target = ctx.journal.run.targetVersion
  const first = ctx.allTargets[0]
  await run.step(preflight) // scopes, database privileges, room for the backup, installed versions
  await run.everyHost(ctx.allTargets, (h) => run.onHost(h, stagePackages)) // V and today's package on every host
  const backup = chosenBackup(await run.step(chooseSchemaBackup)) // the newest verified backup taken on V
  await run.step(backupAndVerify) // today's database: the way back if this fails
  await run.step(exportAllRecordings) // V's backup is older: what was written since is re-created
  await run.everyHost(ctx.allTargets, (h) => run.onHost(h, stopService)) // 1. stop the service
  await run.everyHost(ctx.allTargets, (h) => run.onHost(h, installPackage, target)) // 2. downgrade the package
  await run.step(restoreTargetBackup, backup) // 3. restore the database backup: the schema changed
  await run.everyHost(ctx.allTargets, async (h) => {
    await run.onHost(h, startService) // 4. start the service
    await run.onHost(h, waitHealthy)
    await run.onHost(h, checkStatusAndLogs)
  })
  if (first) await run.onHost(first, recreateLaterRecordings) // nothing written since V's backup is lost
  await run.everyHost(ctx.allTargets, (h) => run.onHost(h, verifyHost))
  if (first) await run.onHost(first, verifyRecreated)
}

/** The playbook of `rollback recording --to V` across a schema change; its own failure is rolled back like an upgrade's. */
export const downgradeRecording: Playbook<RecordingContext, RecordingParams> = {
  kind: 'upgrade',
  what: (record) => `Rollback to ${record.targetVersion} across a schema change`,
  rollbackCommand: (record) => `svcops rollback recording --env ${record.environment} --run ${record.id}`,
  procedure: downgradeAcrossSchema,
  rollback: rollBackRecording,
  site: rollbackRecordingSite, // the site's steps: playbooks/site/
}

function summaryOf(ctx: RecordingContext, decision: RestoreDecision, recreated: number): string {
  const run = ctx.journal.run.params
  const versions = Object.entries(run.previousVersions)
    .map(([h, v]) => `${h} ${v}`)
    .join(', ')
  if (!decision.restore) return `rolled back to ${versions}; database kept (${decision.reason})`
  return `rolled back to ${versions}; database restored from backup ${run.backupId ?? '?'} because ${decision.reason}; ${recreated} recording(s) written after the backup re-created`
}
