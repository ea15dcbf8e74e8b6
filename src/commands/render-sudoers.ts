/**
 * `svcops render sudoers --env E`: prints the sudo rules for the SSH user of the environment's
 * recording hosts and rehearsal host (src/recording/hosts/sudoers.ts) and of its live hosts that
 * become root with sudo (src/live/hosts/live-sudo.ts): exactly the commands svcops runs as root there.
 */
import type { Command } from 'commander'
import { environmentOf, printResult } from './context.ts'

/** Adds `sudoers` under `svcops render`. */
export function registerSudoers(render: Command): void {
  render
    .command('sudoers')
    .description(
      'print the sudoers rules for the recording hosts, the rehearsal host and the live hosts of --env: exactly the commands svcops runs as root there (ssh.become: sudo)',
    )
    .addHelpText(
      'after',
      `
Each rule names the command's full path and every argument (no shell, no ALL); where an argument is
the version being installed, a sudoers regular expression admits a version and nothing else. The
upgrade's preflight checks each rule on each host with sudo -n -l before anything stops. The
rehearsal host (recording.rehearsal.host) gets the same rules for its SSH user: svcops rehearse
recording installs, stops and starts the service there. A live host with ssh.become: sudo gets the
rules of its components' packages and services and of the fixed commands that read, write and
remove the settings and environment files there (head -c, install -m 0600, dd, mv -T, rm -f, mkdir -p).

Examples:
  svcops render sudoers --env prod > svcops.sudoers && visudo -cf svcops.sudoers`,
    )
    .action(async (_options: object, command: Command) => {
      const { recordingSudoers } = await import('../recording/hosts/sudoers.ts')
      const { liveSudoers } = await import('../live/hosts/live-sudo.ts')
      const env = await environmentOf(command)
      const live = liveSudoers(env)
      // A live system's rules alone when the environment has no recording host reached over SSH.
      const rec = env.recording
      const recordingOverSsh = [...(rec?.hosts ?? []), ...(rec?.rehearsal?.host ? [rec.rehearsal.host] : [])].some((h) => h.ssh)
      const recording = live && !recordingOverSsh ? undefined : recordingSudoers(env)
      const text = [recording, live].filter((t) => t !== undefined).join('\n')
      printResult(command, { ok: true, sudoers: text }, text.trimEnd())
    })
}
