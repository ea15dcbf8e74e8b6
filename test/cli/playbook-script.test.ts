/**
 * A playbook file runs by itself, with node and with zx (`npx zx playbooks/verify.ts --help`): zx
 * imports the file it is given, so the playbook cannot rely on `import.meta.main`. Either way it is
 * the CLI's command, with its help, its refusals and its exit code.
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../support/cli.ts'

const ZX = join(ROOT, 'node_modules', 'zx', 'build', 'cli.js')

function run(runner: string[], args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [...runner, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, SVCOPS_STACKS_DIR: ROOT },
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe.each([
  ['node', []],
  ['zx', [ZX]],
])('playbooks/verify.ts run by %s', (_name, runner: string[]) => {
  it('prints the help of svcops verify recording and exits 0', () => {
    const r = run(runner, ['playbooks/verify.ts', '--help'])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain('Usage: svcops verify recording [options]')
    expect(r.stdout).toContain('--no-test-recording')
  })

  it('refuses an unknown environment in one sentence with the CLI exit code (2)', () => {
    const r = run(runner, ['playbooks/verify.ts', '--env', 'no-such-env'])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("Pulumi.no-such-env.yaml' does not exist")
  })
})
