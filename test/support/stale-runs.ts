/**
 * What a test run that died left running. A run's processes are stopped by its own teardowns (the
 * pooled labs by test/support/lab-pool.ts, a file's lab by its `afterAll`); a run killed or crashed
 * before them (a CI timeout's SIGKILL, a worker error vitest does not recover from) leaves its labs
 * up: PostgreSQL, sshd, supervisord and the services, each holding ports and files under the run's
 * temp dir. Each run's dir names the vitest process that made it (`owner`: pid and start time, as
 * pids are reused); the next run stops every process whose arguments name the dir of a run whose
 * owner is gone, then removes that dir. A dir without an owner is left alone: it may be a run that
 * has just made it.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic } from '../../src/core/atomic-write.ts'
import { procEntries, processStartTicks, terminatePids } from '../../src/core/process.ts'

/** The prefix of a run's temp dir (test/support/tmpdir.ts). */
export const RUN_DIR_PREFIX = 'svt-'
const OWNER = 'owner'

/** Records this process as the owner of run dir `dir` (whole or not at all: another run may be reading it). */
export function claimRunDir(dir: string): void {
  writeFileAtomic(join(dir, OWNER), `${process.pid} ${processStartTicks(process.pid) ?? ''}\n`, { mode: 0o644 })
}

/** Whether the process that made `dir` is gone (false when the dir names none it can read). */
function ownerGone(dir: string): boolean {
  const file = join(dir, OWNER)
  if (!existsSync(file)) return false
  const [pid = '', started = ''] = readFileSync(file, 'utf8').trim().split(' ')
  if (!/^\d+$/.test(pid) || !/^\d+$/.test(started)) return false
  return processStartTicks(Number(pid)) !== started
}

/** Pids of the processes whose arguments name a path under `dir`. */
function pidsNaming(dir: string): number[] {
  const needle = `${dir}/`
  return procEntries().filter((pid) => {
    if (pid === process.pid) return false
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(needle)
    } catch {
      // Gone while the table was read.
      return false
    }
  })
}

/**
 * Stops what the dead runs' dirs under `parent` still run (SIGTERM, then SIGKILL after `graceMs`)
 * and removes those dirs; returns the dirs swept. Runs whose owner lives are not touched.
 */
export async function sweepDeadRuns(parent: string, graceMs = 5000): Promise<string[]> {
  const dead = readdirSync(parent)
    .filter((name) => name.startsWith(RUN_DIR_PREFIX))
    .map((name) => join(parent, name))
    .filter(ownerGone)
  for (const dir of dead) {
    await terminatePids(pidsNaming(dir), graceMs)
    rmSync(dir, { recursive: true, force: true })
  }
  return dead
}
