/** `svcops psk`: the system controller's pre-shared key — generate one, or check one's strength. */
import type { Command } from 'commander'
import { ExitCode } from '../core/errors.ts'
import { globals, printResult } from './context.ts'
import { exitAfterOutput } from './plan.ts'

export function register(program: Command): void {
  const psk = program.command('psk').description("Generate or check the system controller's pre-shared key (PSK).")

  psk
    .command('generate')
    .description('Generate a PSK from the CSPRNG (at least 256 bits, printable base64url).')
    .option('--bits <n>', 'size in bits (256 or more)', '256')
    .option('--out <file>', 'write the key to this new file (mode 0600) instead of stdout')
    .option('--dry-run', 'say what would be written, write nothing')
    .addHelpText(
      'after',
      `
Without --out the key is the only thing printed on stdout, for a pipe into a secret store;
it never appears in logs. With --out the file is created with mode 0600 and must not exist.

Examples:
  svcops psk generate --out /etc/opt/svc/psk
  svcops psk generate | kubectl create secret generic svc-psk --from-file=psk=/dev/stdin`,
    )
    .action(async (options: { bits: string; out?: string; dryRun?: boolean }, command: Command) => {
      const { generatePsk, assessPsk, writePskFile } = await import('../releases/pre-shared-key.ts')
      const bits = Number(options.bits)
      if (options.dryRun) {
        printResult(
          command,
          { ok: true, dryRun: true, bits, ...(options.out ? { file: options.out } : {}) },
          `Would generate a ${bits}-bit PSK${options.out ? ` into ${options.out} (mode 0600)` : ' on stdout'}.`,
        )
        return
      }
      const key = generatePsk(bits)
      const estimated = assessPsk(key).bits
      if (options.out) {
        writePskFile(options.out, key)
        printResult(
          command,
          { ok: true, bits, estimatedBits: estimated, file: options.out },
          `Wrote a ${bits}-bit PSK to ${options.out} (mode 0600).`,
        )
      } else if (globals(command).json) {
        // The key is this command's output: written directly, not through the redacting printer.
        process.stdout.write(JSON.stringify({ ok: true, bits, estimatedBits: estimated, value: key }, null, 2) + '\n')
      } else {
        process.stdout.write(`${key}\n`)
      }
    })

  psk
    .command('check')
    .description('Check a PSK: estimated entropy and every reason it would be refused.')
    .option('--env-var <name>', 'read the key from this environment variable instead of stdin')
    .addHelpText(
      'after',
      `
The key is read from stdin (or --env-var), never from the command line, and never printed.
Method: character pool and observed spread per character, with dictionary words, repeats,
runs and keyboard sequences counted as patterns; refused below 128 estimated bits, under 24
characters, or with a repeated block, a dictionary word or a long run (docs/releases.md).

Exit codes: 0 strong enough, 2 refused or no key.

Examples:
  svcops psk check < /etc/opt/svc/psk
  SVC_SYSTEM_CONTROLLER_PSK=... svcops psk check --env-var SVC_SYSTEM_CONTROLLER_PSK --json`,
    )
    .action(async (options: { envVar?: string }, command: Command) => {
      const { assessPsk, readPskInput, MIN_PSK_BITS } = await import('../releases/pre-shared-key.ts')
      const verdict = assessPsk(await readPskInput(options.envVar))
      printResult(command, { ...verdict, threshold: MIN_PSK_BITS }, () =>
        verdict.ok
          ? `The key is strong enough: about ${verdict.bits} bits (threshold ${MIN_PSK_BITS}).`
          : ['The key is refused:', ...verdict.reasons.map((r) => `  - ${r}`), 'Generate a new one with: svcops psk generate'].join('\n'),
      )
      if (!verdict.ok) exitAfterOutput(ExitCode.badInput)
    })
}
