/**
 * vitest global setup of the e2e tier: the directory the recording labs shared per worker live in
 * (test/recording/lab-pool.ts). A lab's processes are detached, so a lab outlives the test file that
 * brought it up and the next file on the same worker takes it, reset, instead of a `labUp` of its own;
 * this setup `provide`s where the labs are kept and, when the run ends, brings every one of them down.
 * Run under another config (nothing provided), each file brings its own lab up and down as before.
 */
import { existsSync, mkdirSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { labDown } from '../../src/lab/lab.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Directory of the run's pooled labs, one sub-directory a worker and lab shape. */
    labPool: string
  }
}

/** The lab dir and stacks dir of a pooled lab's slot (both paths `labUp` and `labDown` take). */
export function slotLabPaths(slot: string): { dir: string; stacksDir: string } {
  return { dir: join(slot, 'lab'), stacksDir: join(slot, 'stacks') }
}

/**
 * Brings down every lab of the pool, all at once (each lab's processes are its own; one after the
 * other they held the run's end for seconds while the cores were idle); a lab that fails to stop is
 * named, the others still go.
 */
export async function bringPoolDown(pool: string): Promise<void> {
  if (!existsSync(pool)) return
  const names = readdirSync(pool)
  const results = await Promise.allSettled(names.map((name) => labDown(slotLabPaths(join(pool, name)))))
  const failures = results.flatMap((r, i) =>
    r.status === 'rejected' ? [`${names[i]}: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`] : [],
  )
  if (failures.length > 0) throw new Error(`The pooled labs did not all stop: ${failures.join('; ')}`)
}

export default function setup(project: TestProject): () => Promise<void> {
  // Under the run's temp dir (test/support/tmpdir.ts), so a lab the teardown could not stop is still named there.
  const pool = join(tmpdir(), 'labs')
  mkdirSync(pool, { recursive: true })
  project.provide('labPool', pool)
  return () => bringPoolDown(pool)
}
