/**
 * Upgrade, roll back and verify a part of the platform: `svcops upgrade recording|live`, `svcops
 * rollback recording|live`, `svcops verify recording|live`. Options and help only; the playbooks do
 * the work (the live system's subcommands are in live.ts).
 */
import type { Command } from 'commander'
import { BadInputError, ExitCode } from '../core/errors.ts'
import { parseWindow } from '../runs/rollout.ts'
import { confirm, environmentOf, printResult, setResultExitCode } from './context.ts'
import { registerLive } from './live.ts'
import { METRICS_FILE_HELP, printPlan, progress, showRun, toInt } from './run-output.ts'

interface UpgradeFlags {
  metricsFile?: string
  to: string
  hosts?: string
  batch?: number
  maxFail?: string
  autoRollback: boolean
  dryRun?: boolean
  yes?: boolean
  breakLock?: boolean
  force?: boolean
  window?: number
  pauseAfterCanary?: boolean
}

interface RollbackFlags {
  run?: string
  to?: string
  dryRun?: boolean
  packageOnly?: boolean
  yes?: boolean
  breakLock?: boolean
  force?: boolean
  metricsFile?: string
}

const UPGRADE_HELP = `
Steps: preflight (config, lock, manager scopes, database privileges, room for the backup, package
staged on every host before anything stops, current versions, content snapshot) -> backup +
verification -> per host: stop, install, review-config, start, wait-healthy, check-logs,
verify-host -> verify. The canary (marked in the environment file, else the first host) goes
alone and migrates the shared database; then batches of --batch hosts run concurrently.

Every run has an id and a journal in .svcops/runs/<id>/ with report.html, report.md and
report.json; svcops:notify in the stack file tells webhooks and publishes metrics (docs/operations.md).
Exit codes: 0 upgraded, 1 failed (see the report), 2 bad input, 3 locked by another run,
            4 failed and rolled back (the report says why and what was restored).

Examples:
  svcops upgrade recording --env lab --to 2.0.0 --dry-run
  svcops upgrade recording --env prod --to 2.0.0 --batch 5 --max-fail 10% --window 90m --yes --json
  svcops upgrade recording --env staging --to 2.1.0 --hosts rec-2 --no-auto-rollback
  svcops upgrade recording --env prod --to 2.0.0 --batch 5 --pause-after-canary --yes   # then: svcops runs promote ID`

const ROLLBACK_HELP = `
Rules (the seed's, made lossless): stop; install the previous version; restore the run's verified
backup only if the schema fingerprint changed (or recordings went missing) — after exporting every
recording written since the backup, re-created after the restore and listed in the report; start;
verify. Exit 0 when the rollback succeeded, also when a killed one is finished by svcops resume ID;
with --to, exit 4 means the move to that version failed and was rolled back (the report says why).

Examples:
  svcops rollback recording --env prod --dry-run
  svcops rollback recording --env prod
  svcops rollback recording --env prod --run 20261122T031500Z-3fa9c1 --yes
  svcops rollback recording --env staging --to 1.5.0`

const VERIFY_HELP = `
Exit 0 when every check passes, 1 otherwise (each failed check is named).

Examples:
  svcops verify recording --env lab
  svcops verify recording --env prod --no-test-recording --json`

/** Registers `upgrade`, `rollback` and `verify` with their `recording` and `live` subcommands. */
export function register(program: Command): void {
  const upgrade = program.command('upgrade').description('Upgrade a part of the platform.')
  const rollback = program.command('rollback').description('Roll back a part of the platform.')
  const verify = program.command('verify').description('Verify a part of the platform.')
  registerUpgradeRecording(upgrade)
  registerRollbackRecording(rollback)
  registerLive({ upgrade, rollback, verify }, showRun)
  registerVerifyRecording(verify)
}

function registerUpgradeRecording(upgrade: Command): void {
  upgrade
    .command('recording')
    .description(
      'Upgrade the recording service on its hosts: preflight, verified backup, canary, batches, verification; automatic rollback on failure.',
    )
    .requiredOption('--to <version>', 'version to install, e.g. 2.0.0')
    .option('--hosts <names>', 'only these hosts (comma-separated names from the environment file)')
    .option('--batch <n>', 'hosts upgraded at once after the canary', toInt('--batch'), 1)
    .option('--max-fail <n|p%>', 'host failures tolerated after the canary before the rollout stops and rolls back', '0')
    .option(
      '--window <duration>',
      'maintenance window from the start, e.g. 90m or 1h30m: a batch starts only if, judged by the longest batch so far, it ends inside it; otherwise the run rolls back what it changed',
      (v: string) => parseWindow(v),
    )
    .option('--no-auto-rollback', 'on failure, keep the broken state for inspection instead of rolling back')
    .option(
      '--pause-after-canary',
      'once the canary is verified, wait (holding the lock) for svcops runs promote ID (go on) or svcops runs abort ID (roll back)',
    )
    .option('--dry-run', 'print every step and command per host; change nothing')
    .option('-y, --yes', 'do not ask for confirmation (schedulers, scripts)')
    .option('--break-lock', "take the environment's lock another run holds; refused while that run is unfinished unless --force (logged)")
    .option('--force', "with --break-lock: break the lock even though the holder's run did not finish (that run is then left as it is)")
    .option('--metrics-file <path>', METRICS_FILE_HELP)
    .addHelpText('after', UPGRADE_HELP)
    .action(upgradeRecording)
}

async function upgradeRecording(flags: UpgradeFlags, command: Command): Promise<void> {
  const env = await environmentOf(command)
  const hosts = flags.hosts
    ?.split(',')
    .map((h) => h.trim())
    .filter(Boolean)
  const request = {
    env,
    to: flags.to,
    ...(hosts ? { hosts } : {}),
    batch: flags.batch ?? 1,
    maxFail: flags.maxFail ?? '0',
    autoRollback: flags.autoRollback,
    ...(flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}),
    ...(flags.window ? { windowMs: flags.window } : {}),
    ...(flags.pauseAfterCanary ? { pauseAfterCanary: true } : {}),
  }
  const play = await import('../../playbooks/upgrade.ts')
  const { renderRunPlan } = await import('../runs/run-actions.ts')
  if (flags.dryRun) {
    const plan = await play.planRecordingService(request)
    printPlan(command, plan, () => renderRunPlan(play.recording, plan), { spread: true })
    return
  }
  const prompts = await import('./prompts.ts')
  const targets = hosts ?? env.recording?.hosts.map((h) => h.name) ?? []
  await confirm(() => prompts.upgradePrompt('the recording service', env.name, 'recording', targets, flags.to), flags.yes)
  await showRun(command, () => play.upgradeRecordingService(request))
}

function registerRollbackRecording(rollback: Command): void {
  rollback
    .command('recording')
    .description('Roll back the recording service: the last (or given) upgrade run from its journal, or to an explicit version.')
    .option('--run <id>', 'the run to roll back (default: the newest upgrade run of the environment)')
    .option('--to <version>', 'move every host to this version instead, through the upgrade path (backup, verify, auto-rollback)')
    .option(
      '--package-only',
      "with --to: install that version on today's schema without a backup taken on it; its own start refuses a newer schema, and the run is then rolled back",
    )
    .option('--dry-run', 'print what the rollback would do, per host, with the exact commands; change nothing')
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--break-lock', "take the environment's lock another run holds; refused while that run is unfinished unless --force (logged)")
    .option('--force', "with --break-lock: break the lock even though the holder's run did not finish (that run is then left as it is)")
    .option('--metrics-file <path>', METRICS_FILE_HELP)
    .addHelpText('after', ROLLBACK_HELP)
    .action(rollbackRecording)
}

async function rollbackRecording(flags: RollbackFlags, command: Command): Promise<void> {
  if (flags.run && flags.to)
    throw new BadInputError('--run and --to: both given; expected one of them (a run to undo, or a version to go to).')
  if (flags.packageOnly && !flags.to)
    throw new BadInputError("--package-only: given without --to; expected --to VERSION (the version to install on today's schema).")
  const env = await environmentOf(command)
  const play = await import('../../playbooks/upgrade.ts')
  const options = {
    ...(flags.run ? { runId: flags.run } : {}),
    ...(flags.to ? { to: flags.to } : {}),
    ...(flags.packageOnly ? { packageOnly: true } : {}),
  }
  if (flags.dryRun) {
    const plan = await play.planRecordingRollback(env, options)
    const { renderRunPlan } = await import('../runs/run-actions.ts')
    printPlan(command, plan, () => renderRunPlan(play.recording, plan), { spread: false })
    return
  }
  const { rollbackPrompt } = await import('./prompts.ts')
  await confirm(
    () =>
      flags.to
        ? `Roll back the recording service of '${env.name}' to ${flags.to}?`
        : rollbackPrompt('the recording service', env.name, 'recording', flags.run),
    flags.yes,
  )
  await showRun(command, () =>
    play.rollbackRecordingService(env, { ...options, ...(flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}) }),
  )
}

function registerVerifyRecording(verify: Command): void {
  verify
    .command('recording')
    .description(
      "The seed's post-upgrade check alone, on every host: GET /, GET /api/v1/content?limit=N, POST a test recording, schema fingerprint, status and the last log lines.",
    )
    .option('--no-test-recording', 'do not create the test recording (read-only check)')
    .addHelpText('after', VERIFY_HELP)
    .action(async (flags: { testRecording: boolean }, command: Command) => {
      const env = await environmentOf(command)
      const stop = await progress(command)
      try {
        const play = await import('../../playbooks/verify.ts')
        const result = await play.verifyRecordingService(env, { testRecording: flags.testRecording })
        printResult(command, result, () => play.renderVerification(result))
        if (!result.ok) setResultExitCode(ExitCode.failed)
      } finally {
        stop()
      }
    })
}
