/**
 * One definition of each playbook command's options: `svcops <command>` (commander) and the playbook
 * run as a script (its help, its commander parse) are both built from the table in
 * playbooks/lib/*-commands.ts, so a flag added, renamed or given a validator there changes both.
 */
import type { Command, Option } from 'commander'
import { describe, expect, it } from 'vitest'
import { GLOBAL_OPTIONS, shapeOf, type CommandSpec, type FlagsOf, type OptionSpec } from '../../src/core/option-table.ts'
import { buildProgram } from '../../src/commands/program.ts'
import { BACKUP_RUN } from '../../playbooks/lib/backup-commands.ts'
import { ROLLBACK_LIVE, UPGRADE_LIVE, VERIFY_LIVE } from '../../playbooks/lib/live-commands.ts'
import { DOCTOR_RECORDING, ROLLBACK_RECORDING, UPGRADE_RECORDING, VERIFY_RECORDING } from '../../playbooks/lib/recording-commands.ts'
import { helpCommand, parseScriptArguments } from '../../src/edge/script.ts'

const SPECS = [
  BACKUP_RUN,
  DOCTOR_RECORDING,
  ROLLBACK_RECORDING,
  UPGRADE_RECORDING,
  VERIFY_RECORDING,
  UPGRADE_LIVE,
  ROLLBACK_LIVE,
  VERIFY_LIVE,
]

function commandAt(program: Command, words: readonly string[]): Command {
  let command = program
  for (const word of words) {
    const next = command.commands.find((c) => c.name() === word)
    if (!next) throw new Error(`svcops has no command '${words.join(' ')}'`)
    command = next
  }
  return command
}

/** What an option is made of, with its validator by identity (the same function, not an equal one). */
function madeOf(option: Option): unknown[] {
  return [option.flags, option.description, option.parseArg, option.defaultValue, option.mandatory, option.envVar]
}

function declared(spec: OptionSpec): unknown[] {
  return [spec.flags, spec.help, spec.parse, spec.default, spec.required ?? false, spec.envVar]
}

describe('a playbook command and its svcops command', () => {
  it.each(SPECS.map((s) => [s.words.join(' '), s] as const))(
    'svcops %s takes exactly the options of its table',
    async (_name, spec: CommandSpec) => {
      const command = commandAt(await buildProgram(), spec.words)
      // Required options are checked by the program just before the action (so that a typo of one
      // is reported as the typo), not through commander's mandatory flag: compare the rest.
      const withoutRequired = (made: unknown[]) => made.filter((_, i) => i !== 4)
      expect(command.options.map((o) => withoutRequired(madeOf(o)))).toEqual(spec.options.map((o) => withoutRequired(declared(o))))
      expect(command.description()).toBe(spec.description)
    },
  )

  it.each(SPECS.map((s) => [s.words.join(' '), s] as const))(
    'the playbook of svcops %s shows the same table and the global options',
    (_name, spec: CommandSpec) => {
      const help = helpCommand(spec, 'playbooks/x.ts')
      const own = help.options.filter((o) => o.long !== '--help')
      expect(own.map(madeOf)).toEqual([...spec.options, ...GLOBAL_OPTIONS].map(declared))
    },
  )

  it('svcops declares its global options from the same table the playbooks parse', async () => {
    const program = await buildProgram()
    const globals = program.options.filter((o) => o.short !== '-V')
    expect(globals.map(madeOf)).toEqual(GLOBAL_OPTIONS.map(declared))
  })
})

describe('the flags type of a command, derived from its table (FlagsOf)', () => {
  /** A value each option's parser takes. */
  const valueFor = (long: string) => ({ window: '90m', 'max-fail': '1', soak: '10m' })[long] ?? '2'
  /** Every option of `spec` given once (a value where it takes one), parsed as the script parses it. */
  const everyFlagGiven = (spec: CommandSpec) =>
    parseScriptArguments(
      spec,
      'playbooks/x.ts',
      spec.options.map(shapeOf).flatMap((o) => [`--${o.long}`, ...(o.takesValue ? [valueFor(o.long)] : [])]),
    ).flags

  it('has the keys commander gives the action, no more and no fewer (tsc checks the type, this the parse)', () => {
    // Each object must name exactly the keys of its derived type: a key too many or missing fails the type check.
    const upgradeRecording: Record<keyof FlagsOf<typeof UPGRADE_RECORDING>, true> = {
      to: true,
      hosts: true,
      batch: true,
      maxFail: true,
      window: true,
      autoRollback: true,
      pauseAfterCanary: true,
      soak: true,
      skipPromotionGate: true,
      dryRun: true,
      yes: true,
      breakLock: true,
      force: true,
      metricsFile: true,
    }
    const upgradeLive: Record<keyof FlagsOf<typeof UPGRADE_LIVE>, true> = {
      to: true,
      from: true,
      ack: true,
      tcpEndpoint: true,
      batch: true,
      maxFail: true,
      autoRollback: true,
      pauseAfterCanary: true,
      soak: true,
      dryRun: true,
      yes: true,
      breakLock: true,
      force: true,
      metricsFile: true,
    }
    const parsed = (spec: CommandSpec) => Object.keys(everyFlagGiven(spec)).sort()
    expect(parsed(UPGRADE_RECORDING)).toEqual(Object.keys(upgradeRecording).sort())
    expect(parsed(UPGRADE_LIVE)).toEqual(Object.keys(upgradeLive).sort())
  })
})
