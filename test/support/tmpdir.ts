/**
 * vitest global setup: every test run gets its own temporary directory (TMPDIR, which os.tmpdir()
 * and mkdtemp read), removed when the run ends, so suites leave nothing in /tmp. It is 0755 so the
 * `postgres` and lab users the suites run servers as can reach their own directories inside it.
 * The name is short: lab hosts keep unix sockets under it, and socket paths are limited to 107 bytes.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'svt-'))
  chmodSync(dir, 0o755)
  process.env.TMPDIR = dir
  return () => rmSync(dir, { recursive: true, force: true })
}
