/** Runs `svcops` as a subprocess, the way users and schedulers do, and collects what it printed. */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { svcopsCommand } from '../../src/core/paths.ts'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface CliRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface CliOptions {
  /** Extra environment variables, over this process's environment. */
  env?: Record<string, string>
  /** Written to the command's stdin (closed either way, so nothing waits for input). */
  input?: string
  cwd?: string
  /** Called with the child's pid right after it started (to signal it, or find its children). */
  onSpawn?: (pid: number) => void
}

/** Runs `svcops ...args` and resolves with its exit code, signal and output once it exited. */
export function runSvcops(args: string[], options: CliOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const [node = process.execPath, ...cli] = svcopsCommand()
    const child = spawn(node, [...cli, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
    child.stdin.on('error', () => {
      // The command may exit before reading its input; its exit code tells what happened.
    })
    child.stdin.end(options.input ?? '')
    if (child.pid !== undefined) options.onSpawn?.(child.pid)
  })
}

/** Whether a journal line records `boundary` (`step` or `step@host`) finished. */
function finishes(line: string, boundary: string): boolean {
  const [step, host] = boundary.split('@')
  try {
    const e = JSON.parse(line) as { step?: string; host?: string; status?: string }
    return e.step === step && e.host === host && e.status === 'ok'
  } catch {
    // A line still being written, or empty: not a finished step.
    return false
  }
}

/**
 * Runs `svcops ...args` and kills it with SIGKILL as soon as `reached()` says so (checked every
 * 2 ms while it runs). Resolves with `killedAt` when it was killed by us.
 */
function runSvcopsKilledWhen(args: string[], reached: () => boolean, options: CliOptions): Promise<CliRun & { killedAt?: string }> {
  let timer: NodeJS.Timeout | undefined
  let killedAt: string | undefined
  return runSvcops(args, {
    ...options,
    onSpawn(pid) {
      options.onSpawn?.(pid)
      timer = setInterval(() => {
        if (!reached()) return
        clearInterval(timer)
        killedAt = new Date().toISOString()
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // It ended on its own before the kill: the caller sees no SIGKILL.
        }
      }, 2)
    },
  }).then((run) => {
    clearInterval(timer)
    return { ...run, ...(killedAt ? { killedAt } : {}) }
  })
}

/**
 * Runs `svcops ...args` and kills it with SIGKILL from outside as soon as its journal shows
 * `boundary` (`step` or `step@host`) finished: a crash at (or just after) that step boundary, as a
 * power cut or an OOM kill would leave it. The journal is the newest run folder in `runsDir`.
 */
export function runSvcopsKilledAt(
  args: string[],
  boundary: string,
  runsDir: string,
  options: CliOptions = {},
): Promise<CliRun & { killedAt?: string }> {
  const before = new Set(existsSync(runsDir) ? readdirSync(runsDir) : [])
  return runSvcopsKilledWhen(
    args,
    () => {
      const id = (existsSync(runsDir) ? readdirSync(runsDir) : [])
        .filter((d) => !before.has(d))
        .sort()
        .at(-1)
      if (!id) return false
      const file = join(runsDir, id, 'journal.jsonl')
      return (
        existsSync(file) &&
        readFileSync(file, 'utf8')
          .split('\n')
          .some((line) => finishes(line, boundary))
      )
    },
    { ...options, env: { SVCOPS_RUNS_DIR: runsDir, ...options.env } },
  )
}

/**
 * Runs `svcops ...args` that continues run `id` (`resume ID`, `rollback ... --run ID`) and kills it
 * with SIGKILL as soon as the run's journal shows `boundary` finished by this command: only lines
 * appended after it started count, so a boundary the run already passed before (a step that a
 * resume runs again) is caught when the resume itself finishes it. Chained crash tests kill a run
 * at one boundary, then its resume at the next.
 */
export function runSvcopsKilledInRun(
  args: string[],
  id: string,
  boundary: string,
  runsDir: string,
  options: CliOptions = {},
): Promise<CliRun & { killedAt?: string }> {
  const file = join(runsDir, id, 'journal.jsonl')
  const offset = readFileSync(file).length
  return runSvcopsKilledWhen(
    args,
    () =>
      readFileSync(file)
        .subarray(offset)
        .toString('utf8')
        .split('\n')
        .some((line) => finishes(line, boundary)),
    { ...options, env: { SVCOPS_RUNS_DIR: runsDir, ...options.env } },
  )
}

/**
 * The command line of every process on the machine (`/proc/PID/cmdline`, what `ps -eo args` shows),
 * one process a line. Read without starting a process: sampling `ps` every 100 ms kept a core busy.
 */
export async function processArgumentsNow(): Promise<string> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name))
  const lines = await Promise.all(
    pids.map((pid) =>
      readFile(`/proc/${pid}/cmdline`).then(
        (bytes) => bytes.toString('utf8').replaceAll('\0', ' ').trim(),
        () => '', // The process ended between the listing and the read.
      ),
    ),
  )
  return lines.filter(Boolean).join('\n')
}

/** Samples `processArgumentsNow()` every `everyMs` until `stop()` (which takes one last sample). */
export function sampleProcessArguments(everyMs: number, keep: (args: string) => void): { stop: () => Promise<void> } {
  let running: Promise<void> | undefined
  const sample = (): Promise<void> =>
    (running ??= processArgumentsNow()
      .then(keep)
      .finally(() => (running = undefined)))
  const timer = setInterval(() => void sample(), everyMs)
  void sample()
  return {
    async stop() {
      clearInterval(timer)
      await running
      await sample()
    },
  }
}
