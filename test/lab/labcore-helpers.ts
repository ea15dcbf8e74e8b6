import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CLI = fileURLToPath(new URL('../../bin/svcops.js', import.meta.url))

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `svcops ...args` as a subprocess, the way a user does. */
export function svcops(args: string[], env: Record<string, string>, onSpawn?: (pid: number) => void): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    if (child.pid !== undefined) onSpawn?.(child.pid)
  })
}

/** Pids of live (non-zombie) processes whose command line contains `needle`. */
export function processesMentioning(needle: string): number[] {
  const found: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ')
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      if (cmdline.includes(needle) && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z') found.push(Number(name))
    } catch {
      // The process exited while the table was read.
      continue
    }
  }
  return found
}

/** True while a live (non-zombie) process has this pid. */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}
