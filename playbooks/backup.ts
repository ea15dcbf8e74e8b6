#!/usr/bin/env node
/**
 * Playbook: the nightly backup of the recording service's database — what a scheduler runs (a
 * CronJob, a systemd timer): create an encrypted backup, prove it restores, then prune the store by
 * retention. The newest verified backup is never pruned, so a failed night never leaves the store
 * without one. Journaled like every run (`svcops runs show ID`).
 *
 *   node playbooks/backup.ts --env prod --keep-last 7 --keep-days 30 [--dry-run] [--json]
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
import { runAsCommand, startedAsScript } from '../src/runs/script.ts'

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

if (startedAsScript(import.meta)) await runAsCommand(import.meta, ['backup', 'run'])
