/**
 * `svcops render sudoers --env E`: prints the sudo rules for the SSH user of the environment's
 * recording hosts and rehearsal host (src/recording/hosts/sudoers.ts): exactly the commands svcops
 * runs as root there.
 */
import type { Command } from 'commander'
import { environmentOf, printResult } from './context.ts'

/** Adds `sudoers` under `svcops render`. */
export function registerSudoers(render: Command): void {
  render
    .command('sudoers')
    .description(
      'print the sudoers rules for the recording hosts and the rehearsal host of --env: exactly the commands svcops runs as root there (ssh.become: sudo)',
    )
    .addHelpText(
      'after',
      `
Each rule names the command's full path and every argument (no shell, no ALL); where an argument is
the version being installed, a sudoers regular expression admits a version and nothing else. The
upgrade's preflight checks each rule on each host with sudo -n -l before anything stops. The
rehearsal host (recording.rehearsal.host) gets the same rules for its SSH user: svcops rehearse
recording installs, stops and starts the service there.

Examples:
  svcops render sudoers --env prod > svcops.sudoers && visudo -cf svcops.sudoers`,
    )
    .action(async (_options: object, command: Command) => {
      const { recordingSudoers } = await import('../recording/hosts/sudoers.ts')
      const text = recordingSudoers(await environmentOf(command))
      printResult(command, { ok: true, sudoers: text }, text.trimEnd())
    })
}
