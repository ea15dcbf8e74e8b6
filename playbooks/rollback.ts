#!/usr/bin/env node
/**
 * Playbook: roll back the recording service (seed, Versioning > Recording service, "Rollback"):
 * stop the service; downgrade the package to the previous version; restore the database backup only
 * if the schema changed; start the service. Made lossless: recordings written after the backup are
 * exported before the restore and re-created after it, and every host is verified. The steps are in
 * playbooks/rollback-procedure.ts (the upgrade's failure policy runs them too).
 *
 *   npx zx playbooks/rollback.ts --env lab [--run ID | --to VERSION] [--dry-run] [--yes]
 *
 * Run by node or zx, this file is `svcops rollback recording` (its options:
 * playbooks/lib/recording-commands.ts): the newest (or given) upgrade run rolled back from its
 * journal, or every host moved to VERSION through the upgrade path.
 */
import { BadInputError } from '../src/core/errors.ts'
import { renderRunPlan } from '../src/runs/run-actions.ts'
import { confirmChange, printPlanOn, showRunOn, type CommandIO } from './lib/command-io.ts'
import { ROLLBACK_RECORDING, type RollbackRecordingFlags } from './lib/recording-commands.ts'
import { runScript, startedAsScript } from './lib/script.ts'
import { planRecordingRollback, recording, rollbackRecordingService } from './upgrade.ts'

/** `svcops rollback recording`, and this file run as a script: the dry run's plan, or the rollback once confirmed. */
export async function rollbackRecordingCommand(flags: RollbackRecordingFlags, io: CommandIO): Promise<void> {
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
    const plan = await planRecordingRollback(env, options)
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
  const breaking = flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}
  await showRunOn(
    io,
    () => rollbackRecordingService(env, { ...options, ...breaking }),
    flags.metricsFile ? { metricsFile: flags.metricsFile } : {},
  )
}

if (startedAsScript(import.meta)) await runScript(import.meta, ROLLBACK_RECORDING, rollbackRecordingCommand)
