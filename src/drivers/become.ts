/**
 * Least-privilege become (`ssh.become: sudo`): the SSH user is unprivileged, and only the commands a
 * driver marks `asRoot` (package installs, service stops and starts) run as root, through
 * `sudo -n -- argv` (no shell, never a password prompt). This module says which rules allow exactly
 * those commands (`svcops render sudoers`) and checks, before anything stops, that the host's sudo
 * grants each one (`sudo -n -l -- argv` answers without running it).
 *
 * The rules are argv-exact: each names the command's full path and every argument. Where an argument
 * is the version being installed, which changes from run to run, the rule is a sudoers regular
 * expression (sudo 1.9.10 and later) that lets only a version through: `svc-recording=2.0.0` matches,
 * `svc-recording=2.0.0 other-package` does not (no blank in a version).
 */
import type { PlannedCommand } from './packages.ts'

/** A stand-in for the version in an argv, replaced by the version pattern in a rule. */
export const ANY_VERSION = '\u0000version\u0000'

/** What a Debian version may contain (Debian Policy 5.6.12), without a blank: one argument, one package. */
const VERSION_PATTERN = '[0-9][A-Za-z0-9.+~:-]*'

/** Where the commands svcops runs as root live on Debian (sudo wants full paths; merged /usr). */
const COMMAND_PATHS: Record<string, string> = {
  'apt-get': '/usr/bin/apt-get',
  systemctl: '/usr/bin/systemctl',
  dpkg: '/usr/bin/dpkg',
  dnf: '/usr/bin/dnf',
  // The live system's files (src/live/hosts/host-files.ts): coreutils, one fixed argv per path.
  head: '/usr/bin/head',
  mkdir: '/usr/bin/mkdir',
  install: '/usr/bin/install',
  dd: '/usr/bin/dd',
  mv: '/usr/bin/mv',
  rm: '/usr/bin/rm',
}

/** Whether the host runs root's commands through sudo. */
export function becomesWithSudo(host: { ssh?: { become?: 'sudo' | undefined } | undefined }): boolean {
  return host.ssh?.become === 'sudo'
}

/** The read-only check that sudo grants `cmd` to the SSH user, with the sentence a refusal prints. */
export function sudoCheck(hostName: string, user: string, cmd: PlannedCommand): PlannedCommand & { missing: string } {
  return {
    argv: ['sudo', '-n', '-l', '--', ...cmd.argv],
    mutates: false,
    missing: `sudo on ${hostName} does not let ${user} run '${cmd.argv.join(' ')}' (sudo -n -l refused it); add the rule svcops render sudoers prints for it`,
  }
}

/** Escapes an argument for a sudoers regular expression: regex metacharacters and sudoers' own (`\ , : =`). */
function regexLiteral(arg: string): string {
  return arg.replace(/[.*+?^$()[\]{}|]/g, '\\$&').replace(/[\\,:=]/g, '\\$&')
}

/** Escapes an argument for a literal sudoers command line (`\ , : =` and blanks). */
function sudoersLiteral(arg: string): string {
  return arg.replace(/[\\,:= ]/g, '\\$&')
}

/**
 * One sudoers rule allowing `cmd` to `user` as root, without a password: argv-exact, a regular
 * expression only where an argument holds `ANY_VERSION`. Throws for a command without a known path.
 */
export function sudoersRule(user: string, cmd: Pick<PlannedCommand, 'argv'>): string {
  const [program, ...args] = cmd.argv
  const path = COMMAND_PATHS[program ?? '']
  if (!path) throw new Error(`No full path is known for '${program ?? ''}'; a sudoers rule needs one.`)
  const pattern = args.some((a) => a.includes(ANY_VERSION))
  const line = pattern
    ? `^${args.map((a) => a.split(ANY_VERSION).map(regexLiteral).join(VERSION_PATTERN)).join(' ')}$`
    : args.map(sudoersLiteral).join(' ')
  // Without arguments sudoers would allow any; "" allows none.
  return `${user} ALL=(root) NOPASSWD: ${path} ${line || '""'}`
}

/**
 * The sudoers file for `user`: a rule per distinct command, the variables the commands are given
 * kept through sudo (`env_keep`), and comments saying what else the user needs.
 */
export function renderSudoers(options: { user: string; heading: string[]; commands: PlannedCommand[]; notes: string[] }): string {
  const env = [...new Set(options.commands.flatMap((c) => Object.keys(c.env ?? {})))].sort()
  const rules = [...new Set(options.commands.filter((c) => c.asRoot).map((c) => sudoersRule(options.user, c)))]
  return [
    ...options.heading.map((l) => `# ${l}`),
    ...options.notes.map((l) => `# ${l}`),
    ...(env.length ? [`Defaults:${options.user} env_keep += "${env.join(' ')}"`] : []),
    ...rules,
    '',
  ].join('\n')
}
