/**
 * `svcops rehearse recording`: an upgrade rehearsed on a copy of the environment's database before
 * the window (playbooks/rehearse.ts), declared from its option table (playbooks/lib/rehearse-commands.ts).
 * `svcops rehearse live`: the live upgrade's file changes (settings file, PSK, TCP endpoint) rehearsed
 * on a copy of the live hosts' files (src/live/hosts/live-rehearsal.ts); production is only read.
 */
import type { Command } from 'commander'
import { declareCommand, type CommandSpec } from '../core/option-table.ts'
import { REHEARSE_RECORDING, type RehearseRecordingFlags } from '../../playbooks/lib/rehearse-commands.ts'
import { ioOf } from './run-output.ts'

/** `svcops rehearse live`'s options and help. */
export const REHEARSE_LIVE: CommandSpec = {
  words: ['rehearse', 'live'],
  description:
    "Rehearse the live upgrade's file changes on a copy: the settings file moved where the target reads it, the PSK rules, the TCP endpoint rule; production's files are only read.",
  options: [
    { flags: '--to <version>', help: 'live release to rehearse, e.g. 7.0.0', required: true },
    { flags: '--from <version>', help: "the release the live system runs (default: the system controller's installed package)" },
    { flags: '--tcp-endpoint <host:port>', help: 'the one TCP endpoint to keep where the target takes one (as for upgrade live)' },
  ],
  after: `
On hosts only (live.platform: hosts). Reads the system controller's settings file and every
component's environment file from the live hosts, applies the upgrade's own change plan to copies
of them in a scratch directory on this machine (0700, removed at the end; a new PSK is generated
for the copy only), then checks the copy as verify live checks the target's files: the settings
file where the target reads it, one PSK in every connecting component, its entropy where the
target enforces it, the TCP endpoint variable the target reads (one endpoint where it takes one).
Production's files are read again at the end and must be unchanged. Not rehearsed: the target's
packages and processes (no controller of the target is started). Nothing is journaled or locked.
Exit codes: 0 passed, 1 failed (the failed checks, or the refusal the upgrade would make), 2 bad input.

Examples:
  svcops rehearse live --env prod --to 7.0.0
  svcops rehearse live --env prod --to 6.0.0 --tcp-endpoint 10.0.0.5:9000 --json`,
}

/** Registers `rehearse` with its `recording` and `live` subcommands. */
export function register(program: Command): void {
  const rehearse = program.command('rehearse').description('Rehearse an upgrade on a copy, before the window; production is not changed.')
  declareCommand(rehearse, REHEARSE_RECORDING).action(async (flags: RehearseRecordingFlags, command: Command) => {
    const play = await import('../../playbooks/rehearse.ts')
    await play.rehearseRecordingCommand(flags, ioOf(command))
  })
  declareCommand(rehearse, REHEARSE_LIVE).action(async (flags: { to: string; from?: string; tcpEndpoint?: string }, command: Command) => {
    const io = ioOf(command)
    const [{ rehearseLiveSettings, describeLiveRehearsal }, { printOn }] = await Promise.all([
      import('../live/hosts/live-rehearsal.ts'),
      import('../edge/command-io.ts'),
    ])
    const result = await rehearseLiveSettings({
      env: await io.environment(),
      to: flags.to,
      ...(flags.from !== undefined ? { from: flags.from } : {}),
      ...(flags.tcpEndpoint !== undefined ? { tcpEndpoint: flags.tcpEndpoint } : {}),
    })
    printOn(io, { ok: result.verdict === 'passed', ...result }, () => describeLiveRehearsal(result).join('\n'))
    if (result.verdict !== 'passed') io.exitWith(1)
  })
}
