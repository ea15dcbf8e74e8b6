#!/usr/bin/env node
/**
 * Playbook: the nightly backup of the recording service's database — what a scheduler runs (a
 * CronJob, a systemd timer): create an encrypted backup, prove it restores, then prune the store by
 * retention. The newest verified backup is never pruned, so a failed night never leaves the store
 * without one. Journaled like every run (`svcops runs show ID`).
 *
 *   npx zx playbooks/backup.ts --env prod --keep-last 7 --keep-days 30 [--dry-run] [--json]
 *
 * Run by node or zx, this file is `svcops backup run` (its options: playbooks/lib/backup-commands.ts).
 */
import type { Environment } from '../src/config/schema.ts'
import {
  createEncryptedBackup,
  openBackupRun,
  pruneByRetention,
  verifyWithTestRestore,
  type BackupRunContext,
} from '../src/backup/backup-steps.ts'
import type { PlannedStep, Run } from '../src/runs/engine.ts'
import { backupRunSystem } from '../src/recording/backup-runs.ts'
import { recordingDescription } from '../src/recording/recording-description.ts'
import type { Playbook, RunOutcome } from '../src/runs/playbook.ts'
import { planSystemRun, startSystemRun } from '../src/runs/run-actions.ts'
import { printOn, showEventsOn, type CommandIO } from '../src/edge/command-io.ts'
import { BACKUP_RUN, type BackupRunFlags } from './lib/backup-commands.ts'
import { useRunSystems } from '../src/edge/run-systems.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'
import { backupSite } from './site/backup.ts'

/** The procedure, top to bottom. */
async function nightlyBackup(run: Run<BackupRunContext>): Promise<void> {
  await run.step(createEncryptedBackup) // pg_dump -> OpenPGP -> store, checksummed, manifest last
  await run.step(verifyWithTestRestore) // decrypt and restore into a scratch database: a backup that restores
  await run.step(pruneByRetention) // keep the newest N and the younger than D days, never the newest verified
}

export const backupRecording: Playbook<BackupRunContext> = {
  kind: 'backup',
  what: () => 'The backup',
  rollbackCommand: (record) => `svcops runs show ${record.id}`,
  procedure: nightlyBackup,
  site: backupSite, // the site's steps: playbooks/site/
}

export interface BackupRequest {
  env: Environment
  keepLast?: number
  keepDays?: number
}

function retentionOf(req: BackupRequest) {
  return {
    ...(req.keepLast !== undefined ? { keepLast: req.keepLast } : {}),
    ...(req.keepDays !== undefined ? { keepDays: req.keepDays } : {}),
  }
}

/**
 * The nightly backup as a run of the recording service (its database): one record, the
 * environment's lock (refused beside a running, paused or interrupted run, naming it), the report.
 */
export function backupSystem(req: BackupRequest) {
  return backupRunSystem({
    kind: 'backup',
    verb: 'backup run',
    done: 'backed up',
    what: 'back up the database of the recording service, verify it with a test restore, prune by retention',
    playbook: backupRecording,
    open: (env, journal) => openBackupRun(env, retentionOf(req), recordingDescription)(journal),
  })
}

/** `svcops backup run`: the playbook, journaled, through the one run path (run-actions.ts). */
export function runBackupPlaybook(req: BackupRequest): Promise<RunOutcome> {
  return startSystemRun(backupSystem(req), { env: req.env })
}

/** `svcops backup run --dry-run`: the same playbook in plan mode. */
export async function planBackupPlaybook(req: BackupRequest): Promise<PlannedStep[]> {
  return (await planSystemRun(backupSystem(req), { env: req.env })).steps
}

/** `svcops backup run`, and this file run as a script: the dry run's steps, or the run and the backup it verified. */
export async function backupRunCommand(flags: BackupRunFlags, io: CommandIO): Promise<void> {
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
    const steps = await planBackupPlaybook(request)
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
    const outcome = await runBackupPlaybook(request)
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

if (startedAsScript(import.meta)) await runScript(import.meta, BACKUP_RUN, backupRunCommand)
