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
import { emptyRecordingParams, type RecordingParams } from '../src/recording/recording-params.ts'
import { recordingDescription } from '../src/recording/recording-system.ts'
import { Journal } from '../src/runs/journal.ts'
import { newRunRecord, type RunRecord } from '../src/runs/run-record.ts'
import { planRun, startRun, type Playbook, type RunOutcome } from '../src/runs/playbook.ts'
import { printOn, showEventsOn, type CommandIO } from './lib/command-io.ts'
import { BACKUP_RUN, type BackupRunFlags } from './lib/backup-commands.ts'
import { useRunSystems } from './lib/run-systems.ts'
import { runScript, startedAsScript } from './lib/script.ts'
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

/** A backup run is a run of the recording service (its database), with no target. */
function newBackupRecord(env: Environment): RunRecord<RecordingParams> {
  return newRunRecord({
    kind: 'backup',
    system: recordingDescription.name,
    environment: env.name,
    envFile: env.file,
    params: emptyRecordingParams(),
  })
}

function retentionOf(req: BackupRequest) {
  return {
    ...(req.keepLast !== undefined ? { keepLast: req.keepLast } : {}),
    ...(req.keepDays !== undefined ? { keepDays: req.keepDays } : {}),
  }
}

/** `svcops backup run`: the playbook, journaled; a backup needs no lock (it reads a snapshot). */
export function runBackupPlaybook(req: BackupRequest): Promise<RunOutcome> {
  const journal = Journal.create(newBackupRecord(req.env))
  return startRun({
    playbook: backupRecording,
    journal,
    lock: { release: () => Promise.resolve() },
    open: openBackupRun(req.env, retentionOf(req)),
    system: recordingDescription,
  })
}

/** `svcops backup run --dry-run`: the same playbook in plan mode. */
export async function planBackupPlaybook(req: BackupRequest): Promise<PlannedStep[]> {
  const journal = Journal.inMemory(newBackupRecord(req.env))
  const opened = await openBackupRun(req.env, retentionOf(req))(journal)
  try {
    return await planRun(backupRecording, opened.ctx, journal, 'start')
  } finally {
    await opened.close()
  }
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
