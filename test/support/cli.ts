/** Runs `svcops` as a subprocess, the way users and schedulers do, and collects what it printed. */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
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
  const newest = (): string | undefined =>
    (existsSync(runsDir) ? readdirSync(runsDir) : [])
      .filter((d) => !before.has(d))
      .sort()
      .at(-1)
  return runSvcopsKilledWhen(args, boundary, runsDir, newest, options)
}

/**
 * The same for a command that continues run `id` (`rollback ... --run ID`, `resume ID`): killed once
 * that run's journal shows `boundary` (`rollback:install@ingest`) finished.
 */
export function runSvcopsKilledInRun(
  args: string[],
  id: string,
  boundary: string,
  runsDir: string,
  options: CliOptions = {},
): Promise<CliRun & { killedAt?: string }> {
  return runSvcopsKilledWhen(args, boundary, runsDir, () => id, options)
}

function runSvcopsKilledWhen(
  args: string[],
  boundary: string,
  runsDir: string,
  runId: () => string | undefined,
  options: CliOptions,
): Promise<CliRun & { killedAt?: string }> {
  const [step, host] = boundary.split('@')
  let timer: NodeJS.Timeout | undefined
  let killedAt: string | undefined
  return runSvcops(args, {
    ...options,
    env: { SVCOPS_RUNS_DIR: runsDir, ...options.env },
    onSpawn(pid) {
      options.onSpawn?.(pid)
      timer = setInterval(() => {
        const id = runId()
        if (!id) return
        const file = join(runsDir, id, 'journal.jsonl')
        if (!existsSync(file)) return
        const reached = readFileSync(file, 'utf8')
          .split('\n')
          .some((line) => {
            try {
              const e = JSON.parse(line) as { step?: string; host?: string; status?: string }
              return e.step === step && e.host === host && e.status === 'ok'
            } catch {
              return false
            }
          })
        if (!reached) return
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
