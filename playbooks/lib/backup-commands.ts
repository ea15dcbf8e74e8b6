/**
 * `svcops backup run`, the nightly backup playbook's command, declared once: src/commands/backup.ts
 * builds its options and help from it, and so does playbooks/backup.ts run as a script
 * (src/edge/script.ts). Declarations only: the CLI imports this file at start-up.
 */
import { nonNegativeNumber, type CommandSpec, type FlagsOf } from '../../src/core/option-table.ts'
import { METRICS_FILE_HELP } from '../../src/edge/command-io.ts'

export const BACKUP_RUN = {
  words: ['backup', 'run'],
  description:
    'The nightly backup playbook (playbooks/backup.ts): create, verify with a test restore, prune by retention; journaled as a run.',
  options: [
    { flags: '--keep-last <n>', help: 'after a verified backup, keep the newest N backups', parse: nonNegativeNumber('--keep-last') },
    {
      flags: '--keep-days <d>',
      help: 'after a verified backup, keep backups younger than D days',
      parse: nonNegativeNumber('--keep-days'),
    },
    { flags: '--dry-run', help: 'print every step and what it would do; change nothing' },
    { flags: '--metrics-file <path>', help: METRICS_FILE_HELP },
  ],
  after: `
What a scheduler runs every night (a CronJob, a systemd timer). Each run has an id, a journal and a
report in .svcops/runs/<id>/ (svcops runs show ID). Pruning never removes the newest verified backup,
so a failed night never leaves the store without one.
Exit codes: 0 backed up and verified, 1 failed (the report names the step), 2 bad input.

Examples:
  svcops backup run --env prod --keep-last 7 --keep-days 30 --json
  svcops backup run --env prod --keep-last 7 --dry-run`,
} as const satisfies CommandSpec

/** The flags of `svcops backup run`, as its table declares them. */
export type BackupRunFlags = FlagsOf<typeof BACKUP_RUN>
