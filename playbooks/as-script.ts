/** What makes a playbook file runnable by itself (`npx tsx playbooks/upgrade.ts --env lab --to 1.5.0`). */
import { pathToFileURL } from 'node:url'

/**
 * Runs `svcops <command...> <arguments>` when `moduleUrl` is the process's own script, and nothing
 * when the playbook is imported (by the CLI). No top-level await: the CLI bundle is CommonJS.
 */
export function runAsScript(moduleUrl: string, command: string[]): void {
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? '').href) return
  void import('../src/commands/program.ts').then(async ({ main }) => {
    process.exitCode = await main([...command, ...process.argv.slice(2)])
  })
}
