/**
 * The commands of the live production system's playbooks, declared once: `svcops upgrade|rollback|
 * verify live` build their options and help from these (src/commands/upgrade.ts over playbooks/lib/systems.ts), and so do
 * playbooks/upgrade-live.ts and verify-live.ts run as scripts (src/edge/script.ts).
 * Declarations only: the CLI imports this file at start-up.
 */
import { collectList, wholeNumber, type CommandSpec, type FlagsOf } from '../../src/core/option-table.ts'
import { parseSoak } from '../../src/config/soak-duration.ts'
import { METRICS_FILE_HELP } from '../../src/edge/command-io.ts'
import { TRUST_UNSIGNED_OPTION, lockOptions } from './recording-commands.ts'

export const UPGRADE_LIVE = {
  words: ['upgrade', 'live'],
  description:
    'Upgrade the live production system across majors: gates, backup, PSK / settings / TCP endpoint done by svcops, each component installed, started and checked in dependency order; automatic rollback on failure.',
  options: [
    { flags: '--to <version>', help: 'release to install, e.g. 7.0.0', required: true },
    {
      flags: '--from <version>',
      help: 'with --dry-run: the release to plan from when the running one cannot be read (the release read wins)',
    },
    {
      flags: '--ack <gate>',
      help: 'acknowledge a gate by its id once people have handled it, e.g. 6.0.0/send-message (repeatable, or comma-separated)',
      parse: collectList,
    },
    {
      flags: '--tcp-endpoint <host:port>',
      help: 'the one TCP control panel endpoint kept when the pipeline lists several (6.0 takes one)',
    },
    {
      flags: '--batch <n>',
      help: "instances of a type upgraded at once after that type's canary (across hosts)",
      parse: wholeNumber('--batch'),
      default: 1,
    },
    {
      flags: '--max-fail <n|p%>',
      help: 'failed ingest, pipeline and control panel instances tolerated (stopped) before the run rolls every host back',
      default: '0',
    },
    { flags: '--no-auto-rollback', help: 'on failure, keep the broken state for inspection instead of rolling back' },
    {
      flags: '--pause-after-canary',
      help: 'once the first type with several instances has its canary verified, wait (holding the lock) for svcops runs promote|abort ID; refused where every type runs one instance',
    },
    {
      flags: '--soak <duration>',
      help: "judge each type's verified canary against that type's instances still on the old release for this long (e.g. 10m) before its batches, on the metrics of svcops:upgrade.analysis.metrics.<type>: a fail rolls back",
      parse: (v: string) => parseSoak(v),
    },
    { flags: '--dry-run', help: 'print every step, every command and every file change as a diff (secrets masked); change nothing' },
    { flags: '-y, --yes', help: 'do not ask for confirmation (schedulers, scripts)' },
    ...lockOptions('live system'),
    { flags: '--metrics-file <path>', help: METRICS_FILE_HELP },
  ],
  after: `
Procedure (playbooks/upgrade-live.ts; docs/live.md has a runbook per major):
  preflight      the installed release of every component; a downgrade or mixed releases refused
  gates          every change only people can make, for each major crossed (svcops plan live):
                   checked by svcops when the stack file lists inputs (live.sdkSourceDirs -> scan sdk,
                   live.savedRequests -> migrate requests, live.metricFiles -> migrate metrics),
                   else acknowledged with --ack ID; an open gate stops the run here (exit 5), nothing changed
  stage          the target and the current package on the host, before anything stops
  check-config   settings and environment files read; several TCP endpoints refused (pick one: --tcp-endpoint)
  backup         every settings and environment file, into .svcops/runs/<id>/backup/ (0600)
  rollback-ready what the rollback needs (previous packages, the saved files, every host), before anything stops
  stop           control panel, pipeline, ingest, controller
  write-config   a new PSK when the target needs one (2.0) or the current one fails the entropy check
                 (6.0), in the settings file and every environment together; the settings file moved to
                 /etc/opt/<product_dir> before a 6.x controller starts; SVC_TCP_ENDPOINTS -> SVC_TCP_ENDPOINT
  per component  install, start, check (running, no ERROR lines, connected, the controller on the new
                 prefix, the renamed metrics): controller, ingest, pipeline, control panel; across hosts
                 (svcops:live.hosts) each type's instances as a canary, then batches of --batch,
                 within --max-fail (a tolerated instance is stopped, the run ends failed, exit 1)
  verify         the controller lists every component connected on the target
On failure after the first stop: every component back on its previous package, settings,
environment and PSK, each checked. The PSK never appears in output, journal or report.

On Kubernetes (svcops:live.platform: kubernetes; docs/live.md "Live on Kubernetes"): the same steps
set svcops:deploy.live.version (and svcops:deploy.pskRotation for a new PSK) with pulumi config set
--path, refuse a pulumi preview with any change besides the live components, run pulumi up --target
of exactly those, and check each component's pods and logs through the API and the controller
through its Service; the stack file holds the new version after success, the old one after rollback.

Exit codes: 0 upgraded, 1 failed (nothing stopped, or see the report), 2 bad input, 3 locked,
            4 failed and rolled back, 5 a gate needs a person (nothing changed).

Examples:
  svcops plan live --from 5.2.0 --to 7.0.0                      # what breaks, by who acts
  svcops upgrade live --env lab --to 7.0.0 --dry-run            # every command and file diff
  svcops upgrade live --env prod --to 7.0.0 --ack 5.0.0/output-streams-multiple --yes --json
  svcops upgrade live --env lab --to 6.0.0 --tcp-endpoint 127.0.0.1:7101
  svcops resume 20261122T031500Z-3fa9c1                         # a killed run
  svcops rollback live --env prod                               # the newest live upgrade, undone`,
} as const satisfies CommandSpec

/** The flags of `svcops upgrade live`, as its table declares them. */
export type UpgradeLiveFlags = FlagsOf<typeof UPGRADE_LIVE>

export const ROLLBACK_LIVE = {
  words: ['rollback', 'live'],
  description: "Roll back the live production system: the newest (or given) live upgrade run, from its journal and the run's backup.",
  options: [
    { flags: '--run <id>', help: 'the run to roll back (default: the newest live upgrade run of the environment)' },
    { flags: '--dry-run', help: 'print what the rollback would do, with the exact commands; change nothing' },
    { flags: '-y, --yes', help: 'do not ask for confirmation' },
    ...lockOptions('live system'),
    TRUST_UNSIGNED_OPTION,
    { flags: '--metrics-file <path>', help: METRICS_FILE_HELP },
  ],
  after: `
Stops every component (control panel first), puts back every settings and environment file from
the run's backup (and so the PSK, and the settings file where the old release reads it), installs
each component's previous package, starts and checks each in dependency order. Exit 0 rolled back.

Examples:
  svcops rollback live --env prod --dry-run
  svcops rollback live --env prod --yes
  svcops rollback live --env lab --run 20261122T031500Z-3fa9c1`,
} as const satisfies CommandSpec

/** The flags of `svcops rollback live`, as its table declares them. */
export type RollbackLiveFlags = FlagsOf<typeof ROLLBACK_LIVE>

export const VERIFY_LIVE = {
  words: ['verify', 'live'],
  description:
    'The checks of a live upgrade without changing anything: every component installed, running, without error lines, connected; the controller on its prefix; the metric names; one strong PSK everywhere.',
  options: [],
  after: `
Exit 0 when every check passes, 1 otherwise (the error names each failed check).

Examples:
  svcops verify live --env lab
  svcops verify live --env prod --json`,
} as const satisfies CommandSpec
