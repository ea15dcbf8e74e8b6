/**
 * Every command group of `svcops`, one file each, with the top-level commands it declares. A
 * group's file only declares its commands and options (cheap to import); the work is imported
 * lazily inside each action. A run of one command loads only that command's group (`groupsFor`);
 * help, a bare `svcops` and unknown commands load them all.
 */
import type { Command } from 'commander'

export type Register = (program: Command) => void

interface CommandGroup {
  /** The top-level commands the group registers. */
  commands: string[]
  load: () => Promise<{ register: Register }>
}

export const commandGroups: CommandGroup[] = [
  { commands: ['auth'], load: () => import('./auth.ts') },
  { commands: ['lab'], load: () => import('./lab.ts') },
  { commands: ['render'], load: () => import('./render.ts') },
  { commands: ['plan'], load: () => import('./plan.ts') },
  { commands: ['migrate'], load: () => import('./migrate.ts') },
  { commands: ['psk'], load: () => import('./psk.ts') },
  { commands: ['scan'], load: () => import('./scan.ts') },
  { commands: ['upgrade', 'rollback', 'verify', 'runs', 'resume'], load: () => import('./upgrade.ts') },
  { commands: ['backup'], load: () => import('./backup.ts') },
]

/** Global options that take a value (the word after them is not a command name). */
const VALUE_OPTIONS = new Set(['-e', '--env', '--env-file'])

/** The groups `argv` needs: the one declaring its command, or every group when that is unclear. */
export function groupsFor(argv: string[]): CommandGroup[] {
  let name: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? ''
    if (VALUE_OPTIONS.has(word)) i++
    else if (!word.startsWith('-')) {
      name = word
      break
    }
  }
  const group = name === undefined ? undefined : commandGroups.find((g) => g.commands.includes(name))
  return group ? [group] : commandGroups
}
