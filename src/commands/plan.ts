/**
 * `svcops plan live`: what an upgrade of the live production system means, change by change,
 * grouped by who acts. Also the two helpers the release commands share: the product prefix and
 * folder from the environment, and an exit code set after the result is printed.
 */
import type { Command } from 'commander'
import { BadInputError } from '../core/errors.ts'
import { DEFAULT_PRODUCT, type Product } from '../releases/types.ts'
import { environmentOf, globals, printResult, setResultExitCode } from './context.ts'

/** The product prefix and folder of `--env`/`--stack-file`, or the defaults (`svc`, `svc`) without one. */
export async function productFor(command: Command): Promise<Product> {
  const { env, stackFile } = globals(command)
  return env || stackFile ? (await environmentOf(command)).product : DEFAULT_PRODUCT
}

/** Exit code for a result that needs a person; see `setResultExitCode`. */
export const exitAfterOutput = setResultExitCode

/** The release the live system of --env runs (--from's default); without an environment, --from is needed. */
async function installedRelease(command: Command): Promise<string> {
  const { env, stackFile } = globals(command)
  if (!env && !stackFile)
    throw new BadInputError(
      '--from: missing; expected the version running now (e.g. 3.2.0), or --env ENV to read it from that live system.',
    )
  const { readInstalledLiveRelease } = await import('../live/live-system.ts')
  return readInstalledLiveRelease(await environmentOf(command))
}

export function register(program: Command): void {
  const plan = program.command('plan').description('Plan upgrades from the release catalog; nothing is changed.')

  plan
    .command('live')
    .description(
      'List every breaking change of the live production system between two versions, grouped by who acts: svcops, operator configuration, API client code, SDK code.',
    )
    .option('--from <version>', 'version running now, e.g. 3.2.0 (default with --env: the release the live system runs)')
    .requiredOption('--to <version>', 'version to upgrade to, e.g. 7.0.0')
    .addHelpText(
      'after',
      `
Each change says what to do and, where svcops handles or checks it, the command that does.
Names use the product prefix of --env (default svc). Upgrades within a major and equal versions
give an empty plan; a downgrade or an invalid version exits 2 with one sentence.

Examples:
  svcops plan live --from 3.2.0 --to 7.0.0
  svcops plan live --from 5.1.0 --to 6.0.0 --json | jq '.groups[] | {actor, n: (.items|length)}'
  svcops plan live --env prod --from 1.0.0 --to 2.0.0
  svcops plan live --env lab --to 7.0.0                 # from the release the lab's live system runs`,
    )
    .action(async (options: { from?: string; to: string }, command: Command) => {
      const { planLive, formatPlan } = await import('../releases/plan.ts')
      const from = options.from ?? (await installedRelease(command))
      const result = planLive(from, options.to, await productFor(command))
      printResult(command, { ok: true, ...result }, () => formatPlan(result))
    })
}
