/** Runs `svcops` as a subprocess, the way users and schedulers do, and collects what it printed. */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CLI = fileURLToPath(new URL('../../bin/svcops', import.meta.url))

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
    const child = spawn(process.execPath, [CLI, ...args], {
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
