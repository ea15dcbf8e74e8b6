/**
 * The `svcops` program: parses arguments, runs a command, and turns every error into one sentence,
 * a hint and an exit code (mapped in src/core/errors.ts, nowhere else). src/cli.ts only calls `main`.
 */
import { Command, CommanderError } from 'commander'
import { readFileSync } from 'node:fs'
import { rememberArgs, takeResultExitCode } from './context.ts'
import { groupsFor } from './registry.ts'
import { ExitCode } from '../core/errors.ts'
import { runCleanups } from '../core/lifecycle.ts'
import { commanderOptionsOf, GLOBAL_OPTIONS } from '../core/option-table.ts'
import { projectPath } from '../core/paths.ts'

const pkg = JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version: string }

/** The flags of `command`'s own options that take a value (the word after one is not a command name). */
export function valueFlagsOf(command: Command): string[] {
  return command.options.filter((o) => o.required || o.optional).flatMap((o) => [o.short, o.long].filter((f): f is string => !!f))
}

/** Builds the program with the command groups `argv` needs (all of them when it is omitted). */
export async function buildProgram(argv: string[] = []): Promise<Command> {
  const program = new Command('svcops')
    .description(
      'Deploy, back up, upgrade and roll back the media-production platform.\n\nEnvironments are Pulumi stack files: --env prod reads stacks/Pulumi.prod.yaml.',
    )
    .version(pkg.version, '-V', 'print the svcops version (also: svcops --version)')
    .showHelpAfterError('(run with --help for usage)')
    .configureHelp({ sortSubcommands: true, showGlobalOptions: true })
    .exitOverride()
  for (const option of commanderOptionsOf(GLOBAL_OPTIONS)) program.addOption(option)
  for (const group of groupsFor(argv, valueFlagsOf(program))) (await group.load()).register(program)
  checkRequiredOptionsLast(program)
  program.addHelpText(
    'after',
    `
Exit codes: 0 ok, 1 failed, 2 bad input (nothing changed), 3 locked by another run,
            4 failed and rolled back, 5 findings that need a person, 130 interrupted.

Examples:
  svcops auth check --env prod
  svcops upgrade recording --env prod --to 2.0.0 --dry-run`,
  )
  return program
}

/**
 * Required options are checked after unknown ones: commander checks them first, so a typo of a
 * required option (`--too 2.0.0`) was reported as the option missing rather than as the typo with
 * its suggestion ("Did you mean --to?"). Each command checks its own just before its action.
 */
function checkRequiredOptionsLast(command: Command): void {
  const required = command.options.filter((o) => o.mandatory)
  for (const o of required) o.makeOptionMandatory(false)
  if (required.length)
    command.hook('preAction', (_program, acting) => {
      if (acting !== command) return
      const missing = required.find((o) => command.getOptionValue(o.attributeName()) === undefined)
      if (missing)
        command.error(`error: required option '${missing.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' })
    })
  for (const sub of command.commands) checkRequiredOptionsLast(sub)
}

function jsonRequested(argv: string[]): boolean {
  return argv.includes('--json')
}

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  // `--version` belongs to the program only in first position, so that subcommands may have a
  // --version option of their own (`svcops lab up --version 1.5.0`).
  if (argv[0] === '--version') argv = ['-V', ...argv.slice(1)]
  const program = await buildProgram(argv)
  rememberArgs(argv)
  try {
    await program.parseAsync(argv, { from: 'user' })
    return takeResultExitCode() ?? ExitCode.ok
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version "errors" are normal exits; anything else is a usage error.
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help'
        ? ExitCode.ok
        : ExitCode.badInput
    }
    // Loaded on failure only: a start that succeeds (--version, --help) does not pay for the writer.
    const { writeFailure } = await import('../edge/command-io.ts')
    return writeFailure(error, jsonRequested(argv))
  } finally {
    await runCleanups()
  }
}
