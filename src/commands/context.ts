/**
 * What every command shares: the global options, environment loading, and the two ways of
 * answering — readable text for people, one JSON document on stdout for machines (`--json`).
 */
import type { Command } from 'commander'
import type { Environment } from '../config/schema.ts'
import { consoleSink, events } from '../core/events.ts'
import { confirmChange, writeResult } from '../edge/command-io.ts'

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
 * Prints the result: JSON on stdout with --json, else the human text, redacted and safe on a
 * terminal (src/edge/command-io.ts, `writeResult`: the playbooks run as scripts print the same way).
 */
export function printResult(command: Command, data: unknown, human: string | (() => string)): void {
  writeResult(globals(command).json, data, human)
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
 * Asks a person to confirm a change at the terminal, unless `--yes`; without a terminal `--yes` is
 * required (src/edge/command-io.ts, `confirmChange`, which the playbooks run as scripts use too).
 */
export function confirm(prompt: string | (() => string), yes: boolean | undefined, what?: string): Promise<void> {
  return confirmChange(prompt, yes, what)
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
