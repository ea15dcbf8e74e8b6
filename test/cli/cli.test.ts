import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'

const bin = new URL('../../bin/svcops.js', import.meta.url).pathname

function svcops(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env: { ...process.env, ...env } })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe('svcops CLI', () => {
  it('prints the version', () => {
    const { code, stdout } = svcops(['--version'])
    expect(code).toBe(0)
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
  })

  it('teaches in --help: options, exit codes and examples', () => {
    const { code, stdout } = svcops(['--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('--env <name>')
    expect(stdout).toContain('Exit codes:')
    expect(stdout).toContain('Examples:')
  })

  it('exits 2 on an unknown option or command', () => {
    expect(svcops(['--no-such-option']).code).toBe(2)
    expect(svcops(['no-such-command']).code).toBe(2)
  })
})
