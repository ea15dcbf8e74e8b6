/**
 * `svcops upgrade|rollback|verify <system>`: each verb written once over the registry of systems
 * (playbooks/lib/systems.ts). Every system's command is declared from its playbook's option table
 * and calls the function the playbook run as a script calls too, loaded only when it runs; adding a
 * system adds a row to the registry, not code here.
 */
import type { Command } from 'commander'
import { declareCommand } from '../core/option-table.ts'
import { SYSTEMS, VERBS } from '../../playbooks/lib/systems.ts'
import { ioOf } from './run-output.ts'

/** Registers `upgrade`, `rollback` and `verify`, each with a subcommand per system that offers it. */
export function register(program: Command): void {
  for (const verb of VERBS) {
    const group = program.command(verb.name).description(verb.description)
    for (const system of SYSTEMS) {
      const declared = system.verbs[verb.name]
      if (!declared) continue
      declareCommand(group, declared.spec).action(async (flags: unknown, command: Command) => {
        const main = await declared.main()
        await main(flags as never, ioOf(command))
      })
    }
  }
}
