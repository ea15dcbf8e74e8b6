/**
 * Every command group of `svcops`, one file each. A group's file only declares its commands and
 * options (cheap to import); the work is imported lazily inside each action.
 */
import type { Command } from 'commander'

export type Register = (program: Command) => void

export const commandGroups: Array<() => Promise<{ register: Register }>> = [
  () => import('./auth.ts'),
  () => import('./lab.ts'),
  () => import('./render.ts'),
  () => import('./plan.ts'),
  () => import('./migrate.ts'),
  () => import('./psk.ts'),
  () => import('./scan.ts'),
  () => import('./upgrade.ts'),
  () => import('./backup.ts'),
]
