/**
 * What `svcops backup run` does with its flags, over the nightly backup playbook it is given
 * (playbooks/backup.ts builds its command from this, so this module imports no playbook): the dry
 * run's steps, or the run through the engine's one path (src/runs/run-actions.ts) and the backup it
 * verified.
 */
import type { Environment } from '../../src/config/schema.ts'
import type { BackupRunContext } from '../../src/backup/backup-steps.ts'
import { nightlyBackupSystem, type Retention } from '../../src/recording/backup-runs.ts'
import type { PlannedStep } from '../../src/runs/engine.ts'
import type { Playbook, RunOutcome } from '../../src/runs/playbook.ts'
import { planSystemRun, startSystemRun } from '../../src/runs/run-actions.ts'
import { printOn, showEventsOn } from '../../src/edge/command-io.ts'
import { useRunSystems } from '../../src/edge/run-systems.ts'
import type { CommandMain } from '../../src/edge/script.ts'
import type { BackupRunFlags } from './backup-commands.ts'

/** A nightly backup: the environment, and what its prune keeps. */
export interface BackupRequest extends Retention {
  env: Environment
}

type NightlyBackup = Playbook<BackupRunContext>

/** `svcops backup run`: `playbook`, journaled, through the one run path. */
export function runBackupPlaybook(playbook: NightlyBackup, { env, ...retention }: BackupRequest): Promise<RunOutcome> {
  return startSystemRun(nightlyBackupSystem(playbook, retention), { env })
}

/** `svcops backup run --dry-run`: the same playbook in plan mode. */
export async function planBackupPlaybook(playbook: NightlyBackup, { env, ...retention }: BackupRequest): Promise<PlannedStep[]> {
  return (await planSystemRun(nightlyBackupSystem(playbook, retention), { env })).steps
}

/** `svcops backup run`, and playbooks/backup.ts run as a script: the dry run's steps, or the run and the backup it verified. */
export function backupRunCommand(playbook: NightlyBackup): CommandMain<BackupRunFlags> {
  return async (flags, io) => {
    const env = await io.environment()
    const request = {
      env,
      ...(flags.keepLast === undefined ? {} : { keepLast: flags.keepLast }),
      ...(flags.keepDays === undefined ? {} : { keepDays: flags.keepDays }),
    }
    // The systems' run stores: the prune step (and its dry run) reads the backups runs hold from them;
    // the metrics' observer writes --metrics-file once the run ends.
    await useRunSystems(flags.metricsFile ? { metricsFile: flags.metricsFile } : {})
    if (flags.dryRun) {
      const steps = await planBackupPlaybook(playbook, request)
      printOn(io, { ok: true, dryRun: true, steps }, () =>
        [
          `Dry run: the backup playbook of '${env.name}' (nothing will be changed).`,
          ...steps.flatMap((s) => [`${s.step} — ${s.title}`, ...s.actions.map((a) => `    ${a}`)]),
        ].join('\n'),
      )
      return
    }
    const stop = showEventsOn(io)
    try {
      const outcome = await runBackupPlaybook(playbook, request)
      const backupId = outcome.report.run.params.backupId
      printOn(
        io,
        { ok: true, runId: outcome.runId, phase: outcome.phase, report: outcome.report },
        () => `Run ${outcome.runId}: ${outcome.phase}; backup ${typeof backupId === 'string' ? backupId : '?'} verified.`,
      )
    } finally {
      stop()
    }
  }
}
