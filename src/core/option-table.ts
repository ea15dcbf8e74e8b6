/**
 * The options of a command, declared once: name, value, default, help text and validation. The CLI
 * builds its commander options from a table (`declareCommand`); a playbook run as a script
 * (`node playbooks/X.ts`, `npx zx playbooks/X.ts`) is parsed by commander from the same table and
 * prints its help from it (src/edge/script.ts), so both entries take the same flags and refuse
 * the same bad input with the same sentence.
 *
 * This module only declares: it imports commander's `Option` and nothing of the engine, so a
 * command group can import the tables at start-up.
 */
import { Command, Option } from 'commander'
import { BadInputError } from './errors.ts'

/** One option, as commander writes its flags: `-y, --yes`, `--to <version>`, `--no-auto-rollback`. */
export interface OptionSpec {
  readonly flags: string
  readonly help: string
  /** Validates and converts a value; throws BadInputError naming the flag. Gets the previous value of a repeatable option. */
  readonly parse?: (value: string, previous?: unknown) => unknown
  /** The value when the option is not given. */
  readonly default?: string | number | boolean
  /** Refused (exit 2) when absent. */
  readonly required?: boolean
  /** The environment variable that gives the value when the flag does not. */
  readonly envVar?: string
}

/** A command that runs a playbook: its words after `svcops`, its help and its options. */
export interface CommandSpec {
  /** e.g. ['verify', 'recording'] for `svcops verify recording`. */
  readonly words: readonly string[]
  readonly description: string
  readonly options: readonly OptionSpec[]
  /** Shown after the options in `--help`: steps, exit codes, examples. */
  readonly after?: string
}

/** The options every command takes (program.ts declares them on the program, a playbook script on itself). */
export const GLOBAL_OPTIONS: readonly OptionSpec[] = [
  { flags: '-e, --env <name>', help: 'environment (stack) to act on: reads stacks/Pulumi.<name>.yaml', envVar: 'SVCOPS_ENV' },
  // Not --env-file: Node reads that option itself, even after the script's name (Node 24).
  { flags: '--stack-file <path>', help: 'read the environment from this stack file instead of stacks/' },
  { flags: '--json', help: 'print one JSON document on stdout (for schedulers and scripts)' },
  { flags: '-v, --verbose', help: 'also show every command and HTTP call' },
]

/** What the flags of an option say: its long name, short letter, whether it takes a value, whether it is a `--no-` flag. */
export interface FlagShape {
  /** The long flag without dashes: `to`, `no-auto-rollback`. */
  readonly long: string
  /** The key of the parsed value (commander's): `to`, `autoRollback` for `--no-auto-rollback`. */
  readonly key: string
  readonly short?: string
  readonly takesValue: boolean
  readonly negated: boolean
}

/** Reads the flags of `spec` the way commander does. */
export function shapeOf(spec: OptionSpec): FlagShape {
  const words = spec.flags.split(/[ ,|]+/).filter(Boolean)
  const long = words.find((w) => w.startsWith('--'))?.slice(2)
  if (!long) throw new Error(`option '${spec.flags}' has no long flag`)
  const short = words.find((w) => /^-[^-]$/.test(w))?.slice(1)
  const negated = long.startsWith('no-')
  const name = negated ? long.slice(3) : long
  return {
    long,
    key: name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()),
    ...(short ? { short } : {}),
    takesValue: /[<[]/.test(spec.flags),
    negated,
  }
}

/** The commander options of a table, in its order. */
export function commanderOptionsOf(table: readonly OptionSpec[]): Option[] {
  return table.map((spec) => {
    const option = new Option(spec.flags, spec.help)
    if (spec.parse) option.argParser(spec.parse)
    if (spec.default !== undefined) option.default(spec.default)
    if (spec.required) option.makeOptionMandatory()
    if (spec.envVar) option.env(spec.envVar)
    return option
  })
}

/** Adds the command of `spec` under `parent` (its last word) with its description, options and help. */
export function declareCommand(parent: Command, spec: CommandSpec): Command {
  const command = parent.command(spec.words.at(-1) ?? '').description(spec.description)
  for (const option of commanderOptionsOf(spec.options)) command.addOption(option)
  if (spec.after) command.addHelpText('after', spec.after)
  return command
}

/** `--batch`-like options: a whole number of at least 1, else bad input naming the flag. */
export function wholeNumber(flag: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < 1)
      throw new BadInputError(`${flag}: '${value}' is not valid; expected a whole number of at least 1.`)
    return Number(value)
  }
}

/** `--keep-days`-like options: a number, 0 or more (fractions allowed), else bad input naming the flag. */
export function nonNegativeNumber(flag: string) {
  return (value: string): number => {
    const n = Number(value)
    if (!/^\d+(\.\d+)?$/.test(value) || !Number.isFinite(n))
      throw new BadInputError(`${flag}: '${value}' is not valid; expected a number, 0 or more.`)
    return n
  }
}

/** A repeatable option whose values may also be comma-separated (`--ack a,b --ack c`): all of them, in order. */
export function collectList(value: string, previous?: unknown): string[] {
  const before = Array.isArray(previous) ? (previous as string[]) : []
  return [
    ...before,
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean),
  ]
}

/** The long flag of commander's flags, without dashes: `yes` of `-y, --yes`, `to` of `--to <version>`. */
type LongFlag<F extends string> = F extends `${string}--${infer L}` ? (L extends `${infer N} ${string}` ? N : L) : never

/** `auto-rollback` as commander keys it: `autoRollback`. */
type CamelCase<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S

/** The key of an option's value, as commander (and `shapeOf`) gives it. */
type FlagKey<F extends string> = LongFlag<F> extends `no-${infer N}` ? CamelCase<N> : CamelCase<LongFlag<F>>

/** The value of one option: a `--no-` switch or a switch is a boolean; a value is its parser's result, else a string (a list when variadic). */
type FlagValue<S> = S extends { readonly flags: infer F extends string }
  ? LongFlag<F> extends `no-${string}`
    ? boolean
    : F extends `${string}<${string}` | `${string}[${string}`
      ? S extends { readonly parse: (...args: never[]) => infer R }
        ? R
        : F extends `${string}...${string}`
          ? string[]
          : string
      : boolean
  : never

/** True when an option always has a value once parsed: required, defaulted, or a `--no-` switch (true unless given). */
type AlwaysGiven<S> = S extends { readonly required: true }
  ? true
  : S extends { readonly default: string | number | boolean }
    ? true
    : S extends { readonly flags: infer F extends string }
      ? LongFlag<F> extends `no-${string}`
        ? true
        : false
      : false

/**
 * The parsed flags of a command, derived from its table (declared `as const satisfies CommandSpec`)
 * instead of written beside it: `FlagsOf<typeof UPGRADE_RECORDING>` is `{ to: string; batch: number;
 * hosts?: string; ... }`, keyed and typed as commander gives them to the command's action.
 */
export type FlagsOf<C extends { readonly options: readonly OptionSpec[] }> = {
  -readonly [S in C['options'][number] as AlwaysGiven<S> extends true ? FlagKey<S['flags']> : never]: FlagValue<S>
} & {
  -readonly [S in C['options'][number] as AlwaysGiven<S> extends true ? never : FlagKey<S['flags']>]?: FlagValue<S>
}
