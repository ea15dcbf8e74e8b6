/**
 * A command measured as a whole process tree, the way the benchmarks report it: wall time, CPU time
 * (user + system of the command and every descendant it waited for, from the kernel's accounting
 * through GNU time's wait4) and peak RSS (of the largest single process). CPU time is what to
 * compare on a shared machine: other work slows the wall clock far more than it inflates CPU.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'

/** What one measured command took. */
export interface Measured {
  code: number | null
  wallS: number
  userS: number
  sysS: number
  /** userS + sysS. */
  cpuS: number
  rssMb: number
  stdout: string
  stderr: string
}

/** Runs `argv` under /usr/bin/time; `env` is added to this process's environment. */
export function measureCommand(argv: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-bench-time-'))
  const timeFile = join(dir, 'time.txt')
  const started = performance.now()
  return new Promise<Measured>((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', '%U %S %M', '-o', timeFile, ...argv], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => {
      const wallS = (performance.now() - started) / 1000
      try {
        // time writes "Command exited with non-zero status N" before the figures when it did.
        const [user = NaN, sys = NaN, rssKb = NaN] = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)?.split(' ').map(Number) ?? []
        resolve({ code, wallS, userS: user, sysS: sys, cpuS: user + sys, rssMb: rssKb / 1024, stdout, stderr })
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)))
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })
}

/** The 1-, 5- and 15-minute load averages, as `uptime` prints them. */
export function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
}

/** The median of `xs` (the upper one of an even count). */
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
