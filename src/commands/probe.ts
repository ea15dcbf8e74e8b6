/**
 * `svcops probe --env E`: the read-only first contact with an environment (docs/contract.md): every
 * interface the stack makes svcops use, tried once, each said to hold or not with its evidence and
 * the stack key to set. Changes nothing and takes no lock.
 */
import type { Command } from 'commander'
import { environmentOf, printResult, setResultExitCode, showProgress } from './context.ts'

/** Exit code when an interface does not hold: something needs a person, nothing was changed. */
const NEEDS_A_PERSON = 5

export function register(program: Command): void {
  program
    .command('probe')
    .description(
      'Read-only first contact: try every interface of docs/contract.md the stack uses (hosts, manager, recording service, database, live checks) and say which hold.',
    )
    .addHelpText(
      'after',
      `
Takes no lock and changes nothing svcops controls (the manager's session it opens is closed). It
runs the stack's declared command checks (svcops:live.checks), which must only read. With
ssh.trustOnFirstUse, the first contact records the host's key in .svcops/known_hosts.json, as any
first connection does. Exits 0 when every interface tried holds, 5 when one does not: each row
names its evidence and the stack key to set.

Examples:
  svcops probe --env lab
  svcops probe --env prod --json`,
    )
    .action(async (_options: unknown, command: Command) => {
      const { probeEnvironment, formatProbe } = await import('../probe/contract-probe.ts')
      const env = await environmentOf(command)
      const stop = showProgress(command)
      try {
        const report = await probeEnvironment(env)
        printResult(command, report, () => formatProbe(report))
        if (!report.ok) setResultExitCode(NEEDS_A_PERSON)
      } finally {
        stop()
      }
    })
}
