/** `svcops psk`: the system controller's pre-shared key — generate one, check one's strength, or rotate the live system's. */
import type { Command } from 'commander'
import { ExitCode } from '../core/errors.ts'
import { environmentOf, globals, printResult } from './context.ts'
import { exitAfterOutput } from './plan.ts'
import { lockPolicyOf } from '../runs/lock-policy.ts'

export function register(program: Command): void {
  const psk = program.command('psk').description("Generate, check or rotate the system controller's pre-shared key (PSK).")

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

  registerRotate(psk)
}

/** `svcops psk rotate --env E`: a new PSK for the live system (hosts or Kubernetes), as a locked, journaled run. */
function registerRotate(psk: Command): void {
  psk
    .command('rotate')
    .description(
      "Rotate the live system's PSK (on hosts or Kubernetes): a new key to the controller first, then every component; the gap measured.",
    )
    .option('--dry-run', 'show every step and file it would change (the key never shown); change nothing, take no lock')
    .option('--yes', 'do not ask for confirmation (required without a terminal)')
    .option('--break-lock', "take the live system's lock from a run that is finished or gone")
    .option('--force', 'with --break-lock: even from a run that did not finish')
    .addHelpText(
      'after',
      `
What it does (a run of the live system, kind psk-rotate, under its lock, in svcops runs list):
  1. reads the release every component runs (2.0.0 or later: a release that reads a PSK) and the
     files: the controller's settings file (svc_sc_settings.json, its "psk") and every component's
     environment file (SVC_SYSTEM_CONTROLLER_PSK);
  2. keeps every one of them in the run folder (0600): the old key lives only there;
  3. stops every component (control panels first, the controller last), writes a new 256-bit key
     from the CSPRNG to the controller's settings file first, then to every environment file;
  4. starts and checks each in dependency order: the controller, ingest, pipeline, control panel;
  5. verifies the whole system (every component connected, one strong key everywhere) and reports
     the gap: how long each component was disconnected, and in all.
If a component does not come back (it does not reconnect with the new key), the old key is put back
everywhere and every component restarted on it: exit 4. A killed rotation continues with
svcops resume ID (the key the controller already has) or is undone with svcops resume ID --rollback.
Neither key is ever printed, logged, journaled, reported or put in a command's arguments.

On Kubernetes (live.platform: kubernetes) the same run sets a new svcops:deploy.pskRotation
(the program generates the key; svcops never reads it), then pulumi up of the live components
only, the controller first (docs/deploy.md, "A rotation, step by step"): no controller answers
until the new one is ready, and the gap is measured from the start of pulumi up. Its rollback puts
the previous pskRotation back and runs pulumi up again, every component checked.

Exit codes: 0 rotated and verified, 2 bad input, 3 locked, 4 rolled back to the old key, 5 refused before anything changed.

Examples:
  svcops psk rotate --env prod --dry-run
  svcops psk rotate --env prod --yes
  svcops psk rotate --env prod --yes --json`,
    )
    .action(async (options: { dryRun?: boolean; yes?: boolean; breakLock?: boolean; force?: boolean }, command: Command) => {
      const [{ pskRotate }, { planSystemRun, renderRunPlan, startSystemRun }, { printPlan, showRun }, { gapLine }] = await Promise.all([
        import('../../playbooks/psk-rotate.ts'),
        import('../runs/run-actions.ts'),
        import('./run-output.ts'),
        import('../live/psk-rotate.ts'),
      ])
      const env = await environmentOf(command)
      const request = { env, lockPolicy: lockPolicyOf(options) }
      if (options.dryRun) {
        const plan = await planSystemRun(pskRotate, request)
        printPlan(command, plan, () => renderRunPlan(pskRotate, plan), { spread: false })
        return
      }
      const { confirmChange } = await import('../edge/command-io.ts')
      await confirmChange(`Rotate the PSK of the live production system of '${env.name}' (every component restarts)?`, options.yes)
      const { closingLine } = await import('../edge/closing-line.ts')
      await showRun(
        command,
        () => startSystemRun(pskRotate, request),
        (outcome) => [gapLine(outcome.report), closingLine(outcome)].filter(Boolean).join('\n'),
      )
    })
}
