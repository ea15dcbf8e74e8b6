/**
 * The lab's processes: a service started detached in its own session (it outlives `svcops lab up`),
 * whether an entry's process still runs (its pid and start time: pids are reused), how it is
 * stopped with its children, and how its start is waited for.
 */
import { spawn } from 'node:child_process'
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs'
import { OperationError } from '../core/errors.ts'
import { PROJECT_ROOT } from '../core/paths.ts'
import { descendantsOf, processStartTicks, terminatePids } from '../core/process.ts'
import type { LabEntry } from './state.ts'

/** Starts `argv` in its own session with output appended to `log`; it outlives this process. */
export function spawnDetached(argv: string[], log: string, options: { cwd?: string; env?: Record<string, string> } = {}): number {
  const fd = openSync(log, 'a', 0o600)
  try {
    // Only what the child needs: the CLI's environment may hold secrets (passwords by env reference).
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/', ...options.env }
    // A hand-written spawn, not zx: a daemon in its own session that outlives this process, where
    // zx would wait for it and keep its output.
    const child = spawn(argv[0] ?? '', argv.slice(1), { cwd: options.cwd ?? PROJECT_ROOT, env, detached: true, stdio: ['ignore', fd, fd] })
    child.unref()
    if (child.pid === undefined) throw new OperationError(`Could not start ${argv[0] ?? ''} (see ${log}).`)
    return child.pid
  } finally {
    closeSync(fd)
  }
}

/** True while the entry's process runs: the same pid, started at the same time. */
export function isRunning(entry: LabEntry): boolean {
  if (entry.pid === undefined) return false
  const ticks = processStartTicks(entry.pid)
  return ticks !== undefined && (entry.info.startTicks === undefined || entry.info.startTicks === '' || entry.info.startTicks === ticks)
}

/** Stops the entry's process and its children (SIGTERM, then SIGKILL after 5 s). */
export async function stopProcess(entry: LabEntry): Promise<void> {
  if (entry.pid !== undefined && isRunning(entry)) await terminatePids([entry.pid, ...descendantsOf(entry.pid)], 5000)
}

/** Waits until `url` answers success, while process `pid` lives; false when it died or the time ran out. */
export async function waitForHealth(url: string, pid: number, timeoutMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (processStartTicks(pid) === undefined) return false
    try {
      // Generous per request: on two cores busy with a 50-host start (load average 30+) the emulator
      // answered 200 while a 1 s limit had already given up on the request, every time for 20 s.
      if ((await fetch(url, { signal: AbortSignal.timeout(5000) })).ok) return true
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return false
}

/** The last lines of a log, for an error. */
export function readTail(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').slice(-3).join(' ') : ''
}
