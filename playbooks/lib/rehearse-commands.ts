/**
 * `svcops rehearse recording` and `svcops rehearse live`, declared once: the CLI
 * (src/commands/rehearse.ts) and playbooks/rehearse.ts and rehearse-live.ts run as scripts build
 * their options and help from these. Declarations only.
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

export interface RehearseLiveFlags {
  to: string
  from?: string
  tcpEndpoint?: string
  dryRun?: boolean
  breakLock?: boolean
  force?: boolean
  metricsFile?: string
}

export const REHEARSE_LIVE: CommandSpec = {
  words: ['rehearse', 'live'],
  description:
    "Rehearse the live upgrade's file changes on a copy, as a run: the settings file moved where the target reads it, the PSK rules, the TCP endpoint rule; production's files are only read.",
  options: [
    { flags: '--to <version>', help: 'live release to rehearse, e.g. 7.0.0', required: true },
    { flags: '--from <version>', help: "the release the live system runs (default: the system controller's installed package)" },
    { flags: '--tcp-endpoint <host:port>', help: 'the one TCP endpoint to keep where the target takes one (as for upgrade live)' },
    { flags: '--dry-run', help: 'print every step; change nothing' },
    ...lockOptions('live system'),
    { flags: '--metrics-file <path>', help: METRICS_FILE_HELP },
  ],
  after: `
On hosts only (live.platform: hosts). A run of kind rehearse of the live system: journaled, under
the live system's lock (an upgrade and a rehearsal never overlap), with report.html, webhooks and
metrics. Steps: read-production (the system controller's installed package, every settings and
environment file, kept 0600 in the run folder to compare at the end) -> copy-files (copied into
the run folder's rehearsal/, 0700; the upgrade's own change plan applied to the copy, a new PSK
for the copy only) -> check-copy (as verify live checks the target's files: the settings file
where the target reads it, one PSK in every connecting component, its entropy where the target
enforces it, the TCP endpoint variable the target reads, one endpoint where it takes one) ->
check-production (production's files as they were) -> record-rehearsal. The copy is removed when
the run ends, also when interrupted; a killed rehearsal is finished by svcops resume ID (or ended
by svcops resume ID --rollback). Not rehearsed: the target's packages and processes (no controller
of the target is started on the copy).
Exit codes: 0 passed, 1 failed (the failed checks, or the refusal the upgrade would make), 2 bad
input, 3 locked by another run.

Examples:
  svcops rehearse live --env prod --to 7.0.0
  svcops rehearse live --env prod --to 6.0.0 --tcp-endpoint 10.0.0.5:9000 --json`,
}
