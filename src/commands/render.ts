/**
 * `svcops render`: writes the Kubernetes objects the Pulumi program would create for a stack, as
 * YAML, through Pulumi's mock runtime — for review in pull requests and where no Pulumi CLI is.
 */
import type { Command } from 'commander'
import { BadInputError } from '../core/errors.ts'
import { globals, printResult, showProgress } from './context.ts'
import { registerSudoers } from './render-sudoers.ts'

export function register(program: Command): void {
  const render = program
    .command('render')
    .description('PREVIEW: write the Kubernetes objects of a stack as YAML (mock runtime, secrets masked, schema-validated).')
    .option('--stack <name>', 'stack to render (default: --env)')
    // Checked in the action, not by commander: `render sudoers` needs none.
    .option('--out <dir>', 'directory for the YAML files (files of an earlier render there are replaced)')
    .option('--dry-run', 'build and validate, list the files, write nothing')
    .addHelpText(
      'after',
      `
What it is: the objects src/infra would declare for the stack, run through Pulumi's mock runtime,
one file per object, each checked against the official Kubernetes schema. Secret values read
"<secret: set by Pulumi, not shown>"; generated keys and certificates are stand-ins, so checksum
annotations change exactly when the configuration would change them.
What it is not: a plan or a diff against the cluster. For that run 'pulumi preview -s <stack>'
(docs/deploy.md). Exits 2 when the stack file is invalid, naming the field.

Examples:
  svcops render --stack dev --out rendered/dev
  svcops render --env prod --out /tmp/prod --json
  svcops render --stack staging --out rendered/staging --dry-run`,
    )
    .action(async (options: { stack?: string; out?: string; dryRun?: boolean }, command: Command) => {
      const { renderStack } = await import('../infra/render.ts')
      const { stackFilePath } = await import('../config/load.ts')
      const { env, stackFile } = globals(command)
      const stack = options.stack ?? env
      if (!stack) throw new BadInputError('--stack: missing; expected the name of a stack in stacks/, for example --stack dev.')
      if (!options.out)
        throw new BadInputError('--out: missing; expected the directory for the YAML files, for example --out rendered/dev.')
      const stop = showProgress(command)
      try {
        const report = await renderStack({
          stack,
          stackFile: stackFile ?? stackFilePath(stack),
          outDir: options.out,
          dryRun: options.dryRun ?? false,
        })
        printResult(command, { ok: true, ...report }, () =>
          [
            `PREVIEW of stack ${stack} (mock runtime, not read from a cluster): ${report.files.length} objects ${report.dryRun ? 'would be written' : 'written'} to ${report.outDir}, each valid against the Kubernetes schema.`,
            ...report.files.map((f) => `  ${f.file}${f.secretFields.length ? `  (secret: ${f.secretFields.join(', ')})` : ''}`),
            ...(report.standIns.length ? [`Stand-ins used for secure values: ${report.standIns.join(', ')}.`] : []),
            `Real plan: pulumi preview -s ${stack}`,
          ].join('\n'),
        )
      } finally {
        stop()
      }
    })
  registerSudoers(render)
}
