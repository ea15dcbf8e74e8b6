/**
 * What the recording service's commands do with their flags, over its run system: `svcops upgrade
 * recording` and `svcops rollback recording`, and playbooks/upgrade.ts and rollback.ts run as
 * scripts, call these with the system the upgrade playbook builds (`recording`), so this module
 * imports no playbook. The runs themselves start, continue and plan through the engine's one path
 * (src/runs/run-actions.ts): `startSystemRun(recording, request)` is `svcops upgrade recording`.
 */
import type { Environment } from '../../src/config/schema.ts'
import { requireSection } from '../../src/config/load.ts'
import { BadInputError } from '../../src/core/errors.ts'
import { schemaFingerprint } from '../../src/drivers/fingerprint.ts'
import { databaseTarget, withDatabase } from '../../src/drivers/postgres.ts'
import { findRunToRollBack } from '../../src/recording/recording-context.ts'
import type { RecordingSystem } from '../../src/recording/recording-system.ts'
import { schemaPathTo } from '../../src/recording/schema-backup.ts'
import { lockPolicyOf, type LockPolicy } from '../../src/runs/lock-policy.ts'
import type { RunOutcome } from '../../src/runs/playbook.ts'
import {
  planSystemContinuation,
  planSystemRun,
  recordedRun,
  renderRunPlan,
  resumeSystemRun,
  startSystemRun,
} from '../../src/runs/run-actions.ts'
import type { RunPlan } from '../../src/runs/run-system.ts'
import { confirmChange, printPlanOn, showRunOn } from '../../src/edge/command-io.ts'
import type { RollbackRecordingFlags, UpgradeRecordingFlags } from './recording-commands.ts'
import type { CommandMain } from '../../src/edge/script.ts'

/** `svcops upgrade recording`, and playbooks/upgrade.ts run as a script: the dry run's plan, or the run once confirmed. */
export function upgradeRecordingCommand(recording: RecordingSystem): CommandMain<UpgradeRecordingFlags> {
  return async (flags, io) => {
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
      lockPolicy: lockPolicyOf(flags),
      ...(flags.window ? { windowMs: flags.window } : {}),
      ...(flags.pauseAfterCanary ? { pauseAfterCanary: true } : {}),
      ...(flags.soak ? { soakMs: flags.soak } : {}),
      ...(flags.skipPromotionGate ? { skipPromotionGate: true } : {}),
    }
    if (flags.dryRun) {
      const plan = await planSystemRun(recording, request)
      printPlanOn(io, plan, () => renderRunPlan(recording, plan), { spread: true })
      return
    }
    const prompts = await io.prompts()
    const targets = hosts ?? env.recording?.hosts.map((h) => h.name) ?? []
    await confirmChange(() => prompts.upgradePrompt('the recording service', env.name, 'recording', targets, flags.to), flags.yes)
    await showRunOn(io, () => startSystemRun(recording, request), flags.metricsFile ? { metricsFile: flags.metricsFile } : {})
  }
}

/** `svcops rollback recording`, and playbooks/rollback.ts run as a script: the dry run's plan, or the rollback once confirmed. */
export function rollbackRecordingCommand(recording: RecordingSystem): CommandMain<RollbackRecordingFlags> {
  return async (flags, io) => {
    if (flags.run && flags.to)
      throw new BadInputError('--run and --to: both given; expected one of them (a run to undo, or a version to go to).')
    if (flags.packageOnly && !flags.to)
      throw new BadInputError("--package-only: given without --to; expected --to VERSION (the version to install on today's schema).")
    const env = await io.environment()
    const options = {
      ...(flags.run ? { runId: flags.run } : {}),
      ...(flags.to ? { to: flags.to } : {}),
      ...(flags.packageOnly ? { packageOnly: true } : {}),
      ...(flags.trustUnsignedRun ? { trustUnsigned: true } : {}),
    }
    if (flags.dryRun) {
      const plan = await planRecordingRollback(recording, env, options)
      printPlanOn(io, plan, () => renderRunPlan(recording, plan), { spread: false })
      return
    }
    const prompts = await io.prompts()
    await confirmChange(
      () =>
        flags.to
          ? `Roll back the recording service of '${env.name}' to ${flags.to}?`
          : prompts.rollbackPrompt('the recording service', env.name, 'recording', flags.run),
      flags.yes,
    )
    const lockPolicy = lockPolicyOf(flags)
    await showRunOn(
      io,
      () => rollbackRecording(recording, env, { ...options, lockPolicy }),
      flags.metricsFile ? { metricsFile: flags.metricsFile } : {},
    )
  }
}

/**
 * `svcops resume ID --retry`: the seed's "restore backup and retry" after a rolled-back upgrade whose
 * cause was fixed: a new run to the same target on the same hosts, reusing that run's verified backup.
 */
export function retryRecording(
  recording: RecordingSystem,
  id: string,
  options: { env?: Environment; lockPolicy?: LockPolicy } = {},
): Promise<RunOutcome> {
  const { journal, env } = recordedRun(recording, id, options.env ? { env: options.env } : {})
  const old = journal.run
  return startSystemRun(recording, {
    env,
    to: old.targetVersion,
    hosts: old.params.hosts,
    retryOf: old,
    lockPolicy: options.lockPolicy,
  })
}

/**
 * `svcops rollback recording`: rolls back run `runId` (default: the environment's newest upgrade
 * run) with playbooks/rollback-procedure.ts, or with `to` moves every host to that version through the
 * upgrade playbook (backup, verification, and its own rollback on failure); throws RolledBackError
 * (exit 4) when that move failed and was rolled back.
 */
export async function rollbackRecording(
  recording: RecordingSystem,
  env: Environment,
  options: { runId?: string; to?: string; packageOnly?: boolean; trustUnsigned?: boolean; lockPolicy?: LockPolicy },
): Promise<RunOutcome> {
  const { lockPolicy } = options
  if (options.to) {
    const request = { env, to: options.to, downgrade: true, lockPolicy }
    if (!options.packageOnly && (await acrossSchemaChange(env, options.to)))
      return startSystemRun(recording, { ...request, procedure: 'downgrade' })
    return startSystemRun(recording, request)
  }
  const journal = await findRunToRollBack(env, options.runId, { trustUnsigned: options.trustUnsigned ?? false })
  return resumeSystemRun(recording, journal.run.id, { rollback: true, env, lockPolicy })
}

/** `svcops rollback recording --dry-run`: with `--to V`, the procedure the run would follow (the downgrade across a schema change). */
export async function planRecordingRollback(
  recording: RecordingSystem,
  env: Environment,
  options: { runId?: string; to?: string; packageOnly?: boolean; trustUnsigned?: boolean },
): Promise<RunPlan> {
  if (options.to) {
    const request = { env, to: options.to, downgrade: true }
    if (!options.packageOnly && (await acrossSchemaChange(env, options.to)))
      return planSystemRun(recording, { ...request, procedure: 'downgrade' })
    return planSystemRun(recording, request)
  }
  // Read into memory: a dry run writes nothing to the local runs folder.
  const journal = await findRunToRollBack(env, options.runId, { dryRun: true, trustUnsigned: options.trustUnsigned ?? false })
  return planSystemContinuation(recording, journal.run.id, { rollback: true, env, journal })
}

/**
 * `rollback recording --to V`: true when V runs on another schema than today's, so the downgrade
 * (playbooks/rollback-procedure.ts) restores the newest verified backup taken on V; without one,
 * refused (schemaPathTo names what is missing). With `--package-only` the backup is not looked
 * for: V is installed on today's schema through the upgrade playbook, and V's own start refusing a
 * newer schema fails the canary, which is rolled back.
 */
async function acrossSchemaChange(env: Environment, to: string): Promise<boolean> {
  const rec = requireSection(env, 'recording')
  const fingerprint = await withDatabase(databaseTarget(rec.database), (c) => schemaFingerprint(c))
  return (await schemaPathTo(env, to, fingerprint)).restore
}
