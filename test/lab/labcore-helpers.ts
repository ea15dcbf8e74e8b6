import { readdirSync, readFileSync } from 'node:fs'
import { runSvcops, type CliRun } from '../support/cli.ts'

export { ROOT } from '../support/cli.ts'
export type CliResult = CliRun

/** Runs `svcops ...args` as a subprocess, the way a user does. */
export function svcops(args: string[], env: Record<string, string>, onSpawn?: (pid: number) => void): Promise<CliResult> {
  return runSvcops(args, { env, ...(onSpawn ? { onSpawn } : {}) })
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
export { isAlive as isRunning } from '../../src/core/process.ts'
