/**
 * What every `svcops schedule <playbook>` on hosts shares: the checks of the values it writes into
 * the units (the user, the environment's name, the working directory, the stack file, the Node.js
 * and svcops' own paths, SVCOPS_RUNS_DIR), and the units themselves with how to enable them. The
 * playbook's own arguments come from the command (`schedule backup`, `schedule upgrade`).
 */
import { resolve } from 'node:path'
import { userInfo } from 'node:os'
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { svcopsCommand } from '../core/paths.ts'
import { assertUnitPath, assertUnitValue, normalizeCalendar, timerUnits, unitNode, type UnitFile } from './systemd-timer.ts'

export interface HostTimerRequest {
  env: Environment
  /** Unit name without suffix, like `svcops-upgrade-recording-prod`. */
  name: string
  description: string
  /** svcops' arguments after `--stack-file FILE` (`backup run --json ...`). */
  args: string[]
  /** `--at` as given. */
  at: string
  /** `--user`, else the user running this command. */
  user: string | undefined
  /** `--unit-dir`. */
  unitDir: string
  /** Further paths the service writes (a local backup store). */
  writablePaths?: string[]
  /** A run missed while the host was off starts at the next boot (a backup); false for a run bound to a window. */
  persistent: boolean
}

export interface HostTimer {
  calendar: string
  units: UnitFile[]
  /** The commands that enable the timer. */
  enable: string[]
}

/** The environment's name, refused when it cannot be part of a unit's name. */
export function unitEnvironmentName(env: Environment): string {
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(env.name))
    throw new BadInputError(
      `the environment name: '${env.name}' (from ${env.file}) is not usable in a unit name; expected lower-case letters, digits, ".", "_" or "-".`,
    )
  return env.name
}

/**
 * The units of one scheduled svcops command: it runs exactly the stack file this command read
 * (not --env NAME, which may find another one), with an absolute path to the Node that runs this
 * command (checked: >= 22.18) and bin/svcops' own V8 flags, every value checked for control
 * characters where it comes from and escaped by its directive's rule.
 */
export async function prepareHostTimer(request: HostTimerRequest): Promise<HostTimer> {
  const user = request.user ?? userInfo().username
  if (!/^[a-z_][a-z0-9_-]*[$]?$/i.test(user)) throw new BadInputError(`--user: '${user}' is not valid; expected a user name like svcops.`)
  unitEnvironmentName(request.env)
  const calendar = await normalizeCalendar(request.at)
  const workingDirectory = assertUnitPath(process.cwd(), 'the working directory')
  const stackFile = assertUnitValue(resolve(request.env.file), 'the stack file path')
  const [, ...cli] = svcopsCommand()
  const node = unitNode(process.execPath, process.versions.node)
  for (const word of cli) assertUnitValue(word, 'the svcops installation path')
  for (const word of request.args) assertUnitValue(word, 'an argument of the scheduled command')
  const runsDir = resolve(process.env.SVCOPS_RUNS_DIR ?? '.svcops')
  assertUnitValue(runsDir, process.env.SVCOPS_RUNS_DIR ? 'SVCOPS_RUNS_DIR' : 'the working directory')
  const units = timerUnits(
    {
      name: request.name,
      description: request.description,
      command: [node, ...cli, '--stack-file', stackFile, ...request.args],
      workingDirectory,
      at: request.at,
      user,
      environment: process.env.SVCOPS_RUNS_DIR ? { SVCOPS_RUNS_DIR: runsDir } : {},
      environmentFile: `/etc/svcops/${request.env.name}.env`,
      writablePaths: [runsDir, ...(request.writablePaths ?? [])],
      persistent: request.persistent,
    },
    calendar,
    resolve(request.unitDir),
  )
  const timer = `${request.name}.timer`
  const enable = request.unitDir.includes('.config/systemd/user')
    ? ['systemctl --user daemon-reload', `systemctl --user enable --now ${timer}`]
    : ['systemctl daemon-reload', `systemctl enable --now ${timer}`]
  return { calendar, units, enable }
}
