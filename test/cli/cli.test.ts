import { execFileSync } from 'node:child_process'
import { dirname } from 'node:path'
import { describe, expect, it } from 'vitest'
import { projectPath, svcopsCommand } from '../../src/core/paths.ts'
import { buildProgram, valueFlagsOf } from '../../src/commands/program.ts'
import { commandGroups, groupsFor } from '../../src/commands/registry.ts'
import { runSvcops as svcops, runSvcopsInProcess } from '../support/cli.ts'

describe('svcops CLI', () => {
  it('prints the version', async () => {
    const { code, stdout } = await svcops(['--version'])
    expect(code).toBe(0)
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
  })

  it('runs as an executable through its #! line, with the flags the tests and playbooks use too', () => {
    // A scheduler runs bin/svcops itself: env -S splits the line into node and its V8 flag.
    const path = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`
    const out = execFileSync(projectPath('bin/svcops'), ['--version'], { env: { ...process.env, PATH: path }, encoding: 'utf8' })
    expect(out.trim()).toMatch(/^\d+\.\d+\.\d+$/)
    const [node, ...rest] = svcopsCommand()
    expect(node).toBe(process.execPath)
    expect(rest).toEqual(['--max-semi-space-size=4', projectPath('bin/svcops')])
  })

  // Help and an unknown command load every command group, which the start-up cases below load in this
  // worker anyway (buildProgram()): their answers are read here; the version, the #! line and an
  // unknown option are real processes.
  it('teaches in --help: options, exit codes and examples', async () => {
    const { code, stdout } = await runSvcopsInProcess(['--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('--env <name>')
    expect(stdout).toContain('Exit codes:')
    expect(stdout).toContain('Examples:')
  })

  it('exits 2 on an unknown option or command', async () => {
    expect((await svcops(['--no-such-option'])).code).toBe(2)
    expect((await runSvcopsInProcess(['no-such-command'])).code).toBe(2)
  })
})

describe('svcops start-up: only the command group a run needs is loaded', () => {
  it.each([
    [['scan', 'sdk', '.', '--from', '1.0.0', '--to', '7.0.0'], ['scan']],
    [
      ['--env', 'lab', 'rollback', 'recording'],
      ['upgrade', 'rollback', 'verify'],
    ],
    [
      ['-e', 'prod', '--json', 'resume', 'ID'],
      ['runs', 'resume'],
    ],
    [['--stack-file', 'x.yaml', 'backup', 'list'], ['backup']],
  ])('%j loads the group of %j', async (argv, commands) => {
    expect(groupsFor(argv, valueFlagsOf(await buildProgram())).map((g) => g.commands)).toEqual([commands])
  })

  it.each([[[]], [['--help']], [['help', 'scan']], [['no-such-command']], [['-V', '--help']]])(
    '%j loads every group (help and unknown commands see all of them)',
    async (argv) => {
      expect(groupsFor(argv, valueFlagsOf(await buildProgram()))).toHaveLength(commandGroups.length)
    },
  )

  it.each([[['-V']], [['--json', '-V']]])('%j loads no group: the version names no command', async (argv) => {
    expect(groupsFor(argv, valueFlagsOf(await buildProgram()))).toEqual([])
  })

  it('answers a command --help from its group alone', async () => {
    const { code, stdout } = await runSvcopsInProcess(['scan', 'sdk', '--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('Usage: svcops scan sdk')
    expect(stdout).toContain('Exit codes (for CI)')
  })
})
