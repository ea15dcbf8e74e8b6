/**
 * `svcops rehearse recording`: an upgrade rehearsed on a copy of the environment's database before
 * the window (playbooks/rehearse.ts). `svcops rehearse live`: the live upgrade's file changes
 * (settings file, PSK, TCP endpoint) rehearsed as a run on a copy of the live hosts' files
 * (playbooks/rehearse-live.ts); production is only read. Both declared from their option tables
 * (playbooks/lib/rehearse-commands.ts).
 */
import type { Command } from 'commander'
import { declareCommand } from '../core/option-table.ts'
import {
  REHEARSE_LIVE,
  REHEARSE_RECORDING,
  type RehearseLiveFlags,
  type RehearseRecordingFlags,
} from '../../playbooks/lib/rehearse-commands.ts'
import { ioOf } from './run-output.ts'

/** Registers `rehearse` with its `recording` and `live` subcommands. */
export function register(program: Command): void {
  const rehearse = program.command('rehearse').description('Rehearse an upgrade on a copy, before the window; production is not changed.')
  declareCommand(rehearse, REHEARSE_RECORDING).action(async (flags: RehearseRecordingFlags, command: Command) => {
    const [{ rehearsal }, { rehearseRecordingCommand }] = await Promise.all([
      import('../../playbooks/rehearse.ts'),
      import('../../playbooks/lib/rehearse-actions.ts'),
    ])
    await rehearseRecordingCommand(rehearsal)(flags, ioOf(command))
  })
  declareCommand(rehearse, REHEARSE_LIVE).action(async (flags: RehearseLiveFlags, command: Command) => {
    const [{ liveRehearsal }, { rehearseLiveCommand }] = await Promise.all([
      import('../../playbooks/rehearse-live.ts'),
      import('../../playbooks/lib/rehearse-actions.ts'),
    ])
    await rehearseLiveCommand(liveRehearsal)(flags, ioOf(command))
  })
}
