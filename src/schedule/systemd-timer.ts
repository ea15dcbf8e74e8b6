/**
 * A playbook on a timer, for host installs: the service unit that runs one svcops command as a
 * oneshot, and the timer that starts it (`svcops schedule backup`). The calendar expression is
 * checked and normalized by systemd's own parser (`systemd-analyze calendar`), so what is written
 * is what systemd will run. The units never hold a secret: the stack file's references are read
 * at run time, and the variables they name come from an optional EnvironmentFile.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BadInputError } from '../core/errors.ts'
import { local, requireBinary, runCommand } from '../core/runner.ts'

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
}

export interface UnitFile {
  path: string
  content: string
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
 * One word of a unit's command line, as systemd reads it: quoted when it holds anything but plain
 * characters; `%` (specifiers) and `$` (variables) doubled so they stay literal.
 */
export function unitWord(word: string): string {
  const literal = word.replaceAll('%', '%%').replaceAll('$', () => '$$') // a function: '$$' in a replacement string is one '$'
  if (/^[A-Za-z0-9_@%+=:,./$-]+$/.test(literal)) return literal
  return `"${literal.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
}

/** The service and timer units of `request`, with the calendar already normalized. */
export function timerUnits(request: TimerRequest, calendar: string, unitDir: string): UnitFile[] {
  const origin = `# Written by svcops (svcops schedule); edit the command that wrote it, not this file.`
  const service = [
    origin,
    '[Unit]',
    `Description=${request.description}`,
    'Wants=network-online.target',
    'After=network-online.target',
    '',
    '[Service]',
    'Type=oneshot',
    `User=${request.user}`,
    `WorkingDirectory=${request.workingDirectory}`,
    ...Object.entries(request.environment).map(([key, value]) => `Environment=${unitWord(`${key}=${value}`)}`),
    `EnvironmentFile=-${request.environmentFile}`,
    `ExecStart=${request.command.map(unitWord).join(' ')}`,
    // Keys and reports it writes are the user's alone; the rest of the system is read-only to it.
    'UMask=0077',
    'NoNewPrivileges=yes',
    'PrivateTmp=yes',
    'ProtectSystem=strict',
    ...request.writablePaths.map((path) => `ReadWritePaths=${unitWord(path)}`),
    '',
  ].join('\n')
  const timer = [
    origin,
    '[Unit]',
    `Description=${request.description} (timer)`,
    '',
    '[Timer]',
    `OnCalendar=${calendar}`,
    // A run missed while the machine was off starts at the next boot.
    'Persistent=true',
    `Unit=${request.name}.service`,
    '',
    '[Install]',
    'WantedBy=timers.target',
    '',
  ].join('\n')
  return [
    { path: join(unitDir, `${request.name}.service`), content: service },
    { path: join(unitDir, `${request.name}.timer`), content: timer },
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
    writeFileSync(unit.path, unit.content, { mode: 0o644 })
    written.push(unit.path)
  }
  return { written, unchanged }
}
