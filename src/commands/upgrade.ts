/**
 * Upgrade, roll back and verify a part of the platform: `svcops upgrade recording|live`, `svcops
 * rollback recording|live`, `svcops verify recording|live`. Each command is declared from its
 * playbook's option table (playbooks/lib/recording-commands.ts) and calls the function the playbook
 * run as a script calls too (the live system's subcommands are in live.ts).
 */
import type { Command } from 'commander'
import { declareCommand } from '../core/option-table.ts'
import {
  ROLLBACK_RECORDING,
  UPGRADE_RECORDING,
  VERIFY_RECORDING,
  type RollbackRecordingFlags,
  type UpgradeRecordingFlags,
  type VerifyRecordingFlags,
} from '../../playbooks/lib/recording-commands.ts'
import { registerLive } from './live.ts'
import { ioOf } from './run-output.ts'

/** Registers `upgrade`, `rollback` and `verify` with their `recording` and `live` subcommands. */
export function register(program: Command): void {
  const upgrade = program.command('upgrade').description('Upgrade a part of the platform.')
  const rollback = program.command('rollback').description('Roll back a part of the platform.')
  const verify = program.command('verify').description('Verify a part of the platform.')
  registerUpgradeRecording(upgrade)
  registerRollbackRecording(rollback)
  registerLive({ upgrade, rollback, verify })
  registerVerifyRecording(verify)
}

function registerUpgradeRecording(upgrade: Command): void {
  declareCommand(upgrade, UPGRADE_RECORDING).action(async (flags: UpgradeRecordingFlags, command: Command) => {
    const play = await import('../../playbooks/upgrade.ts')
    await play.upgradeRecordingCommand(flags, ioOf(command))
  })
}

function registerRollbackRecording(rollback: Command): void {
  declareCommand(rollback, ROLLBACK_RECORDING).action(async (flags: RollbackRecordingFlags, command: Command) => {
    const play = await import('../../playbooks/rollback.ts')
    await play.rollbackRecordingCommand(flags, ioOf(command))
  })
}

function registerVerifyRecording(verify: Command): void {
  declareCommand(verify, VERIFY_RECORDING).action(async (flags: VerifyRecordingFlags, command: Command) => {
    const play = await import('../../playbooks/verify.ts')
    await play.verifyRecordingCommand(flags, ioOf(command))
  })
}
