/**
 * A playbook on a timer, for host installs: the service unit that runs one svcops command as a
 * oneshot, and the timer that starts it (`svcops schedule backup`, `svcops schedule upgrade`). The calendar expression is
 * checked and normalized by systemd's own parser (`systemd-analyze calendar`), so what is written
 * is what systemd will run. The units never hold a secret: the stack file's references are read
 * at run time, and the variables they name come from an optional EnvironmentFile.
 *
 * Every value written comes from somewhere svcops does not control (a path, a stack value, the
 * working directory): each is refused when it holds a control character (a newline would start a
 * directive of its own), and escaped by the rule of its directive (systemd.syntax(7), systemd.exec(5),
 * systemd.service(5)): ExecStart= words quoted with `$` and `%` doubled; Environment= and
 * ReadWritePaths= quoted, `%` doubled, `$` left alone (it is no escape there); WorkingDirectory=,
 * EnvironmentFile= and Description= taken as they are, `%` doubled.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic } from '../core/atomic-write.ts'
import { BadInputError } from '../core/errors.ts'
import { local, requireBinary, runCommand } from '../core/runner.ts'
import { hasControl, sanitizeLine } from '../core/sanitize.ts'

export interface TimerRequest {
  /** Unit name without suffix, like `svcops-backup-prod`. */
  name: string
  /** What it does, for `systemctl status`. */
  description: string
  /** The command, argv; the first word an absolute path. */
  command: string[]
  /** Its working directory (where `.svcops/` lives unless SVCOPS_RUNS_DIR says otherwise). */
  workingDirectory: string
  /** The calendar expression as the user gave it (`--at`). */
  at: string
  /** The user the service runs as. */
  user: string
  /** Variables set for the command (no secrets). */
  environment: Record<string, string>
  /** Optional file with the variables the stack file's `{ env: ... }` references name (0600, root-owned). */
  environmentFile: string
  /** What the service may write under `ProtectSystem=strict`. */
  writablePaths: string[]
  /** A run missed while the machine was off starts at the next boot; false when the run is bound to a window. */
  persistent?: boolean
}

export interface UnitFile {
  path: string
  content: string
}

/** The oldest Node.js that runs svcops' sources (type stripping without a flag). */
export const MIN_NODE = { major: 22, minor: 18 } as const

/**
 * Refuses a value for a unit file that holds a control character (a newline, a tab, ESC...), in
 * one sentence naming where the value came from (`source`) and showing it escaped.
 */
export function assertUnitValue(value: string, source: string): string {
  if (hasControl(value))
    throw new BadInputError(
      `${source}: '${sanitizeLine(value)}' holds a control character (a line break would start a directive of its own in the unit file); expected one line of printable text.`,
    )
  return value
}

/**
 * Refuses a path a directive takes as it is (WorkingDirectory=, EnvironmentFile=): it must be
 * absolute, and a space or a backslash at its end would be dropped or join the next line.
 */
export function assertUnitPath(value: string, source: string): string {
  assertUnitValue(value, source)
  if (!value.startsWith('/') || /[\\\s]$/.test(value))
    throw new BadInputError(
      `${source}: '${value}' is not usable in a unit file; expected an absolute path that does not end with a space or a backslash.`,
    )
  return value
}

/**
 * The Node.js a unit runs svcops with: this process's own executable, `execPath`, refused in one
 * sentence when it is older than svcops needs (a unit written by an old Node would fail every night).
 */
export function unitNode(execPath: string, version: string): string {
  assertUnitPath(execPath, 'the Node.js executable running svcops')
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number)
  if (major < MIN_NODE.major || (major === MIN_NODE.major && minor < MIN_NODE.minor))
    throw new BadInputError(
      `The Node.js running svcops (${execPath}) is ${version}, which the unit would run svcops with; expected Node.js >= ${MIN_NODE.major}.${MIN_NODE.minor} (run this command through npx svcops, which uses the project's Node 24).`,
    )
  return execPath
}

/** `systemd-analyze calendar`'s normalized form of `at`, or a refusal naming it. */
export async function normalizeCalendar(at: string): Promise<string> {
  if (!at.trim() || /[\n\r]/.test(at))
    throw new BadInputError(`--at: '${at}' is not valid; expected a systemd calendar expression like '*-*-* 01:15:00' or 'daily'.`)
  const analyze = requireBinary('systemd-analyze', 'systemd')
  const result = await runCommand(local, [analyze, 'calendar', '--', at], { check: false })
  const normalized = /Normalized form:\s*(.+)/.exec(result.stdout)?.[1]?.trim()
  if (result.code !== 0 || !normalized) {
    const reason = result.stderr.trim().split('\n').at(-1) ?? ''
    throw new BadInputError(
      `--at: '${at}' is not valid${reason ? ` (${reason})` : ''}; expected a systemd calendar expression like '*-*-* 01:15:00' or 'daily'.`,
    )
  }
  return normalized
}

/**
 * One word of ExecStart= as systemd reads it: quoted when it holds anything but plain characters
 * (C escapes for `\\` and `"`); `%` (specifiers) and `$` (variables) doubled so they stay literal.
 */
export function unitWord(word: string): string {
  const literal = word.replaceAll('%', '%%').replaceAll('$', () => '$$') // a function: '$$' in a replacement string is one '$'
  if (/^[A-Za-z0-9_@%+=:,./$-]+$/.test(literal)) return literal
  return `"${literal.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
}

/**
 * One item of a directive that unquotes and C-unescapes its words but expands no variables
 * (Environment=, ReadWritePaths=): quoted, `\\` and `"` escaped, `%` doubled, `$` as it is.
 */
export function unitItem(item: string): string {
  const literal = item.replaceAll('%', '%%')
  if (/^[A-Za-z0-9_@%+=:,./$-]+$/.test(literal) && !/^[-+]/.test(literal)) return literal
  return `"${literal.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
}

/** A value a directive takes as it is, but for specifiers (WorkingDirectory=, Description=...): `%` doubled. */
export function unitText(text: string): string {
  return text.replaceAll('%', '%%')
}

/** The service and timer units of `request`, with the calendar already normalized. */
export function timerUnits(request: TimerRequest, calendar: string, unitDir: string): UnitFile[] {
  const origin = `# Written by svcops (svcops schedule); edit the command that wrote it, not this file.`
  const service = [
    origin,
    '[Unit]',
    `Description=${unitText(request.description)}`,
    'Wants=network-online.target',
    'After=network-online.target',
    '',
    '[Service]',
    'Type=oneshot',
    `User=${request.user}`,
    `WorkingDirectory=${unitText(request.workingDirectory)}`,
    ...Object.entries(request.environment).map(([key, value]) => `Environment=${unitItem(`${key}=${value}`)}`),
    `EnvironmentFile=-${unitText(request.environmentFile)}`,
    `ExecStart=${request.command.map(unitWord).join(' ')}`,
    // Keys and reports it writes are the user's alone; the rest of the system is read-only to it.
    'UMask=0077',
    'NoNewPrivileges=yes',
    'PrivateTmp=yes',
    'ProtectSystem=strict',
    ...request.writablePaths.map((path) => `ReadWritePaths=${unitItem(path)}`),
    '',
  ]
  const timer = [
    origin,
    '[Unit]',
    `Description=${unitText(request.description)} (timer)`,
    '',
    '[Timer]',
    `OnCalendar=${calendar}`,
    // A missed backup runs at the next boot; a missed maintenance window is skipped, not caught up outside it.
    `Persistent=${request.persistent === false ? 'false' : 'true'}`,
    `Unit=${request.name}.service`,
    '',
    '[Install]',
    'WantedBy=timers.target',
    '',
  ]
  // Every value was checked where it came from; this is the last guard that no line holds two.
  for (const line of [...service, ...timer]) assertUnitValue(line, 'a line of the unit file')
  return [
    { path: join(unitDir, `${request.name}.service`), content: service.join('\n') },
    { path: join(unitDir, `${request.name}.timer`), content: timer.join('\n') },
  ]
}

/**
 * Writes the units (0644). A unit file that exists with other content is refused unless `replace`:
 * it may be somebody's edit.
 */
export function writeUnits(units: UnitFile[], replace: boolean): { written: string[]; unchanged: string[] } {
  for (const unit of units) {
    if (!replace && existsSync(unit.path) && readFileSync(unit.path, 'utf8') !== unit.content)
      throw new BadInputError(`${unit.path} exists with other content; expected --replace to overwrite it (compare with --dry-run first).`)
  }
  const written: string[] = []
  const unchanged: string[] = []
  for (const unit of units) {
    if (existsSync(unit.path) && readFileSync(unit.path, 'utf8') === unit.content) {
      unchanged.push(unit.path)
      continue
    }
    mkdirSync(join(unit.path, '..'), { recursive: true })
    writeFileAtomic(unit.path, unit.content, { mode: 0o644 })
    written.push(unit.path)
  }
  return { written, unchanged }
}
