import { describe, expect, it } from 'vitest'
import { runSvcops as svcops } from '../support/cli.ts'

describe('svcops CLI', () => {
  it('prints the version', async () => {
    const { code, stdout } = await svcops(['--version'])
    expect(code).toBe(0)
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
  })

  it('teaches in --help: options, exit codes and examples', async () => {
    const { code, stdout } = await svcops(['--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('--env <name>')
    expect(stdout).toContain('Exit codes:')
    expect(stdout).toContain('Examples:')
  })

  it('exits 2 on an unknown option or command', async () => {
    expect((await svcops(['--no-such-option'])).code).toBe(2)
    expect((await svcops(['no-such-command'])).code).toBe(2)
  })
})
