#!/usr/bin/env node
/**
 * Playbook: the nightly backup of the recording service's database — what a scheduler runs (a
 * CronJob, a systemd timer): create an encrypted backup, prove it restores, then prune the store by
 * retention. The newest verified backup is never pruned, so a failed night never leaves the store
 * without one. Journaled like every run (`svcops runs show ID`); not rolled back, run again.
 *
 *   npx zx playbooks/backup.ts --env prod --keep-last 7 --keep-days 30 [--dry-run] [--json]
 *
 * Run by node or zx, this file is `svcops backup run` (its options: playbooks/lib/backup-commands.ts;
 * what the command does with them: playbooks/lib/backup-actions.ts; the run: src/recording/backup-runs.ts).
 */
import { createEncryptedBackup, pruneByRetention, verifyWithTestRestore, type BackupRunContext } from '../src/backup/backup-steps.ts'
import type { Run } from '../src/runs/engine.ts'
import type { Playbook } from '../src/runs/playbook.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'
import { backupRunCommand } from './lib/backup-actions.ts'
import { BACKUP_RUN } from './lib/backup-commands.ts'
import { backupSite } from './site/backup.ts'

/** The procedure, top to bottom. */
async function nightlyBackup(run: Run<BackupRunContext>): Promise<void> {
  await run.step(createEncryptedBackup) // pg_dump -> OpenPGP -> store, checksummed, manifest last
  await run.step(verifyWithTestRestore) // decrypt and restore into a scratch database: a backup that restores
  await run.step(pruneByRetention) // keep the newest N and the younger than D days, never the newest verified
}

/** The playbook: this procedure; a failed night is run again (the store lists only complete backups). */
export const backupRecording: Playbook<BackupRunContext> = {
  kind: 'backup',
  what: () => 'The backup',
  rollbackCommand: (record) => `svcops runs show ${record.id}`,
  procedure: nightlyBackup,
  site: backupSite, // the site's steps: playbooks/site/
}

/** `svcops backup run`, and this file run as a script. */
export const nightlyBackupCommand = backupRunCommand(backupRecording)

if (startedAsScript(import.meta)) await runScript(import.meta, BACKUP_RUN, nightlyBackupCommand)
