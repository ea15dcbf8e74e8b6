/**
 * scripts/install-system-deps.sh (npm's `pretest`, `predemo`, `npm run system-deps`) runs apt-get as
 * root with the words of SVCOPS_EXTRA_PACKAGES: each must be a Debian package name (or name=version),
 * else it is refused in one sentence before anything runs — a word like `-oDPkg::Pre-Invoke::=...`
 * would otherwise become a root hook of apt. A name that passes reaches the install command as it is.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SCRIPT = fileURLToPath(new URL('../../scripts/install-system-deps.sh', import.meta.url))

/** The script with SVCOPS_EXTRA_PACKAGES set to `extra`, as an unprivileged user (root would install what is missing). */
function systemDeps(extra: string): { code: number | null; stderr: string } {
  const argv = ['env', `SVCOPS_EXTRA_PACKAGES=${extra}`, 'bash', SCRIPT]
  const asUser = process.getuid?.() === 0 ? ['runuser', '-u', 'nobody', '--', ...argv] : argv
  const run = spawnSync(asUser[0] ?? 'env', asUser.slice(1), { encoding: 'utf8' })
  return { code: run.status, stderr: run.stderr }
}

describe('SVCOPS_EXTRA_PACKAGES', () => {
  it('refuses a word that is not a Debian package name, in one sentence, before apt-get or anything else runs', () => {
    const mark = join(mkdtempSync(join(tmpdir(), 'svcops-deps-')), 'hook-ran')
    for (const word of [`-oDPkg::Pre-Invoke::=touch${mark}`, 'Postgresql', 'z', 'zstd;touch', '*', 'zstd=latest']) {
      const run = systemDeps(`zstd ${word}`)
      expect(run.code, word).toBe(2)
      const lines = run.stderr.trim().split('\n')
      expect(lines, word).toHaveLength(1)
      expect(lines[0]).toMatch(/^SVCOPS_EXTRA_PACKAGES: the word \S+ is not a Debian package name; expected names like libpq-dev /)
      expect(run.stderr).not.toContain('apt-get')
    }
    expect(existsSync(mark)).toBe(false)
  })

  it('passes a package name and a name=version to the install command as they are', () => {
    const run = systemDeps('zstd\nsvcops-test-absent svcops-test-pinned=1:2.0~rc1-3+deb12u1')
    expect(run.code).toBe(1) // not root: the command is printed, not run
    const command = /sudo apt-get install -y --no-install-recommends (.*)$/m.exec(run.stderr)?.[1]?.split(' ')
    expect(command).toEqual(expect.arrayContaining(['svcops-test-absent', 'svcops-test-pinned=1:2.0~rc1-3+deb12u1']))
    expect(command).not.toContain('zstd') // installed
  })
})
