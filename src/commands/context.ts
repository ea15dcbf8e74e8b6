/**
 * What every command shares: the global options, environment loading, and the two ways of
 * answering — readable text for people, one JSON document on stdout for machines (`--json`).
 */
import type { Command } from 'commander'
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { consoleSink, events } from '../core/events.ts'
import { redact, redactDeep } from '../core/redact.ts'
import { sanitizeText, stringifyForTerminal } from '../core/sanitize.ts'

export interface GlobalOptions {
  env?: string
  stackFile?: string
  json?: boolean
  verbose?: boolean
}

/** The global options as seen from a (sub)command. */
export function globals(command: Command): GlobalOptions {
  return command.optsWithGlobals<GlobalOptions>()
}

/**
 * Loads the environment named by --env / --stack-file. The loader (zod, yaml) is imported here, not
 * at start-up: commands that need no environment (scan, plan, psk) start without it.
 */
export async function environmentOf(command: Command): Promise<Environment> {
  const { loadEnvironment } = await import('../config/load.ts')
  const { env, stackFile } = globals(command)
  return loadEnvironment({ ...(env ? { env } : {}), ...(stackFile ? { stackFile } : {}) })
}

/**
 * Shows progress events on stderr (never in --json mode unless --verbose: machines read stdout, and
 * people reading a JSON run's log still want stderr quiet). Returns the unsubscribe function.
 */
export function showProgress(command: Command): () => void {
  const { json, verbose } = globals(command)
  if (json && !verbose) return () => undefined
  return events.subscribe(consoleSink({ verbose: verbose ?? false }))
}

/**
 * Prints the result: JSON on stdout with --json, else the human text. Both redacted, and both safe
 * on a terminal: control characters in the text escaped (`sanitizeText`), and in the JSON the ones
 * JSON.stringify leaves raw written as `\u` escapes (the same value for a parser).
 */
export function printResult(command: Command, data: unknown, human: string | (() => string)): void {
  if (globals(command).json) {
    process.stdout.write(stringifyForTerminal(redactDeep(data), 2) + '\n')
  } else {
    const text = typeof human === 'function' ? human() : human
    if (text) process.stdout.write(sanitizeText(redact(text.endsWith('\n') ? text : text + '\n')))
  }
}

let resultExitCode: number | undefined

/**
 * Makes the command exit with `code` although it printed its result normally: for results that
 * need a person (scanner findings, untranslatable calls, a refused key). `main` returns it.
 */
export function setResultExitCode(code: number): void {
  resultExitCode = code
}

/** The exit code a command asked for with `setResultExitCode`, if any. */
export function takeResultExitCode(): number | undefined {
  const code = resultExitCode
  resultExitCode = undefined
  return code
}

/**
 * Asks a person to confirm a change at the terminal (zx's `question`, on stderr: stdout is for
 * results), unless `--yes`. Without a terminal `--yes` is required: a scheduler cannot answer.
 * `what` is the first half of "... and nobody is at a terminal to confirm it".
 */
export async function confirm(
  prompt: string | (() => string),
  yes: boolean | undefined,
  what = 'this command changes the environment',
): Promise<void> {
  if (yes) return
  if (!process.stdin.isTTY) {
    throw new BadInputError(
      `--yes: missing; ${what} and nobody is at a terminal to confirm it.`,
      'Add --yes (schedulers and scripts), or --dry-run to see the plan.',
    )
  }
  const { question } = await import('zx')
  // A prompt that reads earlier runs (the downtime to expect) is built only when someone is asked.
  const text = typeof prompt === 'function' ? prompt() : prompt
  const answer = await question(`${text} [y/N] `, { output: process.stderr })
  if (!/^y(es)?$/i.test(answer.trim())) throw new BadInputError('Not confirmed; nothing was changed.')
}

let invokedArgs: string[] = []

/** Remembers the arguments svcops was run with (a dry run names the exact command that would go ahead). */
export function rememberArgs(argv: string[]): void {
  invokedArgs = [...argv]
}

/** The arguments svcops was run with, without node and the script. */
export function rememberedArgs(): string[] {
  return invokedArgs
}
