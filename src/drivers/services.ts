/**
 * Service drivers: stop, start, status and the last log lines of the recording service. `systemd`
 * for production hosts (`systemctl`, `journalctl -u`), `supervisor` for lab hosts (the sandbox's
 * own supervisord, spoken to over its XML-RPC socket; the service writes its log file itself).
 * Commands are argv arrays built here; each driver also says what a command's result means.
 */
import type { RecordingHostConfig } from '../config/schema.ts'
import { OperationError } from '../core/errors.ts'
import { sanitizeLine } from '../core/sanitize.ts'
import { hostPath, supervisorSocketPath } from './transports.ts'
import type { PlannedCommand } from './packages.ts'
import { runCommand, type CommandResult, type Transport } from '../core/runner.ts'
import { describeCall, encodeCall, parseAnswer, SupervisorFault, type RpcParam } from './supervisor-rpc.ts'

type Host = Pick<RecordingHostConfig, 'root' | 'name'>

/** What a stop or start came to: `ok`, or why not. */
export interface ActionOutcome {
  ok: boolean
  detail: string
}

export interface ServiceDriver {
  readonly name: 'systemd' | 'supervisor'
  stopCommand(host: Host, service: string): PlannedCommand
  startCommand(host: Host, service: string): PlannedCommand
  statusCommand(host: Host, service: string): PlannedCommand
  /** A stop succeeded, or the service was not running (stopping is idempotent). */
  stopOutcome(result: CommandResult, host: Host): ActionOutcome
  /** A start succeeded, or the service was already running. */
  startOutcome(result: CommandResult, host: Host): ActionOutcome
  /** Whether the service runs, and a status line a person can read. */
  parseStatus(result: CommandResult, host: Host): { running: boolean; status: string }
  /** The last `lines` log lines of the service; with `cursor`, only lines written after it. */
  logsCommand(host: Host, service: string, lines: number, logPath: string, cursor?: string): PlannedCommand
  /** A command printing a position in the log (taken before a start, so only that start's lines are judged). */
  logCursorCommand(host: Host, service: string, logPath: string): PlannedCommand
}

const output = (r: CommandResult): string => (r.stdout + r.stderr).trim()

/** systemd units: `systemctl stop|start|show`, `journalctl -u UNIT -n N`. */
export const systemdDriver: ServiceDriver = {
  name: 'systemd',
  stopCommand: (_h, unit) => ({ argv: ['systemctl', 'stop', '--', unit], mutates: true, asRoot: true }),
  startCommand: (_h, unit) => ({ argv: ['systemctl', 'start', '--', unit], mutates: true, asRoot: true }),
  // Not `is-active`: the restarts the unit's Restart= made since its start are part of the status
  // (a crash that systemd restarted is a crash, however healthy the service answers a moment later).
  statusCommand: (_h, unit) => ({ argv: ['systemctl', 'show', '--property=ActiveState,SubState,NRestarts', '--', unit], mutates: false }),
  // `systemctl stop` of a stopped unit exits 0.
  stopOutcome: (r) => ({ ok: r.code === 0, detail: output(r) }),
  startOutcome: (r) => ({ ok: r.code === 0, detail: output(r) }),
  parseStatus: (r) => {
    const shown = Object.fromEntries(r.stdout.split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).trim()]))
    const active = shown.ActiveState
    if (r.code !== 0 || !active)
      return { running: false, status: r.stderr.trim() || r.stdout.trim() || `systemctl exited with code ${r.code}` }
    const restarts = Number(shown.NRestarts ?? 0)
    // auto-restart: the service exited and Restart= starts it again in a moment (it crashed).
    const restarting = shown.SubState === 'auto-restart' ? ', exited and about to be restarted by systemd (Restart=)' : ''
    const restarted = restarts > 0 ? `, restarted ${restarts} time${restarts === 1 ? '' : 's'} by systemd (Restart=)` : ''
    return {
      running: active === 'active' && shown.SubState === 'running',
      status: `${active} (${shown.SubState ?? '?'})${restarting}${restarted}`,
    }
  },
  logsCommand: (_h, unit, lines, _logPath, cursor) => ({
    argv: ['journalctl', `--unit=${unit}`, '-n', String(lines), '--no-pager', '-o', 'short-iso', ...(cursor ? [`--since=@${cursor}`] : [])],
    mutates: false,
  }),
  // The host's own clock: a position in time that journalctl --since understands, immune to clock skew.
  logCursorCommand: () => ({ argv: ['date', '+%s.%N'], mutates: false }),
}

/** `curl` posting one XML-RPC call (on stdin) to supervisord's socket. */
export function supervisorCall(host: Host, method: string, params: RpcParam[], mutates: boolean): PlannedCommand {
  return {
    argv: [
      'curl',
      '--silent',
      '--show-error',
      '--max-time',
      '120',
      '--unix-socket',
      supervisorSocketPath(host),
      '--header',
      'Content-Type: text/xml',
      '--data-binary',
      '@-',
      'http://localhost/RPC2',
    ],
    input: { data: encodeCall(method, params), shown: describeCall(method, params) },
    mutates,
  }
}

/** The fault or value of a call's answer; a curl failure (no supervisord on the socket) as a fault of its own. */
function supervisorAnswer(r: CommandResult, host: Host): ReturnType<typeof parseAnswer> {
  if (r.code !== 0)
    return {
      fault: {
        code: -1,
        message: `supervisord does not answer on ${supervisorSocketPath(host)}: ${r.stderr.trim() || `curl exited with code ${r.code}`}`,
      },
    }
  return parseAnswer(r.stdout, `${host.name}:${supervisorSocketPath(host)}`)
}

function supervisorOutcome(r: CommandResult, host: Host, fine: number): ActionOutcome {
  const answer = supervisorAnswer(r, host)
  if (!answer.fault) return { ok: true, detail: 'done' }
  return { ok: answer.fault.code === fine, detail: answer.fault.message }
}

/**
 * Programs of a supervisord (the lab's), through the XML-RPC calls supervisorctl makes:
 * `stopProcess` and `startProcess` wait like `supervisorctl stop|start` (a start returns once the
 * program counts as running, after its `startsecs`), `getProcessInfo` gives the state.
 * A stop sticks only for a program without `autorestart`: supervisord spawns an EXITED program
 * again by itself, and `stopProcess` on EXITED answers NOT_RUNNING (taken as stopped) without
 * preventing that spawn. The lab's package sets `autorestart=false` for this reason.
 */
export const supervisorDriver: ServiceDriver = {
  name: 'supervisor',
  stopCommand: (h, program) => supervisorCall(h, 'supervisor.stopProcess', [program, true], true),
  startCommand: (h, program) => supervisorCall(h, 'supervisor.startProcess', [program, true], true),
  statusCommand: (h, program) => supervisorCall(h, 'supervisor.getProcessInfo', [program], false),
  stopOutcome: (r, h) => supervisorOutcome(r, h, SupervisorFault.notRunning),
  startOutcome: (r, h) => supervisorOutcome(r, h, SupervisorFault.alreadyStarted),
  parseStatus: (r, h) => {
    const answer = supervisorAnswer(r, h)
    if (answer.fault) return { running: false, status: answer.fault.message }
    const info = typeof answer.value === 'object' ? answer.value : {}
    const state = String(info.statename ?? 'UNKNOWN')
    return { running: state === 'RUNNING', status: `${state}${info.description ? ` ${String(info.description)}` : ''}` }
  },
  logsCommand: (h, _program, lines, logPath, cursor) =>
    cursor === undefined
      ? { argv: ['tail', '-n', String(lines), hostPath(h, logPath)], mutates: false }
      : {
          argv: ['sh', '-c', 'tail -c +"$1" "$2" | tail -n "$3"', 'sh', String(Number(cursor) + 1), hostPath(h, logPath), String(lines)],
          mutates: false,
        },
  // The log file's size in bytes: what the service writes after it is this start's.
  logCursorCommand: (h, _program, logPath) => ({
    argv: ['sh', '-c', 'stat -c %s "$1" 2>/dev/null || echo 0', 'sh', hostPath(h, logPath)],
    mutates: false,
  }),
}

/** Runs a planned command (its stdin too). */
function runPlanned(transport: Transport, cmd: PlannedCommand, timeoutMs?: number): Promise<CommandResult> {
  return runCommand(transport, cmd.argv, {
    check: false,
    ...(cmd.input ? { input: cmd.input.data } : {}),
    ...(cmd.env ? { env: cmd.env } : {}),
    ...(timeoutMs ? { timeoutMs } : {}),
    ...(cmd.asRoot ? { asRoot: true } : {}),
  })
}

/** The driver named in the environment file. */
export function serviceDriver(name: 'systemd' | 'supervisor'): ServiceDriver {
  return name === 'systemd' ? systemdDriver : supervisorDriver
}

/** Stops the service. Idempotent: stopping a stopped service is success. */
export async function stopService(driver: ServiceDriver, transport: Transport, host: Host, service: string): Promise<void> {
  const result = await runPlanned(transport, driver.stopCommand(host, service), 120_000)
  const outcome = driver.stopOutcome(result, host)
  if (!outcome.ok) throw new OperationError(`Stopping ${service} on ${host.name} failed: ${outcome.detail || 'no answer'}.`)
}

/**
 * Starts the service. Does not throw when the start fails: a service that exits at once is
 * diagnosed by the health wait and the log check, which say why, not by a bare "spawn error".
 */
export async function startService(
  driver: ServiceDriver,
  transport: Transport,
  host: Host,
  service: string,
): Promise<{ ok: boolean; output: string }> {
  const result = await runPlanned(transport, driver.startCommand(host, service), 120_000)
  const outcome = driver.startOutcome(result, host)
  return { ok: outcome.ok, output: outcome.detail }
}

/** Whether the service runs, and the status line that says so. */
export async function readServiceStatus(
  driver: ServiceDriver,
  transport: Transport,
  host: Host,
  service: string,
): Promise<{ running: boolean; status: string }> {
  return driver.parseStatus(await runPlanned(transport, driver.statusCommand(host, service)), host)
}

/** A position in the service's log, read before a start (see `readServiceLogs`). */
export async function readLogCursor(
  driver: ServiceDriver,
  transport: Transport,
  host: Host,
  service: string,
  logPath: string,
): Promise<string | undefined> {
  const result = await runCommand(transport, driver.logCursorCommand(host, service, logPath).argv, { check: false })
  const cursor = result.stdout.trim()
  return result.code === 0 && /^\d+(\.\d+)?$/.test(cursor) ? cursor : undefined
}

/** The last `lines` lines of the service's log (empty when there is no log yet); with `cursor`, only lines written after it. */
export async function readServiceLogs(
  driver: ServiceDriver,
  transport: Transport,
  host: Host,
  service: string,
  lines: number,
  logPath: string,
  cursor?: string,
): Promise<string[]> {
  const cmd = driver.logsCommand(host, service, lines, logPath, cursor)
  const result = await runCommand(transport, cmd.argv, { check: false })
  return result.code === 0 ? result.stdout.split('\n').filter((l) => l.trim() !== '') : []
}

/** One record of the product's log: `<ISO time> <LEVEL> <message>`, with the lines that continue it. */
export interface LogRecord {
  time: string
  level: string
  message: string
}

/**
 * The start of a record as the product writes it (and the lab's emulators): an ISO time, then the
 * level, then the message. A prefix before the time (journalctl's `host unit[pid]: `, a pod's name)
 * is allowed; the level must come right after the time.
 */
const RECORD_START = /^(?:.*?\s)?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+([A-Z]+)\b\s?(.*)$/

/** Levels that say the service is in trouble: the default of `recording.errorPatterns`. */
export const ERROR_LEVELS = ['ERROR', 'FATAL', 'PANIC', 'CRITICAL']

/**
 * The log's records: a line that starts a record (`RECORD_START`) opens one, any other line
 * continues the previous record (an embedded newline in a message never makes a record of its own);
 * lines before the first record are dropped (the tail of an older one).
 */
export function parseLogRecords(lines: string[]): LogRecord[] {
  const records: LogRecord[] = []
  for (const line of lines) {
    const m = RECORD_START.exec(line)
    if (m) records.push({ time: m[1] ?? '', level: m[2] ?? '', message: m[3] ?? '' })
    else if (records.length) {
      const last = records[records.length - 1]
      if (last) last.message += `\n${line}`
    }
  }
  return records
}

/**
 * A journal line systemd itself wrote about the unit (`journalctl -o short-iso`: `<time> <host>
 * systemd[1]: ...`), not the service: its exit statuses, its restarts, and on cgroup v1 hosts the
 * note "Failed to kill control group ..., ignoring: Input/output error" after every exit.
 */
export function fromServiceManager(line: string): boolean {
  return /^\S+ \S+ systemd\[1\]: /.test(line)
}

/** systemd's note on cgroup v1 after a unit's process exited: says nothing about why it did. */
const CGROUP_NOTE = /: Failed to kill control group /

/**
 * The line that best says why a service stopped: its own last error line, else its own last line,
 * else the service manager's last line (its exit status), never systemd's cgroup v1 note.
 */
export function lastTelling(lines: string[]): string | undefined {
  const told = lines.filter((l) => !CGROUP_NOTE.test(l))
  const own = told.filter((l) => !fromServiceManager(l))
  return own.filter((l) => /ERROR|FATAL/i.test(l)).at(-1) ?? own.at(-1) ?? told.at(-1) ?? lines.at(-1)
}

/**
 * The records whose level field says error, each as one sanitized line (`<time> <LEVEL> <message>`,
 * control characters and newlines escaped). Only the level is judged: a message body — user data
 * such as a channel named "cam ERROR" — fails nothing. `levels` are patterns each matched
 * (case-insensitively, whole) against the level field: `recording.errorPatterns` means that now.
 */
export function findLogErrors(lines: string[], levels: string[] = ERROR_LEVELS): string[] {
  const res = levels.map((p) => new RegExp(`^(?:${p})$`, 'i'))
  return parseLogRecords(lines)
    .filter((r) => res.some((re) => re.test(r.level)))
    .map((r) => sanitizeLine(`${r.time} ${r.level} ${r.message}`))
}

/**
 * The lines written at or after `since` (ISO time). Lines start with an ISO timestamp (the
 * service's own log and `journalctl -o short-iso` both do); lines without one are kept, because a
 * multi-line error must not be hidden. Old errors from before the start are not this start's fault.
 */
export function linesSince(lines: string[], since: string): string[] {
  const from = Date.parse(since) - 1000
  return lines.filter((line) => {
    const t = Date.parse(line.split(/\s+/)[0] ?? '')
    return Number.isNaN(t) || t >= from
  })
}
