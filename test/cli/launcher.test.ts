/**
 * `bin/svcops`, the executable users run: it starts Node on bin/svcops.cjs by exec, with the young-
 * generation cap only for the commands that stream a dump. A `node` placed first on PATH prints the
 * arguments it was given, which is exactly what the launcher decides; the real Node runs it last.
 */
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildProgram, valueFlagsOf } from '../../src/commands/program.ts'
import { commandGroups } from '../../src/commands/registry.ts'
import { ROOT } from '../support/cli.ts'

const LAUNCHER = join(ROOT, 'bin/svcops')
const CAP = '--max-semi-space-size=1'
let fakeBin: string

/** The arguments `bin/svcops` (or `via`) hands to node for `args`. */
function nodeArgsFor(args: string[], via = LAUNCHER): string[] {
  const r = spawnSync(via, args, { encoding: 'utf8', env: { ...process.env, PATH: `${fakeBin}:${process.env.PATH ?? ''}` } })
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout) as string[]
}

describe('bin/svcops', () => {
  beforeAll(() => {
    fakeBin = mkdtempSync(join(tmpdir(), 'svcops-launcher-'))
    writeFileSync(
      join(fakeBin, 'node'),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} -e 'process.stdout.write(JSON.stringify(process.argv.slice(1)))' -- "$@"\n`,
    )
    chmodSync(join(fakeBin, 'node'), 0o755)
  })
  afterAll(() => rmSync(fakeBin, { recursive: true, force: true }))

  const cases: [string, string[], boolean][] = [
    ['backup create', ['backup', 'create'], true],
    ['upgrade after a global option with a value', ['-e', 'prod', 'upgrade', 'recording', '--to', '2.0.0'], true],
    ['rollback after --env-file', ['--env-file', 'stacks/Pulumi.lab.yaml', 'rollback', 'recording'], true],
    ['resume after --json', ['--json', 'resume'], true],
    ['scan sdk', ['scan', 'sdk', '.', '--from', '1.0.0', '--to', '7.0.0'], false],
    ['an option value that names a streaming command', ['--env', 'backup', 'plan', 'live'], false],
    ['--env=name form', ['--env=prod', 'backup', 'list'], true],
    ['no command', ['--version'], false],
  ]
  it.each(cases)('%s', (_name, args, capped) => {
    const argv = nodeArgsFor(args)
    const entry = argv.indexOf(join(ROOT, 'bin/svcops.cjs'))
    expect(entry, JSON.stringify(argv)).toBeGreaterThanOrEqual(0)
    expect(argv.slice(0, entry)).toEqual(capped ? [CAP] : [])
    expect(argv.slice(entry + 1)).toEqual(args)
  })

  it('finds bin/svcops.cjs through a symlink, as npm installs it', () => {
    const link = join(fakeBin, 'svcops')
    symlinkSync(LAUNCHER, link)
    expect(nodeArgsFor(['scan', 'sdk', '.'], link)).toEqual([join(ROOT, 'bin/svcops.cjs'), 'scan', 'sdk', '.'])
  })

  it('skips the same global options with a value as the program has, and caps only commands that exist', async () => {
    const script = readFileSync(LAUNCHER, 'utf8')
    const skipped = /^\s*([-\w|]+)\) skip=1 ;;$/m.exec(script)?.[1]?.split('|') ?? []
    expect(skipped.sort()).toEqual(valueFlagsOf(await buildProgram(['--version'])).sort())
    const capped = /^\s*([\w|]+)\) exec node --max-semi-space-size=1/m.exec(script)?.[1]?.split('|') ?? []
    expect(capped.length).toBeGreaterThan(0)
    for (const command of capped)
      expect(
        commandGroups.some((g) => g.commands.includes(command)),
        command,
      ).toBe(true)
  })

  it('runs the real CLI', () => {
    const r = spawnSync(LAUNCHER, ['--version'], { encoding: 'utf8' })
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version)
  })
})
