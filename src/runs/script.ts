/**
 * What makes a playbook file runnable by itself: `node playbooks/upgrade.ts --env lab --to 2.0.0`
 * runs `svcops upgrade recording --env lab --to 2.0.0`, with the same options, help, output and exit
 * code as through the CLI. It starts the CLI as a process (zx) rather than importing it, so a
 * playbook depends on the engine only, never on the command line that lists it.
 */
import { $ } from '../core/shell.ts'
import { svcopsCommand } from '../core/paths.ts'

/** Runs `svcops <command...> <this process's arguments>` and takes over its exit code. */
export async function runAsCommand(command: string[]): Promise<void> {
  const result = await $({
    stdio: 'inherit',
    nothrow: true,
    verbose: false,
    quiet: true,
    env: process.env, // the CLI reads its credentials (SVCOPS_*) from the environment it was given
  })`${svcopsCommand()} ${command} ${process.argv.slice(2)}`
  process.exitCode = result.exitCode ?? 1
}
