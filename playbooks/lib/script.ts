/**
 * What makes a playbook file a command of its own, run by node or by zx:
 *
 *   node playbooks/upgrade.ts --env lab --to 2.0.0
 *   npx zx playbooks/upgrade.ts --env lab --to 2.0.0
 *
 * The playbook reads its arguments through zx's `argv` (minimist), parsed with the option table its
 * `svcops` command is built from (playbooks/lib/*-commands.ts), so both take the same flags, refuse
 * the same bad input in the same sentence (exit 2, before anything is read or changed) and print
 * the same help. It then calls the same function the command calls (exported by the playbook), in
 * this process: the engine's runs, their journal and report, the output and the exit codes (the
 * typed errors mapped once, src/core/errors.ts) are those of `svcops <command>`.
 */
import { Command } from 'commander'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BadInputError, ExitCode } from '../../src/core/errors.ts'
import { runCleanups } from '../../src/core/lifecycle.ts'
import { commanderOptionsOf, GLOBAL_OPTIONS, shapeOf, type CommandSpec, type OptionSpec } from '../../src/core/option-table.ts'
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
 * Runs the playbook at `meta` as the command `spec` declares: its arguments read through zx's
 * `argv`, `--help` answered, bad input refused, then `main`; sets the process's exit code.
 */
export async function runScript<F>(meta: ImportMeta, spec: CommandSpec, main: CommandMain<F>): Promise<void> {
  const args = scriptArguments(meta) ?? []
  const file = fileURLToPath(meta.url)
  const table = [...spec.options, ...GLOBAL_OPTIONS]
  let exitCode: number | undefined
  let json = args.includes('--json')
  try {
    // zx's full API (its argv and minimist) only for a playbook started as a script: `svcops <command>`
    // imports the playbook for its exported function and never loads it (~65 ms of CPU per start).
    const { argv, updateArgv } = await import('zx')
    updateArgv(args, minimistOptionsOf([...table, HELP]))
    if (argv.help === true) {
      helpCommand(spec, file).outputHelp()
      process.exitCode = ExitCode.ok
      return
    }
    const flags = readFlags(spec.options, argv, true)
    const options = readFlags(GLOBAL_OPTIONS, argv, false) as OutputOptions
    json = options.json ?? false
    const io: CommandIO = {
      options,
      environment: async () => {
        const { loadEnvironment } = await import('../../src/config/load.ts')
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
    await main(flags as F, io)
    process.exitCode = exitCode ?? ExitCode.ok
  } catch (error) {
    process.exitCode = writeFailure(error, json)
  } finally {
    await runCleanups()
  }
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

/** zx's minimist options for a table: which flags take a value, which are switches, the short letters, the `--no-` defaults. */
function minimistOptionsOf(table: readonly OptionSpec[]): {
  string: string[]
  boolean: string[]
  alias: Record<string, string>
  default: Record<string, boolean>
  unknown: (arg: string) => boolean
} {
  const shapes = table.map(shapeOf)
  const known = new Set(shapes.flatMap((s) => [s.long, ...(s.negated ? [s.long.slice(3)] : [`no-${s.long}`])]))
  const aliasOf = new Map(shapes.flatMap((s) => (s.short ? [[s.short, s.long] as const] : [])))
  return {
    string: shapes.filter((s) => s.takesValue).map((s) => s.long),
    boolean: shapes.filter((s) => !s.takesValue).map((s) => (s.negated ? s.long.slice(3) : s.long)),
    alias: Object.fromEntries(aliasOf),
    default: Object.fromEntries(shapes.filter((s) => s.negated).map((s) => [s.long.slice(3), true])),
    unknown: (arg) => {
      if (!arg.startsWith('-')) return true // a word after a variadic option's first value (readFlags), else refused there
      const name = arg.replace(/^--?/, '').split('=')[0] ?? ''
      if (known.has(name) || aliasOf.has(name)) return true
      throw new BadInputError(`${arg.split('=')[0]}: unknown option; expected one of ${shapes.map((s) => `--${s.long}`).join(', ')}.`)
    },
  }
}

/**
 * The values of `table` from zx's `argv`, keyed as commander keys them: each value through the
 * option's `parse` (every occurrence, as commander does), defaults applied, a required option or
 * a value-taking flag without a value refused in one sentence naming it.
 */
function readFlags(table: readonly OptionSpec[], parsed: Record<string, unknown>, positionalsChecked: boolean): Record<string, unknown> {
  const flags: Record<string, unknown> = {}
  for (const spec of table) {
    const shape = shapeOf(spec)
    const name = shape.negated ? shape.long.slice(3) : shape.long
    const raw: unknown = parsed[camelCase(name)] ?? parsed[name]
    if (!shape.takesValue) {
      if (raw === true || (shape.negated && raw === false)) flags[shape.key] = raw
      continue
    }
    const given = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).map(String)
    const values = given.length ? given : spec.envVar && process.env[spec.envVar] ? [process.env[spec.envVar] as string] : []
    if (values.some((v) => v === '')) throw new BadInputError(`--${shape.long}: no value given; expected ${valueOf(spec)}.`)
    if (!values.length) {
      if (spec.required) throw new BadInputError(`--${shape.long}: missing; expected ${valueOf(spec)} (${spec.help}).`)
      if (spec.default !== undefined) flags[shape.key] = spec.default
      continue
    }
    // `--host a b`: minimist keeps only `a` with the flag; the words after it are the option's too (no playbook takes arguments).
    const variadic = spec.flags.includes('...')
    const words = variadic && Array.isArray(parsed._) ? (parsed._.splice(0) as unknown[]).map(String) : []
    flags[shape.key] = variadic
      ? [...values, ...words]
      : values.reduce<unknown>((previous, v) => (spec.parse ? spec.parse(v, previous) : v), spec.default)
  }
  if (positionalsChecked) {
    const extra = (parsed._ as unknown[] | undefined) ?? []
    if (extra.length) throw new BadInputError(`'${String(extra[0])}': unexpected argument; expected options only (see --help).`)
  }
  return flags
}

function camelCase(name: string): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())
}

/** `<version>` of `--to <version>`. */
function valueOf(spec: OptionSpec): string {
  return /([<[][^>\]]+[>\]])/.exec(spec.flags)?.[1] ?? 'a value'
}
