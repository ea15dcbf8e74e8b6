/**
 * `svcops upgrade live`, `svcops rollback live`, `svcops verify live`: the live production
 * system's upgrade across majors, its way back and its checks. Each command is declared from its
 * playbook's option table (playbooks/lib/live-commands.ts) and calls the function the playbook run
 * as a script calls too (playbooks/upgrade-live.ts, playbooks/verify-live.ts).
 */
import type { Command } from 'commander'
import { declareCommand } from '../core/option-table.ts'
import {
  ROLLBACK_LIVE,
  UPGRADE_LIVE,
  VERIFY_LIVE,
  type RollbackLiveFlags,
  type UpgradeLiveFlags,
} from '../../playbooks/lib/live-commands.ts'
import { ioOf } from './run-output.ts'

/** Adds the `live` subcommands to the `upgrade`, `rollback` and `verify` groups. */
export function registerLive(groups: { upgrade: Command; rollback: Command; verify: Command }): void {
  declareCommand(groups.upgrade, UPGRADE_LIVE).action(async (flags: UpgradeLiveFlags, command: Command) => {
    const play = await import('../../playbooks/upgrade-live.ts')
    await play.upgradeLiveCommand(flags, ioOf(command))
  })
  declareCommand(groups.rollback, ROLLBACK_LIVE).action(async (flags: RollbackLiveFlags, command: Command) => {
    const play = await import('../../playbooks/upgrade-live.ts')
    await play.rollbackLiveCommand(flags, ioOf(command))
  })
  declareCommand(groups.verify, VERIFY_LIVE).action(async (flags: unknown, command: Command) => {
    const play = await import('../../playbooks/verify-live.ts')
    await play.verifyLiveCommand(flags, ioOf(command))
  })
}
