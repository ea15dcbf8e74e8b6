/**
 * The `$` playbooks and site steps run local commands with (src/core/shell.ts): a command runs
 * without the operator's shell startup files (bash sources ~/.bashrc for a command whose stdin is a
 * socket, as Node's pipes are, which cost up to seconds a command), keeps bash's strictness, never
 * throws on a non-zero exit, and hands a child no credential svcops read from its environment.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { $ as zxDefault } from 'zx'

// Read from the environment before svcops loads, as a password given to the CLI is; gone again after
// this file, whose worker goes on to other files (their CLI children inherit its environment).
const passwordBefore = process.env.SVCOPS_MANAGER_PASSWORD
process.env.SVCOPS_MANAGER_PASSWORD = 'shell-test-password-H8x2'
afterAll(() => {
  if (passwordBefore === undefined) delete process.env.SVCOPS_MANAGER_PASSWORD
  else process.env.SVCOPS_MANAGER_PASSWORD = passwordBefore
})
const { $ } = await import('../../src/core/shell.ts')

/** A HOME whose ~/.bashrc leaves a mark when bash sources it. */
function homeWithMarkingBashrc(): { home: string; mark: string } {
  const home = mkdtempSync(join(tmpdir(), 'svcops-shell-home-'))
  const mark = join(home, 'bashrc-was-sourced')
  writeFileSync(join(home, '.bashrc'), `touch ${mark}\n`)
  return { home, mark }
}

describe('the svcops $', () => {
  it("runs a command without sourcing the operator's ~/.bashrc, where zx's defaults source it", async () => {
    const withDefaults = homeWithMarkingBashrc()
    await zxDefault({ quiet: true, env: { HOME: withDefaults.home, PATH: process.env.PATH ?? '' } })`true`
    expect(existsSync(withDefaults.mark)).toBe(true) // the cause, still there in zx's defaults

    const configured = homeWithMarkingBashrc()
    const out = await $({ env: { HOME: configured.home, PATH: process.env.PATH ?? '' } })`echo ran`
    expect(out.stdout).toBe('ran\n')
    expect(existsSync(configured.mark)).toBe(false)
  })

  it('keeps pipefail, quotes its arguments and reports a failure by exit code instead of throwing', async () => {
    const failed = await $`false | cat`
    expect(failed.exitCode).toBe(1)
    const odd = "it's; rm -rf /"
    expect((await $`printf %s ${odd}`).stdout).toBe(odd)
  })

  it('gives a child no credential svcops read from its environment', async () => {
    const out = await $`env`
    expect(out.stdout).toContain('PATH=')
    expect(out.stdout).not.toContain('shell-test-password-H8x2')
  })
})
