/**
 * vitest global setup: every test run gets its own temporary directory (TMPDIR, which os.tmpdir()
 * and mkdtemp read), removed when the run ends, so suites leave nothing in /tmp. It is 0755 so the
 * `postgres` and lab users the suites run servers as can reach their own directories inside it.
 * The name is short: lab hosts keep unix sockets under it, and socket paths are limited to 107 bytes.
 *
 * vitest runs this setup once for the root config and once more for each project that extends it,
 * all in one process, and tears the root's down first. One directory serves them all and the last
 * teardown removes it: removed by the first, it took the pooled recording labs' files (sshd's pid
 * file among them) away before the e2e project's teardown could bring those labs down, and their
 * sshd outlived the run. A run that dies before its teardowns (killed, or a worker error vitest
 * does not recover from) leaves them running: the next run stops them (stale-runs.ts).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { claimRunDir, RUN_DIR_PREFIX, sweepDeadRuns } from './stale-runs.ts'

/** The run's directory and how many of this process's global setups still use it. */
interface RunDir {
  dir: string
  users: number
}

// On globalThis: each project loads this module on its own, so module state is not shared.
const KEY = Symbol.for('svcops.test.runDir')
const shared = globalThis as { [KEY]?: RunDir }

export default async function setup(): Promise<() => void> {
  if (!shared[KEY]) {
    // A run that died before its teardowns left its labs running under its dir: stopped first (stale-runs.ts).
    const swept = await sweepDeadRuns(tmpdir())
    if (swept.length > 0) console.warn(`Stopped what ${swept.length} earlier test run(s) left running: ${swept.join(', ')}`)
  }
  const run = (shared[KEY] ??= { dir: makeRunDir(), users: 0 })
  run.users++
  return () => {
    if (--run.users > 0) return
    delete shared[KEY]
    rmSync(run.dir, { recursive: true, force: true })
  }
}

/** A new directory for the run under the current temp dir, made TMPDIR for the run and its workers. */
function makeRunDir(): string {
  const dir = mkdtempSync(join(tmpdir(), RUN_DIR_PREFIX))
  chmodSync(dir, 0o755)
  claimRunDir(dir)
  process.env.TMPDIR = dir
  return dir
}
