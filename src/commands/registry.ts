/**
 * Every command group of `svcops`, one file each, with the top-level commands it declares. A
 * group's file only declares its commands and options (cheap to import); the work is imported
 * lazily inside each action. A run of one command loads only that command's group (`groupsFor`);
 * help, a bare `svcops` and unknown commands load them all.
 */
import type { Command } from 'commander'
import { existsSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { BadInputError } from '../core/errors.ts'
import { projectPath } from '../core/paths.ts'

export type Register = (program: Command) => void

interface CommandGroup {
  /** The top-level commands the group registers. */
  commands: string[]
  load: () => Promise<{ register: Register }>
}

export const commandGroups: CommandGroup[] = [
  { commands: ['auth'], load: () => import('./auth.ts') },
  { commands: ['probe'], load: () => import('./probe.ts') },
  { commands: ['lab'], load: loadLabGroup },
  { commands: ['render'], load: () => import('./render.ts') },
  { commands: ['plan'], load: () => import('./plan.ts') },
  { commands: ['migrate'], load: () => import('./migrate.ts') },
  { commands: ['psk'], load: () => import('./psk.ts') },
  { commands: ['scan'], load: () => import('./scan.ts') },
  { commands: ['upgrade', 'rollback', 'verify'], load: () => import('./upgrade.ts') },
  { commands: ['runs', 'resume'], load: () => import('./runs.ts') },
  { commands: ['backup'], load: () => import('./backup.ts') },
  { commands: ['doctor'], load: () => import('./doctor.ts') },
  { commands: ['schedule'], load: () => import('./schedule.ts') },
  { commands: ['rehearse'], load: () => import('./rehearse.ts') },
]

/**
 * The groups `argv` needs: the one declaring its command, none for the program's own version (it
 * names no command, and a scheduler's `svcops --version` should cost a start and no more), or every
 * group when that is unclear (help, no command, an unknown one). `valueFlags` are the global options
 * that take a value (the word after one is not a command).
 */
export function groupsFor(argv: string[], valueFlags: readonly string[]): CommandGroup[] {
  let name: string | undefined
  const flags: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? ''
    if (valueFlags.includes(word)) i++
    else if (!word.startsWith('-')) {
      name = word
      break
    } else flags.push(word)
  }
  if (name === undefined && flags.includes('-V') && !flags.some((f) => f === '-h' || f === '--help')) return []
  const group = name === undefined ? undefined : commandGroups.find((g) => g.commands.includes(name))
  return group ? [group] : commandGroups
}

/**
 * Where the lab declares its own command group. The lab is a development tool of the repository
 * (src/lab: emulators, throwaway PostgreSQL, sandboxed hosts) that the product neither imports nor
 * ships (package.json `files`, .dockerignore): its group is loaded by path, only where it exists.
 */
const LAB_COMMAND_GROUP = projectPath('src', 'lab', 'command.ts')

/** The lab's command group in a checkout; elsewhere a `lab` command that says where the lab is. */
async function loadLabGroup(): Promise<{ register: Register }> {
  if (existsSync(LAB_COMMAND_GROUP)) return (await import(pathToFileURL(LAB_COMMAND_GROUP).href)) as { register: Register }
  return { register: registerLabElsewhere }
}

/** `svcops lab ...` in an installed svcops: one sentence, exit 2, nothing started. */
function registerLabElsewhere(program: Command): void {
  program
    .command('lab', { hidden: true })
    .description('The embedded lab: part of the svcops repository, not of an installed svcops.')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[words...]')
    .action(() => {
      throw new BadInputError(
        'svcops lab is not part of this installation: the lab is a development tool that comes with the svcops repository (clone it, then run npm install && npx svcops lab up there).',
      )
    })
}
