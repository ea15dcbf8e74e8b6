/**
 * `svcops rehearse recording`, declared once: the CLI (src/commands/rehearse.ts) and
 * playbooks/rehearse.ts run as a script build its options and help from this. Declarations only.
 */
import { wholeNumber, type CommandSpec } from '../../src/core/option-table.ts'
import { parseWindow } from '../../src/runs/rollout.ts'
import { METRICS_FILE_HELP } from '../../src/edge/command-io.ts'
import { lockOptions } from './recording-commands.ts'

export interface RehearseRecordingFlags {
  to: string
  batch: number
  window?: number
  dryRun?: boolean
  breakLock?: boolean
  force?: boolean
  metricsFile?: string
}

export const REHEARSE_RECORDING: CommandSpec = {
  words: ['rehearse', 'recording'],
  description:
    "Rehearse an upgrade of the recording service on a copy of the environment's database, on the stack's rehearsal host: migrations timed, content checked, rollback timed, downtime predicted; production is not changed.",
  options: [
    { flags: '--to <version>', help: 'version to rehearse, e.g. 2.1.0', required: true },
    {
      flags: '--batch <n>',
      help: 'hosts the real upgrade will upgrade at once after the canary (for the prediction)',
      parse: wholeNumber('--batch'),
      default: 1,
    },
    {
      flags: '--window <duration>',
      help: 'the maintenance window the real upgrade will have, e.g. 90m: the verdict says whether the predicted rollout fits it',
      parse: (v: string) => parseWindow(v),
    },
    { flags: '--dry-run', help: 'print every step and command; change nothing' },
    ...lockOptions('environment'),
    { flags: '--metrics-file <path>', help: METRICS_FILE_HELP },
  ],
  after: `
Steps: read production (versions, schema fingerprint, size, the role's right to migrate) -> the
backup (reused when recent and verified by a test restore, else taken and verified) -> restored
into recording.rehearsal.database -> on recording.rehearsal.host: the current version started on
the copy, a session of it on the copy checked in pg_stat_activity (else it stops: the host's service
must name that database), its recordings listed -> stop, install --to, review-config, start
(migrations, timed), wait-healthy, the session on the copy and production's fingerprint checked
again, check-logs, verify (every recording listed before is listed, a test recording written
and read) -> the rollback as the real one (restore when the schema changed), timed -> production
checked unchanged -> the prediction. The scratch database is dropped and the service on the
rehearsal host stopped at the end, also when interrupted.
Exit codes: 0 the rehearsal passed (its verdict: fits, does not fit, no window), 1 it failed
(the cause and the service's log lines in the report), 2 bad input, 3 locked by another run.`,
}
