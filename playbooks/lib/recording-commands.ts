/**
 * The commands of the recording service's playbooks, declared once: `svcops upgrade|rollback|verify|
 * doctor recording` build their options and help from these (src/commands/upgrade.ts, doctor.ts),
 * and so do playbooks/upgrade.ts, rollback.ts, verify.ts and doctor.ts run as scripts
 * (src/edge/script.ts). Declarations only: the CLI imports this file at start-up.
 */
import { wholeNumber, type CommandSpec, type FlagsOf, type OptionSpec } from '../../src/core/option-table.ts'
import { parseSoak } from '../../src/config/soak-duration.ts'
import { parseWindow } from '../../src/runs/rollout.ts'
import { METRICS_FILE_HELP } from '../../src/edge/command-io.ts'

/** The help of `--trust-unsigned-run`, offered by every command that continues a run kept in the environment. */
export const TRUST_UNSIGNED_HELP =
  "let a run read from the environment's store without a MAC (written before runs were signed, or with no run key) drive this; recorded in the run"

/** `--trust-unsigned-run`, as `resume` and both rollbacks offer it. */
export const TRUST_UNSIGNED_OPTION = { flags: '--trust-unsigned-run', help: TRUST_UNSIGNED_HELP } as const satisfies OptionSpec

/** `--break-lock` and `--force`, as every run that takes an environment's lock offers them. */
export function lockOptions(holder: string) {
  return [
    {
      flags: '--break-lock',
      help: `take the ${holder}'s lock another run holds; refused while that run is unfinished unless --force (logged)`,
    },
    {
      flags: '--force',
      help: "with --break-lock: break the lock even though the holder's run did not finish (that run is then left as it is)",
    },
  ] as const satisfies OptionSpec[]
}

export const UPGRADE_RECORDING = {
  words: ['upgrade', 'recording'],
  description:
    'Upgrade the recording service on its hosts: preflight, verified backup, canary, batches, verification; automatic rollback on failure.',
  options: [
    { flags: '--to <version>', help: 'version to install, e.g. 2.0.0', required: true },
    { flags: '--hosts <names>', help: 'only these hosts (comma-separated names from the environment file)' },
    { flags: '--batch <n>', help: 'hosts upgraded at once after the canary', parse: wholeNumber('--batch'), default: 1 },
    { flags: '--max-fail <n|p%>', help: 'host failures tolerated after the canary before the rollout stops and rolls back', default: '0' },
    {
      flags: '--window <duration>',
      help: 'maintenance window from the start, e.g. 90m or 1h30m: a batch starts only if, judged by the longest batch so far, it ends inside it; otherwise the run rolls back what it changed',
      parse: (v: string) => parseWindow(v),
    },
    { flags: '--no-auto-rollback', help: 'on failure, keep the broken state for inspection instead of rolling back' },
    {
      flags: '--pause-after-canary',
      help: 'once the canary is verified, wait (holding the lock) for svcops runs promote ID (go on) or svcops runs abort ID (roll back)',
    },
    {
      flags: '--soak <duration>',
      help: 'once the canary is verified, judge it against the hosts still on the old release for this long (e.g. 10m) before batch 1: a fail rolls back; settings in svcops:upgrade.analysis (default: its soak)',
      parse: (v: string) => parseSoak(v),
    },
    {
      flags: '--skip-promotion-gate',
      help: "go without the earlier environment's succeeded upgrade to this version that svcops:upgrade.promoteFrom asks for; what the gate found is recorded in the run and its report",
    },
    { flags: '--dry-run', help: 'print every step and command per host; change nothing' },
    { flags: '-y, --yes', help: 'do not ask for confirmation (schedulers, scripts)' },
    ...lockOptions('environment'),
    { flags: '--metrics-file <path>', help: METRICS_FILE_HELP },
  ],
  after: `
Steps: preflight (config, lock, manager scopes, database privileges, room for the backup, package
staged on every host before anything stops, current versions, content snapshot) -> backup +
verification -> per host: stop, install, review-config, start, wait-healthy, check-logs,
verify-host -> verify. The canary (marked in the environment file, else the first host) goes
alone and migrates the shared database; then batches of --batch hosts run concurrently.

Every run has an id and a journal in .svcops/runs/<id>/ with report.html, report.md and
report.json; svcops:notify in the stack file tells webhooks and publishes metrics (docs/operations.md).
With svcops:upgrade.promoteFrom (e.g. staging) the upgrade is refused before anything starts unless
that environment's runs hold a succeeded upgrade to the same version, recent enough.
Exit codes: 0 upgraded, 1 failed (see the report), 2 bad input, 3 locked by another run,
            4 failed and rolled back (the report says why and what was restored),
            5 refused by a gate (promotion, rehearsal) before anything started.

Examples:
  svcops upgrade recording --env lab --to 2.0.0 --dry-run
  svcops upgrade recording --env prod --to 2.0.0 --batch 5 --max-fail 10% --window 90m --yes --json
  svcops upgrade recording --env staging --to 2.1.0 --hosts rec-2 --no-auto-rollback
  svcops upgrade recording --env prod --to 2.0.0 --batch 5 --pause-after-canary --yes   # then: svcops runs promote ID
  svcops upgrade recording --env prod --to 2.0.0 --soak 10m --yes   # the canary judged against the others for 10 minutes`,
} as const satisfies CommandSpec

/** The flags of `svcops upgrade recording`, as its table declares them. */
export type UpgradeRecordingFlags = FlagsOf<typeof UPGRADE_RECORDING>

export const ROLLBACK_RECORDING = {
  words: ['rollback', 'recording'],
  description: 'Roll back the recording service: the last (or given) upgrade run from its journal, or to an explicit version.',
  options: [
    { flags: '--run <id>', help: 'the run to roll back (default: the newest upgrade run of the environment)' },
    { flags: '--to <version>', help: 'move every host to this version instead, through the upgrade path (backup, verify, auto-rollback)' },
    {
      flags: '--package-only',
      help: "with --to: install that version on today's schema without a backup taken on it; its own start refuses a newer schema, and the run is then rolled back",
    },
    { flags: '--dry-run', help: 'print what the rollback would do, per host, with the exact commands; change nothing' },
    { flags: '-y, --yes', help: 'do not ask for confirmation' },
    ...lockOptions('environment'),
    TRUST_UNSIGNED_OPTION,
    { flags: '--metrics-file <path>', help: METRICS_FILE_HELP },
  ],
  after: `
Rules (the seed's, made lossless): stop; install the previous version; restore the run's verified
backup only if the schema fingerprint changed (or recordings went missing) — after exporting every
recording written since the backup, re-created after the restore and listed in the report; start;
verify. Exit 0 when the rollback succeeded, also when a killed one is finished by svcops resume ID;
with --to, exit 4 means the move to that version failed and was rolled back (the report says why).

Examples:
  svcops rollback recording --env prod --dry-run
  svcops rollback recording --env prod
  svcops rollback recording --env prod --run 20261122T031500Z-3fa9c1 --yes
  svcops rollback recording --env staging --to 1.5.0`,
} as const satisfies CommandSpec

/** The flags of `svcops rollback recording`, as its table declares them. */
export type RollbackRecordingFlags = FlagsOf<typeof ROLLBACK_RECORDING>

export const VERIFY_RECORDING = {
  words: ['verify', 'recording'],
  description:
    "The seed's post-upgrade check alone, on every host: GET /, GET /api/v1/content?limit=N, POST a test recording, schema fingerprint, status and the last log lines.",
  options: [{ flags: '--no-test-recording', help: 'do not create the test recording (read-only check)' }],
  after: `
Exit 0 when every check passes, 1 otherwise (each failed check is named).

Examples:
  svcops verify recording --env lab
  svcops verify recording --env prod --no-test-recording --json`,
} as const satisfies CommandSpec

/** The flags of `svcops verify recording`, as its table declares them. */
export type VerifyRecordingFlags = FlagsOf<typeof VERIFY_RECORDING>

export const DOCTOR_RECORDING = {
  words: ['doctor', 'recording'],
  description:
    "Check every cause of the seed's common upgrade problems on every host, as the service sees it (its config file, its user, its database credentials).",
  options: [{ flags: '--host <name...>', help: 'only these hosts' }],
  after: `
Causes (docs/doctor.md): config-syntax, config-options, file-permissions, database-access,
schema-change-permission, migration-history, storage-paths, storage-location-names, media-api,
content-info-cache, write-rate-limit, list-query, disk-io. On Kubernetes (recording.platform
kubernetes) the Deployment's pods through the API: config-syntax (its Secret), database-access,
image-pull, crash-loop, oom-killed, pod-logs, schema-change-permission, storage-claim. Read-only.
Exit codes: 0 nothing found, 5 findings that need a person, 2 bad input.

Examples:
  svcops doctor recording --env prod
  svcops doctor recording --env prod --host rec-2 --json | jq '.findings[] | .cause'`,
} as const satisfies CommandSpec

/** The flags of `svcops doctor recording`, as its table declares them. */
export type DoctorRecordingFlags = FlagsOf<typeof DOCTOR_RECORDING>
