/**
 * What makes a playbook file runnable by itself, with node or with zx:
 *
 *   node playbooks/upgrade.ts --env lab --to 2.0.0
 *   npx zx playbooks/upgrade.ts --env lab --to 2.0.0
 *
 * both run `svcops upgrade recording --env lab --to 2.0.0`, with the same options, help, output and
 * exit code as through the CLI. It starts the CLI as a process (zx's `$`) rather than importing it,
 * so a playbook depends on the engine only, never on the command line that lists it.
 */
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { $ } from '../core/shell.ts'
import { svcopsCommand } from '../core/paths.ts'

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

/** Runs `svcops <command...> <the playbook's arguments>` and takes over its exit code. */
export async function runAsCommand(meta: ImportMeta, command: string[]): Promise<void> {
  const result = await $({
    stdio: 'inherit',
    nothrow: true,
    verbose: false,
    quiet: true,
    env: process.env, // the CLI reads its credentials (SVCOPS_*) from the environment it was given
  })`${svcopsCommand()} ${command} ${scriptArguments(meta) ?? []}`
  process.exitCode = result.exitCode ?? 1
}
