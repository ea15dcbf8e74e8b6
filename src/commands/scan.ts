/** `svcops scan sdk`: finds C++ SDK usages that an upgrade of the live production system breaks. */
import type { Command } from 'commander'
import { ExitCode } from '../core/errors.ts'
import { printResult } from './context.ts'
import { exitAfterOutput } from './plan.ts'

export function register(program: Command): void {
  const scan = program.command('scan').description('Scan source code for uses of what an upgrade removes or changes.')

  scan
    .command('sdk')
    .description('Find uses of C++ SDK symbols changed by the majors between --from and --to (file:line:column, release, replacement).')
    .argument('<dir>', 'source tree (or one file) to scan')
    .requiredOption('--from <version>', 'SDK version the code is written for, e.g. 1.0.0')
    .requiredOption('--to <version>', 'SDK version to upgrade to, e.g. 7.0.0')
    .addHelpText(
      'after',
      `
Comments, string and character literals, raw strings and #include <...> names are ignored;
names that only look alike (mPTSOffset, sendRequestAsync) are not findings.

Exit codes (for CI): 0 nothing found, 5 findings (they need a person), 2 bad input (version, directory).

Examples:
  svcops scan sdk ./src --from 1.0.0 --to 7.0.0
  svcops scan sdk ./engine --from 5.2.0 --to 6.0.0 --json | jq '.findings[] | "\\(.file):\\(.line)"'`,
    )
    .action(async (dir: string, options: { from: string; to: string }, command: Command) => {
      const { scanSdk, formatSdkFindings } = await import('../releases/sdk-scan.ts')
      const result = scanSdk(dir, options.from, options.to)
      printResult(command, { ok: result.findings.length === 0, ...result }, () => formatSdkFindings(result))
      // A finding is work for a person, not a failed command: the exit-code map's 5 (src/core/errors.ts).
      if (result.findings.length) exitAfterOutput(ExitCode.findings)
    })
}
