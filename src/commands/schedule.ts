/**
 * `svcops schedule backup`: the nightly backup playbook on a systemd timer, for host installs (in
 * a cluster the Pulumi program's `deploy.backupSchedule` CronJob does the same). Writes a service
 * and a timer unit; enabling them stays the operator's step, printed at the end.
 */
import { resolve } from 'node:path'
import { userInfo } from 'node:os'
import type { Command } from 'commander'
import { BadInputError } from '../core/errors.ts'
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
      const { assertUnitPath, assertUnitValue, normalizeCalendar, timerUnits, unitNode, writeUnits } =
        await import('../schedule/systemd-timer.ts')
      const { svcopsCommand } = await import('../core/paths.ts')
      for (const [flag, value] of [
        ['--keep-last', options.keepLast],
        ['--keep-days', options.keepDays],
      ] as const) {
        if (value !== undefined && !/^\d+$/.test(value))
          throw new BadInputError(`${flag}: '${value}' is not valid; expected a whole number.`)
      }
      const user = options.user ?? userInfo().username
      if (!/^[a-z_][a-z0-9_-]*[$]?$/i.test(user))
        throw new BadInputError(`--user: '${user}' is not valid; expected a user name like svcops.`)
      const env = await environmentOf(command)
      if (!/^[a-z0-9][a-z0-9._-]*$/.test(env.name))
        throw new BadInputError(
          `the environment name: '${env.name}' (from ${env.file}) is not usable in a unit name; expected lower-case letters, digits, ".", "_" or "-".`,
        )
      const calendar = await normalizeCalendar(options.at)
      // Every value written into the units, checked where it comes from (a newline would add a directive).
      const workingDirectory = assertUnitPath(process.cwd(), 'the working directory')
      const stackFile = assertUnitValue(resolve(env.file), 'the stack file path')
      const store = env.backup?.store
      if (!env.backup)
        throw new BadInputError(
          `${env.file}: backup: missing; expected the svcops:backup section (store, recipients, identity) to schedule backups.`,
        )
      // The unit runs exactly this file (not --env NAME, which may find another one), with an
      // absolute path to the Node that runs this command (checked: >= 22.18) and bin/svcops' own V8 flags.
      const [, ...cli] = svcopsCommand()
      const node = unitNode(process.execPath, process.versions.node)
      for (const word of cli) assertUnitValue(word, 'the svcops installation path')
      const command_ = [node, ...cli, '--stack-file', stackFile, 'backup', 'run', '--json']
      if (options.keepLast !== undefined) command_.push('--keep-last', options.keepLast)
      if (options.keepDays !== undefined) command_.push('--keep-days', options.keepDays)
      const runsDir = resolve(process.env.SVCOPS_RUNS_DIR ?? '.svcops')
      assertUnitValue(runsDir, process.env.SVCOPS_RUNS_DIR ? 'SVCOPS_RUNS_DIR' : 'the working directory')
      const storePath = store && !store.ssh ? assertUnitValue(resolve(store.path), `${env.file}: backup.store.path`) : undefined
      const units = timerUnits(
        {
          name: `svcops-backup-${env.name}`,
          description: `svcops nightly backup of ${env.name} (create, verify with a test restore, prune)`,
          command: command_,
          workingDirectory,
          at: options.at,
          user,
          environment: process.env.SVCOPS_RUNS_DIR ? { SVCOPS_RUNS_DIR: runsDir } : {},
          environmentFile: `/etc/svcops/${env.name}.env`,
          writablePaths: [runsDir, ...(storePath ? [storePath] : [])],
        },
        calendar,
        resolve(options.unitDir),
      )
      const timer = `svcops-backup-${env.name}.timer`
      const enable = options.unitDir.includes('.config/systemd/user')
        ? ['systemctl --user daemon-reload', `systemctl --user enable --now ${timer}`]
        : ['systemctl daemon-reload', `systemctl enable --now ${timer}`]
      if (options.dryRun) {
        printResult(command, { dryRun: true, calendar, units, enable }, () =>
          [...units.flatMap((u) => [`# would write ${u.path}`, u.content]), `Then: ${enable.join(' && ')}`].join('\n'),
        )
        return
      }
      const result = writeUnits(units, options.replace ?? false)
      printResult(command, { dryRun: false, calendar, units: units.map((u) => u.path), ...result, enable }, () =>
        [
          ...result.written.map((p) => `wrote ${p}`),
          ...result.unchanged.map((p) => `unchanged ${p}`),
          `Next run: ${calendar}. Enable it with: ${enable.join(' && ')}`,
        ].join('\n'),
      )
    })
}
