/**
 * `svcops rehearse recording`: an upgrade rehearsed on a copy of the environment's database before
 * the window (playbooks/rehearse.ts), declared from its option table (playbooks/lib/rehearse-commands.ts).
 */
import type { Command } from 'commander'
import { declareCommand } from '../core/option-table.ts'
import { REHEARSE_RECORDING, type RehearseRecordingFlags } from '../../playbooks/lib/rehearse-commands.ts'
import { ioOf } from './run-output.ts'

/** Registers `rehearse` with its `recording` subcommand. */
export function register(program: Command): void {
  const rehearse = program.command('rehearse').description('Rehearse an upgrade on a copy, before the window; production is not changed.')
  declareCommand(rehearse, REHEARSE_RECORDING).action(async (flags: RehearseRecordingFlags, command: Command) => {
    const play = await import('../../playbooks/rehearse.ts')
    await play.rehearseRecordingCommand(flags, ioOf(command))
  })
}
