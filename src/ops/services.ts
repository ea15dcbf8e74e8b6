/**
 * Service drivers: stop, start, status and the last log lines of the recording service. `systemd`
 * for production hosts (`systemctl`, `journalctl -u`), `supervisor` for lab hosts (the sandbox's
 * own supervisord; the service writes its log file itself). Commands are argv arrays built here.
 */
import type { RecordingHostConfig } from '../config/schema.ts'
import { hostPath, supervisorctlArgv } from './hosts.ts'
import type { PlannedCommand } from './packages.ts'
import { runCommand, type Transport } from './runner.ts'

type Host = Pick<RecordingHostConfig, 'root' | 'name'>

export interface ServiceDriver {
  readonly name: 'systemd' | 'supervisor'
  stopCommand(host: Host, service: string): PlannedCommand
  startCommand(host: Host, service: string): PlannedCommand
  statusCommand(host: Host, service: string): PlannedCommand
  /** True when the status command's answer says the service runs. */
  parseRunning(code: number | null, stdout: string): boolean
  /** The last `lines` log lines of the service; with `cursor`, only lines written after it. */
  logsCommand(host: Host, service: string, lines: number, logPath: string, cursor?: string): PlannedCommand
  /** A command printing a position in the log (taken before a start, so only that start's lines are judged). */
  logCursorCommand(host: Host, service: string, logPath: string): PlannedCommand
}

/** systemd units: `systemctl stop|start|is-active`, `journalctl -u UNIT -n N`. */
export const systemdDriver: ServiceDriver = {
  name: 'systemd',
  stopCommand: (_h, unit) => ({ argv: ['systemctl', 'stop', unit], mutates: true }),
  startCommand: (_h, unit) => ({ argv: ['systemctl', 'start', unit], mutates: true }),
  statusCommand: (_h, unit) => ({ argv: ['systemctl', 'is-active', unit], mutates: false }),
  parseRunning: (code, stdout) => code === 0 && stdout.trim() === 'active',
  logsCommand: (_h, unit, lines, _logPath, cursor) => ({ argv: ['journalctl', '-u', unit, '-n', String(lines), '--no-pager', '-o', 'short-iso', ...(cursor ? [`--since=@${cursor}`] : [])], mutates: false }),
  // The host's own clock: a position in time that journalctl --since understands, immune to clock skew.
  logCursorCommand: () => ({ argv: ['date', '+%s.%N'], mutates: false }),
}

/** Programs of a supervisord (the lab's): `supervisorctl -c CONF stop|start|status PROGRAM`. */
export const supervisorDriver: ServiceDriver = {
  name: 'supervisor',
  stopCommand: (h, program) => ({ argv: supervisorctlArgv(h, ['stop', program]), mutates: true }),
  startCommand: (h, program) => ({ argv: supervisorctlArgv(h, ['start', program]), mutates: true }),
  statusCommand: (h, program) => ({ argv: supervisorctlArgv(h, ['status', program]), mutates: false }),
  parseRunning: (_code, stdout) => /\bRUNNING\b/.test(stdout),
  logsCommand: (h, _program, lines, logPath, cursor) =>
    cursor === undefined
      ? { argv: ['tail', '-n', String(lines), hostPath(h, logPath)], mutates: false }
      : { argv: ['sh', '-c', 'tail -c +"$1" "$2" | tail -n "$3"', 'sh', String(Number(cursor) + 1), hostPath(h, logPath), String(lines)], mutates: false },
  // The log file's size in bytes: what the service writes after it is this start's.
  logCursorCommand: (h, _program, logPath) => ({ argv: ['sh', '-c', 'stat -c %s "$1" 2>/dev/null || echo 0', 'sh', hostPath(h, logPath)], mutates: false }),
}

/** The driver named in the environment file. */
export function serviceDriver(name: 'systemd' | 'supervisor'): ServiceDriver {
  return name === 'systemd' ? systemdDriver : supervisorDriver
}

/**
 * Stops the service. Idempotent: stopping a stopped service is success (supervisorctl says
 * "not running", systemctl exits 0).
 */
export async function stopService(driver: ServiceDriver, transport: Transport, host: Host, service: string): Promise<void> {
  const cmd = driver.stopCommand(host, service)
  const result = await runCommand(transport, cmd.argv, { check: false, timeoutMs: 120_000 })
  if (result.code !== 0 && !/not running/i.test(result.stdout + result.stderr)) {
    await runCommand(transport, cmd.argv, { timeoutMs: 120_000 })
  }
}

/**
 * Starts the service. Does not throw when the start command fails: a service that exits at once
 * is diagnosed by the health wait and the log check, which say why, not by supervisorctl's "spawn error".
 */
export async function startService(driver: ServiceDriver, transport: Transport, host: Host, service: string): Promise<{ ok: boolean; output: string }> {
  const cmd = driver.startCommand(host, service)
  const result = await runCommand(transport, cmd.argv, { check: false, timeoutMs: 120_000 })
  const output = (result.stdout + result.stderr).trim()
  return { ok: result.code === 0 || /already started/i.test(output), output }
}

/** Whether the service runs, and the status line that says so. */
export async function readServiceStatus(driver: ServiceDriver, transport: Transport, host: Host, service: string): Promise<{ running: boolean; status: string }> {
  const cmd = driver.statusCommand(host, service)
  const result = await runCommand(transport, cmd.argv, { check: false })
  return { running: driver.parseRunning(result.code, result.stdout), status: result.stdout.trim() || result.stderr.trim() }
}

/** A position in the service's log, read before a start (see `readServiceLogs`). */
export async function readLogCursor(driver: ServiceDriver, transport: Transport, host: Host, service: string, logPath: string): Promise<string | undefined> {
  const result = await runCommand(transport, driver.logCursorCommand(host, service, logPath).argv, { check: false })
  const cursor = result.stdout.trim()
  return result.code === 0 && /^\d+(\.\d+)?$/.test(cursor) ? cursor : undefined
}

/** The last `lines` lines of the service's log (empty when there is no log yet); with `cursor`, only lines written after it. */
export async function readServiceLogs(driver: ServiceDriver, transport: Transport, host: Host, service: string, lines: number, logPath: string, cursor?: string): Promise<string[]> {
  const cmd = driver.logsCommand(host, service, lines, logPath, cursor)
  const result = await runCommand(transport, cmd.argv, { check: false })
  return result.code === 0 ? result.stdout.split('\n').filter((l) => l.trim() !== '') : []
}

/** Log lines matching any of the error patterns (case-insensitive regular expressions). */
export function findLogErrors(lines: string[], patterns: string[]): string[] {
  const res = patterns.map((p) => new RegExp(p, 'i'))
  return lines.filter((line) => res.some((re) => re.test(line)))
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
