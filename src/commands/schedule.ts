/**
 * `svcops schedule backup` and `svcops schedule upgrade`: the nightly backup playbook, and an upgrade
 * at the start of a maintenance window, on systemd timers for host installs (in a cluster the
 * Pulumi program's CronJobs do the same). Each writes a service and a timer unit
 * (src/schedule/host-timer.ts); enabling them stays the operator's step, printed at the end.
 */
import { resolve } from 'node:path'
import { Option, type Command } from 'commander'
import { BadInputError } from '../core/errors.ts'
import type { HostTimer } from '../schedule/host-timer.ts'
import { environmentOf, printResult } from './context.ts'

const DEFAULT_UNIT_DIR = '/etc/systemd/system'

interface ScheduleBackupOptions {
  at: string
  keepLast?: string
  keepDays?: string
  unitDir: string
  user?: string
  replace?: boolean
  dryRun?: boolean
}

export function register(program: Command): void {
  const schedule = program
    .command('schedule')
    .description('Run svcops on a timer on this host: writes systemd units (in a cluster, the stack schedules CronJobs instead).')

  schedule
    .command('backup')
    .description('Run the nightly backup playbook (svcops backup run) from a systemd timer: writes svcops-backup-<env>.service and .timer.')
    .requiredOption('--at <calendar>', "when, as a systemd calendar expression: '*-*-* 01:15:00', 'daily', 'Mon..Fri 02:00'")
    .option('--keep-last <n>', 'passed to backup run: after a verified backup, keep the newest N backups')
    .option('--keep-days <d>', 'passed to backup run: after a verified backup, keep backups younger than D days')
    .option('--unit-dir <dir>', 'where the units are written', DEFAULT_UNIT_DIR)
    .option('--user <name>', 'the user the backup runs as (default: the user running this command)')
    .option('--replace', 'overwrite unit files that exist with other content')
    .option('--dry-run', 'print the units and where they would go; write nothing')
    .addHelpText(
      'after',
      `
The service runs, as --user, in this folder (its .svcops/ holds the run folders and reports):
  <node> bin/svcops --stack-file <the stack file> backup run --json [--keep-last N] [--keep-days D]
with absolute paths: the Node.js running this command (>= 22.18, checked), bin/svcops, and exactly
the stack file this command read. ProtectSystem=strict (writable: .svcops/ and a local backup
store), UMask=0077, and the variables the stack file's { env: ... } references name read from
/etc/svcops/<env>.env if it exists (0600). A value with a control character (a newline in a path)
is refused; every value is escaped by its directive's rule. The timer is Persistent: a night missed while
the host was off runs at the next boot. Nothing is enabled for you; the command prints how.

Examples:
  svcops schedule backup --env prod --at '*-*-* 01:15:00' --keep-last 7 --keep-days 30 --dry-run
  sudo svcops schedule backup --env prod --at daily --user svcops --keep-last 7
  svcops schedule backup --env prod --at daily --unit-dir ~/.config/systemd/user --json`,
    )
    .action(async (options: ScheduleBackupOptions, command: Command) => {
      const { prepareHostTimer } = await import('../schedule/host-timer.ts')
      const { assertUnitValue } = await import('../schedule/systemd-timer.ts')
      for (const [flag, value] of [
        ['--keep-last', options.keepLast],
        ['--keep-days', options.keepDays],
      ] as const) {
        if (value !== undefined && !/^\d+$/.test(value))
          throw new BadInputError(`${flag}: '${value}' is not valid; expected a whole number.`)
      }
      const env = await environmentOf(command)
      if (!env.backup)
        throw new BadInputError(
          `${env.file}: backup: missing; expected the svcops:backup section (store, recipients, identity) to schedule backups.`,
        )
      const store = env.backup.store
      const args = ['backup', 'run', '--json']
      if (options.keepLast !== undefined) args.push('--keep-last', options.keepLast)
      if (options.keepDays !== undefined) args.push('--keep-days', options.keepDays)
      const storePath = !store.ssh ? assertUnitValue(resolve(store.path), `${env.file}: backup.store.path`) : undefined
      const timer = await prepareHostTimer({
        env,
        name: `svcops-backup-${env.name}`,
        description: `svcops nightly backup of ${env.name} (create, verify with a test restore, prune)`,
        args,
        at: options.at,
        user: options.user,
        unitDir: options.unitDir,
        writablePaths: storePath ? [storePath] : [],
        persistent: true,
      })
      await writeOrShow(command, timer, options)
    })

  registerScheduleUpgrade(schedule)
}

interface ScheduleUpgradeOptions {
  system: string
  to: string
  at: string
  window?: string
  ack?: string[]
  unitDir: string
  user?: string
  replace?: boolean
  dryRun?: boolean
}

function registerScheduleUpgrade(schedule: Command): void {
  schedule
    .command('upgrade')
    .description(
      'Run an upgrade (svcops upgrade recording|live --to V --yes) from a systemd timer at the start of a maintenance window: writes svcops-upgrade-<system>-<env>.service and .timer.',
    )
    .addOption(new Option('--system <system>', 'what to upgrade').choices(['recording', 'live']).makeOptionMandatory())
    .requiredOption('--to <version>', 'the version to upgrade to, e.g. 2.0.0')
    .requiredOption('--at <calendar>', "the window's start, as a systemd calendar expression: 'Sun *-*-* 02:30:00'")
    .option(
      '--window <duration>',
      "the window's length, passed to the recording upgrade (--window): no batch starts that would end after it",
    )
    .option('--ack <gate>', 'a gate of the live upgrade people have handled, passed on (repeatable)', (v: string, all: string[] = []) => [
      ...all,
      v,
    ])
    .option('--unit-dir <dir>', 'where the units are written', DEFAULT_UNIT_DIR)
    .option('--user <name>', 'the user the upgrade runs as (default: the user running this command)')
    .option('--replace', 'overwrite unit files that exist with other content')
    .option('--dry-run', 'print the units and where they would go; write nothing')
    .addHelpText(
      'after',
      `
The service runs, as --user, in this folder, at the window's start:
  <node> bin/svcops --stack-file <the stack file> upgrade <system> --to V --yes --json [--window D] [--ack G]
with the same absolute paths, checks and escaping as schedule backup. The timer is not Persistent:
a window missed while the host was off is skipped, not caught up outside it. Once the environment
runs V, the scheduled run changes nothing, so the timer may stay until the next release.

Examples:
  svcops schedule upgrade --env prod --system recording --to 2.0.0 --at 'Sun *-*-* 02:30:00' --window 2h --dry-run
  sudo svcops schedule upgrade --env prod --system live --to 7.0.0 --at 'Sun 03:00' --ack 6.0.0/send-message --user svcops`,
    )
    .action(async (options: ScheduleUpgradeOptions, command: Command) => {
      const { prepareHostTimer } = await import('../schedule/host-timer.ts')
      const { parseWindow } = await import('../runs/rollout.ts')
      const { semver } = await import('../config/schema.ts')
      if (!semver.safeParse(options.to).success)
        throw new BadInputError(`--to: '${options.to}' is not valid; expected a version like 2.0.0.`)
      if (options.window !== undefined) {
        if (options.system === 'live')
          throw new BadInputError(
            `--window: '${options.window}' is not used by the live upgrade, which has no batches to stop between; expected no --window with --system live (the timer's start is the window's).`,
          )
        parseWindow(options.window)
      }
      if (options.ack?.length && options.system !== 'live')
        throw new BadInputError(`--ack: '${options.ack.join(',')}' is only for --system live; expected no --ack with --system recording.`)
      const env = await environmentOf(command)
      if (options.system === 'recording' && !env.recording)
        throw new BadInputError(`${env.file}: recording: missing; expected the svcops:recording section to schedule its upgrade.`)
      if (options.system === 'recording' && env.recording?.platform !== 'hosts')
        throw new BadInputError(
          `${env.file}: recording.platform: '${env.recording?.platform}' is not hosts; expected a host install (on Kubernetes the stack's deploy.upgradeSchedule CronJob runs the upgrade).`,
        )
      if (options.system === 'live' && !env.live)
        throw new BadInputError(
          `${env.file}: live: missing or not on hosts; expected the svcops:live section of a host install (on Kubernetes the stack schedules a CronJob).`,
        )
      const args = ['upgrade', options.system, '--to', options.to, '--yes', '--json']
      if (options.window !== undefined) args.push('--window', options.window)
      for (const gate of options.ack ?? []) args.push('--ack', gate)
      const timer = await prepareHostTimer({
        env,
        name: `svcops-upgrade-${options.system}-${env.name}`,
        description: `svcops upgrade of the ${options.system === 'live' ? 'live system' : 'recording service'} of ${env.name} to ${options.to}`,
        args,
        at: options.at,
        user: options.user,
        unitDir: options.unitDir,
        persistent: false,
      })
      await writeOrShow(command, timer, options)
    })
}

/** Prints the units (--dry-run), or writes them and prints what was written and how to enable the timer. */
async function writeOrShow(command: Command, timer: HostTimer, options: { dryRun?: boolean; replace?: boolean }): Promise<void> {
  const { calendar, units, enable } = timer
  if (options.dryRun) {
    printResult(command, { dryRun: true, calendar, units, enable }, () =>
      [...units.flatMap((u) => [`# would write ${u.path}`, u.content]), `Then: ${enable.join(' && ')}`].join('\n'),
    )
    return
  }
  // Imported here, not at the top: `svcops --help` loads this group and should not pay for the writer.
  const { writeUnits } = await import('../schedule/systemd-timer.ts')
  const result = writeUnits(units, options.replace ?? false)
  printResult(command, { dryRun: false, calendar, units: units.map((u) => u.path), ...result, enable }, () =>
    [
      ...result.written.map((p) => `wrote ${p}`),
      ...result.unchanged.map((p) => `unchanged ${p}`),
      `Next run: ${calendar}. Enable it with: ${enable.join(' && ')}`,
    ].join('\n'),
  )
}
