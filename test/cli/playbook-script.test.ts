/**
 * Every playbook file runs by itself, with node and with zx (`npx zx playbooks/verify.ts --help`):
 * zx imports the file it is given, so the playbook cannot rely on `import.meta.main`. It reads its
 * arguments through commander with the option table its `svcops` command is built from: the same
 * options in its help, the same refusal of bad input (one sentence naming the flag, exit 2, nothing
 * written).
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { GLOBAL_OPTIONS, shapeOf, type CommandSpec } from '../../src/core/option-table.ts'
import { svcopsCommand } from '../../src/core/paths.ts'
import { BACKUP_RUN } from '../../playbooks/lib/backup-commands.ts'
import { UPGRADE_LIVE, VERIFY_LIVE } from '../../playbooks/lib/live-commands.ts'
import { DOCTOR_RECORDING, ROLLBACK_RECORDING, UPGRADE_RECORDING, VERIFY_RECORDING } from '../../playbooks/lib/recording-commands.ts'
import { ROOT } from '../support/cli.ts'
import { parseScriptArguments } from '../../src/edge/script.ts'

const ZX = join(ROOT, 'node_modules', 'zx', 'build', 'cli.js')

/** Every playbook a user runs by itself, and the command it is. */
const PLAYBOOKS: [string, CommandSpec][] = [
  ['playbooks/backup.ts', BACKUP_RUN],
  ['playbooks/doctor.ts', DOCTOR_RECORDING],
  ['playbooks/rollback.ts', ROLLBACK_RECORDING],
  ['playbooks/upgrade.ts', UPGRADE_RECORDING],
  ['playbooks/upgrade-live.ts', UPGRADE_LIVE],
  ['playbooks/verify.ts', VERIFY_RECORDING],
  ['playbooks/verify-live.ts', VERIFY_LIVE],
]

const RUNNERS: [string, string[]][] = [
  ['node', []],
  ['zx', [ZX]],
]

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `command` (node and its arguments) from the checkout; asynchronously, so that the test worker keeps answering. */
function run(command: string[], env: Record<string, string> = {}): Promise<Ran> {
  const [node = process.execPath, ...args] = command
  return new Promise((resolve, reject) => {
    const child = spawn(node, args, {
      cwd: ROOT,
      env: { ...process.env, SVCOPS_STACKS_DIR: ROOT, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** The flag terms of a help text's option lines (`--to <version>`, `-y, --yes`), without svcops' own `-V`. */
function optionTerms(help: string): string[] {
  const terms = [...help.matchAll(/^ {2}(-\S.*?)(?: {2,}|$)/gm)].map((m) => (m[1] ?? '').trim())
  return terms.filter((t) => t !== '-V').sort()
}

const cliHelp = new Map<string, string>()
/** `svcops <command> --help`, once per command. */
async function helpOfCommand(spec: CommandSpec): Promise<string> {
  const key = spec.words.join(' ')
  if (!cliHelp.has(key)) {
    const r = await run([...svcopsCommand(), ...spec.words, '--help'])
    expect(r.code, r.stderr).toBe(0)
    cliHelp.set(key, r.stdout)
  }
  return cliHelp.get(key) ?? ''
}

describe.each(RUNNERS)('a playbook run by %s', (_name, runner) => {
  it.each(PLAYBOOKS)('%s --help shows the options of its svcops command and exits 0', async (file, spec) => {
    const r = await run([process.execPath, ...runner, file, '--help'])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain(`Usage: ${file} [options]`)
    expect(r.stdout).toContain(`The same as: svcops ${spec.words.join(' ')} [options]`)
    for (const option of [...spec.options, ...GLOBAL_OPTIONS]) expect(r.stdout).toContain(option.flags)
    expect(optionTerms(r.stdout)).toEqual(optionTerms(await helpOfCommand(spec)))
    if (spec.after) expect(r.stdout).toContain(spec.after.trim().split('\n')[0])
  })

  it('refuses a value its table refuses with the sentence of the svcops command, exit 2, writing no run', async () => {
    const runs = mkdtempSync(join(tmpdir(), 'svcops-playbook-runs-'))
    const args = ['--env', 'lab', '--to', '2.0.0', '--batch', '0', '--yes']
    const playbook = await run([process.execPath, ...runner, 'playbooks/upgrade.ts', ...args], { SVCOPS_RUNS_DIR: runs })
    const cli = await run([...svcopsCommand(), 'upgrade', 'recording', ...args], { SVCOPS_RUNS_DIR: runs })
    expect(playbook.code).toBe(2)
    expect(cli.code).toBe(2)
    const sentence = "--batch: '0' is not valid; expected a whole number of at least 1."
    expect(playbook.stderr).toBe(`svcops: ${sentence}\n`)
    expect(cli.stderr).toContain(sentence)
    expect(existsSync(runs) ? readdirSync(runs) : []).toEqual([])
  })

  it('refuses a bad --keep-last of the backup as svcops backup run does', async () => {
    const playbook = await run([process.execPath, ...runner, 'playbooks/backup.ts', '--env', 'lab', '--keep-last', 'seven'])
    const cli = await run([...svcopsCommand(), 'backup', 'run', '--env', 'lab', '--keep-last', 'seven'])
    expect([playbook.code, cli.code]).toEqual([2, 2])
    expect(playbook.stderr).toBe("svcops: --keep-last: 'seven' is not valid; expected a number, 0 or more.\n")
    expect(cli.stderr).toContain("--keep-last: 'seven' is not valid; expected a number, 0 or more.")
  })

  it('refuses an unknown option, a missing required one and a stray argument in one sentence naming it, exit 2', async () => {
    const unknown = await run([process.execPath, ...runner, 'playbooks/upgrade-live.ts', '--env', 'lab', '--to', '7.0.0', '--frobnicate'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toMatch(/^svcops: --frobnicate: unknown option; expected one of --to, --from, --ack, .*\.\n$/)
    const missing = await run([process.execPath, ...runner, 'playbooks/upgrade.ts', '--env', 'lab', '--batch', '2'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toBe('svcops: --to: missing; expected <version> (version to install, e.g. 2.0.0).\n')
    const stray = await run([process.execPath, ...runner, 'playbooks/verify.ts', '--env', 'lab', 'rec-1'])
    expect(stray.code).toBe(2)
    expect(stray.stderr).toBe("svcops: 'rec-1': unexpected argument; expected options only (see --help).\n")
  })

  it('refuses an unknown environment in one sentence with the CLI exit code (2), with --json also on stdout', async () => {
    const r = await run([process.execPath, ...runner, 'playbooks/verify.ts', '--env', 'no-such-env', '--json'])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("Pulumi.no-such-env.yaml' does not exist")
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, exitCode: 2, error: { type: 'BadInputError' } })
  })
})

describe('the flags of every playbook', () => {
  it('have long names no two options of one command share', () => {
    for (const [, spec] of PLAYBOOKS) {
      const longs = [...spec.options, ...GLOBAL_OPTIONS].map((o) => shapeOf(o).long)
      expect(new Set(longs).size).toBe(longs.length)
    }
  })
})

describe('a playbook script parsed by commander from its table (in this process)', () => {
  const parse = (spec: CommandSpec, args: string[]) => parseScriptArguments(spec, join(ROOT, 'playbooks', 'x.ts'), args)

  it('gives the values svcops would: defaults, --no- switches, a parsed number, a repeated list, a variadic option', () => {
    expect(parse(UPGRADE_RECORDING, ['--env', 'lab', '--to', '2.0.0', '--batch', '3']).flags).toEqual({
      to: '2.0.0',
      batch: 3,
      maxFail: '0',
      autoRollback: true,
    })
    expect(parse(UPGRADE_RECORDING, ['--to', '2.0.0', '--no-auto-rollback']).flags.autoRollback).toBe(false)
    expect(parse(UPGRADE_LIVE, ['--to', '7.0.0', '--ack', 'a,b', '--ack', 'c']).flags.ack).toEqual(['a', 'b', 'c'])
    expect(parse(DOCTOR_RECORDING, ['--host', 'rec-1', 'rec-2', '--json'])).toEqual({
      help: false,
      flags: { host: ['rec-1', 'rec-2'] },
      globals: { json: true },
    })
  })

  it('reads --env from SVCOPS_ENV when the flag is absent, and the flag wins over it', () => {
    const before = process.env.SVCOPS_ENV
    process.env.SVCOPS_ENV = 'staging'
    try {
      expect(parse(VERIFY_RECORDING, []).globals.env).toBe('staging')
      expect(parse(VERIFY_RECORDING, ['-e', 'lab']).globals.env).toBe('lab')
    } finally {
      if (before === undefined) delete process.env.SVCOPS_ENV
      else process.env.SVCOPS_ENV = before
    }
  })

  it('answers --help before refusing anything else, and refuses a flag given no value in one sentence', () => {
    expect(parse(UPGRADE_RECORDING, ['--help']).help).toBe(true)
    expect(() => parse(UPGRADE_RECORDING, ['--to'])).toThrow('--to: no value given; expected <version>.')
    expect(() => parse(UPGRADE_RECORDING, ['--to', '2.0.0', '--env', ''])).toThrow('--env: no value given; expected <name>.')
  })
})
