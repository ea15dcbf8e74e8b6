/**
 * What makes a playbook file a command of its own, run by node or by zx:
 *
 *   node playbooks/upgrade.ts --env lab --to 2.0.0
 *   npx zx playbooks/upgrade.ts --env lab --to 2.0.0
 *
 * The playbook's arguments are parsed by commander, the CLI's one parser, from the option table its
 * `svcops` command is built from (playbooks/lib/*-commands.ts), so both take the same flags, refuse
 * the same bad input in the same sentence (exit 2, before anything is read or changed) and print
 * the same help. It then calls the same function the command calls (exported by the playbook), in
 * this process: the engine's runs, their journal and report, the output and the exit codes (the
 * typed errors mapped once, src/core/errors.ts) are those of `svcops <command>`.
 */
import { Command, CommanderError } from 'commander'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BadInputError, ExitCode } from '../core/errors.ts'
import { runCleanups } from '../core/lifecycle.ts'
import { commanderOptionsOf, GLOBAL_OPTIONS, shapeOf, type CommandSpec, type OptionSpec } from '../core/option-table.ts'
import { goAheadOf, writeFailure, type CommandIO, type OutputOptions, type PromptTexts } from './command-io.ts'

/** What a playbook's command does with its parsed flags (the same function `svcops <command>` calls). */
export type CommandMain<F> = (flags: F, io: CommandIO) => Promise<void>

const HELP: OptionSpec = { flags: '-h, --help', help: 'display help for command' }

/**
 * True when the playbook at `meta` is the script being run: started by node (`import.meta.main`),
 * or by zx, which imports the file it was given (argv: node, zx, FILE, ...) so `main` is false.
 */
export function startedAsScript(meta: ImportMeta): boolean {
  return meta.main || scriptArguments(meta) !== undefined
}

/** The arguments given after the playbook file, under node or zx; undefined when it is not the script run. */
function scriptArguments(meta: ImportMeta): string[] | undefined {
  if (meta.main) return process.argv.slice(2)
  const file = process.argv[2] // zx (or another runner that imports the file): node, runner, FILE, ...
  return file !== undefined && resolve(file) === fileURLToPath(meta.url) ? process.argv.slice(3) : undefined
}

/**
 * Runs the playbook at `meta` as the command `spec` declares: its arguments parsed by commander from
 * the same table as `svcops <command>`, `--help` answered, bad input refused, then `main`; sets the
 * process's exit code.
 */
export async function runScript<F>(meta: ImportMeta, spec: CommandSpec, main: CommandMain<F>): Promise<void> {
  const args = scriptArguments(meta) ?? []
  const file = fileURLToPath(meta.url)
  let exitCode: number | undefined
  let json = args.includes('--json')
  try {
    const parsed = parseScriptArguments(spec, file, args)
    if (parsed.help) {
      helpCommand(spec, file).outputHelp()
      process.exitCode = ExitCode.ok
      return
    }
    const options = parsed.globals as OutputOptions
    json = options.json ?? false
    const io: CommandIO = {
      options,
      environment: async () => {
        const { loadEnvironment } = await import('../config/load.ts')
        return loadEnvironment({
          ...(options.env ? { env: options.env } : {}),
          ...(options.stackFile ? { stackFile: options.stackFile } : {}),
        })
      },
      exitWith: (code) => {
        exitCode = code
      },
      goAheadCommand: () => goAheadOf(['npx', 'zx', relativeToCwd(file)], args),
      prompts: () => Promise.resolve(SCRIPT_PROMPTS),
    }
    await main(parsed.flags as F, io)
    process.exitCode = exitCode ?? ExitCode.ok
  } catch (error) {
    process.exitCode = writeFailure(error, json)
  } finally {
    await runCleanups()
  }
}

/**
 * `args` parsed by the script's commander command (`helpCommand`: the table's options, the global
 * ones and --help), with each refusal said in one sentence naming the flag (BadInputError, exit 2)
 * before anything is read: an unknown option, a stray argument, a flag given no value, a required
 * one missing. `flags`: the command's own values; `globals`: those of `GLOBAL_OPTIONS`.
 */
export function parseScriptArguments(
  spec: CommandSpec,
  file: string,
  args: string[],
): { help: boolean; flags: Record<string, unknown>; globals: Record<string, unknown> } {
  const command = helpCommand(spec, file)
  const table = [...spec.options, ...GLOBAL_OPTIONS, HELP]
  // Commander's own messages and exits are replaced by the sentences below, the same under node and zx.
  command.exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined })
  let parsed: { operands: string[]; unknown: string[] }
  try {
    parsed = command.parseOptions(args)
  } catch (error) {
    if (error instanceof CommanderError && error.code === 'commander.optionMissingArgument') throw missingValue(table, error.message)
    throw error
  }
  const [unknown] = parsed.unknown
  if (unknown !== undefined)
    throw new BadInputError(
      `${unknown.split('=')[0]}: unknown option; expected one of ${table.map((o) => `--${shapeOf(o).long}`).join(', ')}.`,
    )
  const values = command.opts()
  if (values.help === true) return { help: true, flags: {}, globals: {} }
  const [stray] = parsed.operands
  if (stray !== undefined) throw new BadInputError(`'${stray}': unexpected argument; expected options only (see --help).`)
  return { help: false, flags: valuesOf(spec.options, values, command), globals: valuesOf(GLOBAL_OPTIONS, values, command) }
}

/** The values of `table` among commander's, keyed as the command's: a value from its environment variable, none empty, none required missing. */
function valuesOf(table: readonly OptionSpec[], values: Record<string, unknown>, command: Command): Record<string, unknown> {
  const flags: Record<string, unknown> = {}
  for (const spec of table) {
    const shape = shapeOf(spec)
    const source = command.getOptionValueSource(shape.key)
    const fromEnv = spec.envVar ? process.env[spec.envVar] : undefined
    let value = values[shape.key]
    if (fromEnv && (source === undefined || source === 'default')) value = spec.parse ? spec.parse(fromEnv, value) : fromEnv
    if (shape.takesValue && (value === '' || (Array.isArray(value) && value.includes(''))))
      throw new BadInputError(`--${shape.long}: no value given; expected ${valueOf(spec)}.`)
    if (value === undefined && spec.required) throw new BadInputError(`--${shape.long}: missing; expected ${valueOf(spec)} (${spec.help}).`)
    if (value !== undefined) flags[shape.key] = value
  }
  return flags
}

/** Commander's "option '--to <version>' argument missing" as the script's sentence. */
function missingValue(table: readonly OptionSpec[], message: string): BadInputError {
  const spec = table.find((o) => message.includes(`'${o.flags}'`))
  return spec
    ? new BadInputError(`--${shapeOf(spec).long}: no value given; expected ${valueOf(spec)}.`)
    : new BadInputError(message.replace(/^error: /, ''))
}

/** The confirmations of a playbook run by itself: the question, without the CLI's downtime estimate from earlier runs. */
const SCRIPT_PROMPTS: PromptTexts = {
  upgradePrompt: (title, environment, _system, targets, to) =>
    `Upgrade ${title} of '${environment}' (${targets.join(', ') || 'no targets listed'}) to ${to}?`,
  rollbackPrompt: (title, environment, _system, runId) => `Roll back ${title} of '${environment}'${runId ? `: run ${runId}` : ''}?`,
}

function relativeToCwd(file: string): string {
  const cwd = process.cwd() + '/'
  return file.startsWith(cwd) ? file.slice(cwd.length) : file
}

/** The playbook's help: the command's description, its options and the global ones, and the text after them — as `svcops <command> --help` shows them. */
export function helpCommand(spec: CommandSpec, file: string): Command {
  const command = new Command(relativeToCwd(file))
    .description(`${spec.description}\n\nThe same as: svcops ${spec.words.join(' ')} [options]`)
    .helpOption(false)
  for (const option of commanderOptionsOf([...spec.options, ...GLOBAL_OPTIONS, HELP])) command.addOption(option)
  if (spec.after) command.addHelpText('after', spec.after)
  return command
}

/** `<version>` of `--to <version>`. */
function valueOf(spec: OptionSpec): string {
  return /([<[][^>\]]+[>\]])/.exec(spec.flags)?.[1] ?? 'a value'
}
