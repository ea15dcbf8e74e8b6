/**
 * `svcops upgrade live`, `svcops rollback live`, `svcops verify live`: the live production
 * system's upgrade across majors, its way back and its checks. Options and help only; the
 * playbooks (playbooks/upgrade-live.ts, playbooks/verify-live.ts) do the work.
 */
import type { Command } from 'commander'
import { ExitCode } from '../core/errors.ts'
import { redact } from '../core/redact.ts'
import { sanitizeLine } from '../core/sanitize.ts'
import { confirm, environmentOf, printResult, setResultExitCode } from './context.ts'
import { printPlan, toInt, type ShowRun } from './run-output.ts'

const collect = (value: string, previous: string[] = []): string[] => [
  ...previous,
  ...value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean),
]

interface UpgradeLiveFlags {
  to: string
  ack?: string[]
  tcpEndpoint?: string
  batch?: number
  maxFail?: string
  autoRollback: boolean
  dryRun?: boolean
  yes?: boolean
  breakLock?: boolean
  force?: boolean
}

const UPGRADE_LIVE_HELP = `
Procedure (playbooks/upgrade-live.ts; docs/live.md has a runbook per major):
  preflight      the installed release of every component; a downgrade or mixed releases refused
  stage          the target and the current package on the host, before anything stops
  gates          every change only people can make, for each major crossed (svcops plan live):
                   checked by svcops when the stack file lists inputs (live.sdkSourceDirs -> scan sdk,
                   live.savedRequests -> migrate requests, live.metricFiles -> migrate metrics),
                   else acknowledged with --ack ID; an open gate stops the run here (exit 5), nothing changed
  check-config   settings and environment files read; several TCP endpoints refused (pick one: --tcp-endpoint)
  backup         every settings and environment file, into .svcops/runs/<id>/backup/ (0600)
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
  svcops rollback live --env prod                               # the newest live upgrade, undone`

const ROLLBACK_LIVE_HELP = `
Stops every component (control panel first), puts back every settings and environment file from
the run's backup (and so the PSK, and the settings file where the old release reads it), installs
each component's previous package, starts and checks each in dependency order. Exit 0 rolled back.

Examples:
  svcops rollback live --env prod --dry-run
  svcops rollback live --env prod --yes
  svcops rollback live --env lab --run 20261122T031500Z-3fa9c1`

const VERIFY_LIVE_HELP = `
Exit 0 when every check passes, 1 otherwise (the error names each failed check).

Examples:
  svcops verify live --env lab
  svcops verify live --env prod --json`

/** Adds the `live` subcommands to the `upgrade`, `rollback` and `verify` groups. */
export function registerLive(groups: { upgrade: Command; rollback: Command; verify: Command }, showRun: ShowRun): void {
  registerUpgradeLive(groups.upgrade, showRun)
  registerRollbackLive(groups.rollback, showRun)
  registerVerifyLive(groups.verify)
}

function registerUpgradeLive(upgrade: Command, showRun: ShowRun): void {
  upgrade
    .command('live')
    .description(
      'Upgrade the live production system across majors: gates, backup, PSK / settings / TCP endpoint done by svcops, each component installed, started and checked in dependency order; automatic rollback on failure.',
    )
    .requiredOption('--to <version>', 'release to install, e.g. 7.0.0')
    .option(
      '--ack <gate>',
      'acknowledge a gate by its id once people have handled it, e.g. 6.0.0/send-message (repeatable, or comma-separated)',
      collect,
    )
    .option('--tcp-endpoint <host:port>', 'the one TCP control panel endpoint kept when the pipeline lists several (6.0 takes one)')
    .option('--batch <n>', "instances of a type upgraded at once after that type's canary (across hosts)", toInt('--batch'), 1)
    .option(
      '--max-fail <n|p%>',
      'failed ingest, pipeline and control panel instances tolerated (stopped) before the run rolls every host back',
      '0',
    )
    .option('--no-auto-rollback', 'on failure, keep the broken state for inspection instead of rolling back')
    .option('--dry-run', 'print every step, every command and every file change as a diff (secrets masked); change nothing')
    .option('-y, --yes', 'do not ask for confirmation (schedulers, scripts)')
    .option('--break-lock', "take the live system's lock another run holds; refused while that run is unfinished unless --force (logged)")
    .option('--force', "with --break-lock: break the lock even though the holder's run did not finish (that run is then left as it is)")
    .addHelpText('after', UPGRADE_LIVE_HELP)
    .action(async (flags: UpgradeLiveFlags, command: Command) => {
      const env = await environmentOf(command)
      const request = {
        env,
        to: flags.to,
        acks: flags.ack ?? [],
        ...(flags.tcpEndpoint ? { tcpEndpoint: flags.tcpEndpoint } : {}),
        batch: flags.batch ?? 1,
        maxFail: flags.maxFail ?? '0',
        autoRollback: flags.autoRollback,
        ...(flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}),
      }
      const play = await import('../../playbooks/upgrade-live.ts')
      if (flags.dryRun) {
        const plan = await play.planLiveUpgrade(request)
        const { renderRunPlan } = await import('../runs/run-actions.ts')
        printPlan(command, plan, () => renderRunPlan(play.live, plan), { spread: true })
        return
      }
      const prompts = await import('./prompts.ts')
      const { liveUnitNames } = await import('../live/live-platforms.ts')
      await confirm(() => prompts.upgradePrompt('the live production system', env.name, 'live', liveUnitNames(env), flags.to), flags.yes)
      await showRun(command, () => play.upgradeLiveSystem(request))
    })
}

function registerRollbackLive(rollback: Command, showRun: ShowRun): void {
  rollback
    .command('live')
    .description("Roll back the live production system: the newest (or given) live upgrade run, from its journal and the run's backup.")
    .option('--run <id>', 'the run to roll back (default: the newest live upgrade run of the environment)')
    .option('--dry-run', 'print what the rollback would do, with the exact commands; change nothing')
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--break-lock', "take the live system's lock another run holds; refused while that run is unfinished unless --force (logged)")
    .option('--force', "with --break-lock: break the lock even though the holder's run did not finish (that run is then left as it is)")
    .addHelpText('after', ROLLBACK_LIVE_HELP)
    .action(async (flags: { run?: string; dryRun?: boolean; yes?: boolean; breakLock?: boolean; force?: boolean }, command: Command) => {
      const env = await environmentOf(command)
      const play = await import('../../playbooks/upgrade-live.ts')
      const options = flags.run ? { runId: flags.run } : {}
      if (flags.dryRun) {
        const plan = await play.planLiveRollback(env, options)
        const { renderRunPlan } = await import('../runs/run-actions.ts')
        printPlan(command, plan, () => renderRunPlan(play.live, plan), { spread: false })
        return
      }
      const { rollbackPrompt } = await import('./prompts.ts')
      await confirm(() => rollbackPrompt('the live production system', env.name, 'live', flags.run), flags.yes)
      await showRun(command, () =>
        play.rollbackLiveSystem(env, { ...options, ...(flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}) }),
      )
    })
}

function registerVerifyLive(verify: Command): void {
  verify
    .command('live')
    .description(
      'The checks of a live upgrade without changing anything: every component installed, running, without error lines, connected; the controller on its prefix; the metric names; one strong PSK everywhere.',
    )
    .addHelpText('after', VERIFY_LIVE_HELP)
    .action(async (_flags: unknown, command: Command) => {
      const env = await environmentOf(command)
      const play = await import('../../playbooks/verify-live.ts')
      const result = await play.verifyLiveSystem(env)
      printResult(command, result, () => play.renderLiveVerification(result))
      if (!result.ok) {
        process.stderr.write(`svcops: ${sanitizeLine(redact(play.failedSummary(result)))}\n`)
        setResultExitCode(ExitCode.failed)
      }
    })
}
