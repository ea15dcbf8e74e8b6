/**
 * `svcops migrate requests|metrics|env`: rewrites what a team owns (saved system controller calls,
 * alert rules and dashboards, a component's environment) for a newer live production release.
 * Anything the release notes do not allow to rewrite safely is reported with the reason.
 */
import type { Command } from 'commander'
import { BadInputError, ExitCode } from '../core/errors.ts'
import { printResult } from './context.ts'
import { exitAfterOutput, productFor } from './plan.ts'

interface Range {
  from: string
  to: string
}

const NEEDS_PERSON = `Exit codes: 0 everything migrated, 5 something needs a person (listed with the reason),
            2 bad input (versions, unreadable or invalid files; nothing written).`

export function register(program: Command): void {
  const migrate = program.command('migrate').description('Rewrite calls, metrics and environments for a newer live production release.')

  migrate
    .command('requests')
    .description('Translate saved system controller calls (method, path, JSON body, fields read) across majors.')
    .argument('<file>', 'JSON or YAML list of calls: { name?, method, path, body?, reads? }')
    .requiredOption('--from <version>', 'version the calls were written for')
    .requiredOption('--to <version>', 'version to translate them to')
    .option('--ids <file>', 'JSON or YAML id map { streams: { <connection_id>: <stream_uuid> } } (3.0 addresses streams by UUID)')
    .option('--out <file>', 'write the translated calls here (YAML for .yaml/.yml, else JSON)')
    .option('--dry-run', 'show the translation, write nothing')
    .addHelpText(
      'after',
      `
Every translated call lists the catalog rules applied (e.g. 3.0.0/api-v2, 4.0.0/local-remote-address);
a call that cannot be translated without guessing (an unknown SRT mode, a stream connection missing
from --ids, an endpoint removed without replacement) is kept as it was, with the rule and the reason.

${NEEDS_PERSON}

Examples:
  svcops migrate requests --from 2.1.0 --to 7.0.0 calls.yaml --ids stream-ids.yaml --out calls-7.yaml
  svcops migrate requests --from 3.0.0 --to 5.0.0 calls.json --json | jq '.calls[] | select(.untranslatable)'`,
    )
    .action(async (file: string, options: Range & { ids?: string; out?: string; dryRun?: boolean }, command: Command) => {
      const { readFileSync } = await import('node:fs')
      const { stringify } = await import('yaml')
      const { parseCalls, parseIdMap, migrateRequests, formatRequestMigration, translatedDocument } =
        await import('../releases/requests.ts')
      const read = (path: string): string => readInput(readFileSync, path)
      const calls = parseCalls(read(file), file)
      const ids = options.ids ? parseIdMap(read(options.ids), options.ids) : {}
      const result = migrateRequests(calls, options.from, options.to, { ids, product: await productFor(command) })
      const doc = translatedDocument(result)
      const target = options.out ?? file
      const text = /\.ya?ml$/i.test(target) ? stringify(doc) : JSON.stringify(doc, null, 2) + '\n'
      if (options.out && !options.dryRun) (await import('../core/atomic-write.ts')).writeFileAtomic(options.out, text, { mode: 0o644 })
      printResult(
        command,
        { ok: result.untranslatable === 0, ...result, ...(options.out ? { out: options.out, written: !options.dryRun } : {}) },
        () =>
          [
            formatRequestMigration(result),
            options.out ? (options.dryRun ? `Would write ${options.out}.` : `Wrote ${options.out}.`) : `\n${text.trimEnd()}`,
          ].join('\n'),
      )
      if (result.untranslatable) exitAfterOutput(ExitCode.findings)
    })

  migrate
    .command('metrics')
    .description('Rewrite metric names in Prometheus rule files, Grafana dashboards and PromQL files across majors.')
    .argument(
      '<files...>',
      'rule files (.yml/.yaml: every expr), dashboards (.json: expr, query, definition), or PromQL files (anything else)',
    )
    .requiredOption('--from <version>', 'version the queries were written for')
    .requiredOption('--to <version>', 'version to rewrite them for')
    .option('--write', 'rewrite the files in place (default: print a diff)')
    .option('--dry-run', 'with --write: print the diff, write nothing')
    .addHelpText(
      'after',
      `
4.0 renames queueing_video_frames to video_frames_in_queue; 6.0 splits the ingest source
dropped/duplicated/lost frame metrics into audio and video variants, rewritten to the sum of both
and flagged for review (names use the product prefix of --env, default svc). Only the rewritten
selectors change: comments, strings, label matchers and every other byte stay as they are.

${NEEDS_PERSON}

Examples:
  svcops migrate metrics --from 3.2.0 --to 6.0.0 rules/ingest.yaml dashboards/ingest.json
  svcops migrate metrics --from 3.2.0 --to 7.0.0 rules/*.yaml --write`,
    )
    .action(async (files: string[], options: Range & { write?: boolean; dryRun?: boolean }, command: Command) => {
      const { migrateMetricFiles, formatMetricResults } = await import('../releases/metrics.ts')
      const write = Boolean(options.write && !options.dryRun)
      const results = migrateMetricFiles(files, options.from, options.to, { write, product: await productFor(command) })
      const refused = results.reduce((n, r) => n + r.notRewritten.length, 0)
      const data = results.map(({ after: _after, ...r }) => r)
      printResult(command, { ok: refused === 0, from: options.from, to: options.to, written: write, files: data }, () =>
        formatMetricResults(results, { diff: !write, wrote: write }),
      )
      if (refused) exitAfterOutput(ExitCode.findings)
    })

  migrate
    .command('env')
    .description("Check and migrate a live production component's environment file and settings location across majors.")
    .argument('<file>', 'environment file (KEY=VALUE lines, as systemd EnvironmentFile or docker --env-file)')
    .requiredOption('--from <version>', 'version the component runs now')
    .requiredOption('--to <version>', 'version to migrate to')
    .option('--settings <path>', 'where the settings file (svc_sc_settings.json) is now, to check the 6.0 search path')
    .option('--workdir <dir>', "the component's working directory (searched for the settings file from 6.0)")
    .option('--write', 'rewrite the file in place when there is no problem (default: only report)')
    .option('--dry-run', 'with --write: report, write nothing')
    .addHelpText(
      'after',
      `
Checks: the PSK variable is set (from 2.0) and strong enough (from 6.0, same check as svcops psk
check); SVC_TCP_ENDPOINTS becomes SVC_TCP_ENDPOINT from 6.0 and must then list one endpoint (it
accepts many connections); the settings file is where 6.0 looks (working directory,
/etc/opt/<product_dir>, or --settings-path). Secrets are never printed. A file with a problem is
never written.

${NEEDS_PERSON}

Examples:
  svcops migrate env --from 5.3.0 --to 6.0.0 /etc/default/svc-rendering-engine
  svcops migrate env --from 5.3.0 --to 7.0.0 engine.env --settings /opt/svc/etc/svc_sc_settings.json --write`,
    )
    .action(
      async (
        file: string,
        options: Range & { settings?: string; workdir?: string; write?: boolean; dryRun?: boolean },
        command: Command,
      ) => {
        const { writeFileSync } = await import('node:fs')
        const { migrateEnvFile, formatEnvMigration } = await import('../releases/env.ts')
        const result = migrateEnvFile(file, options.from, options.to, {
          product: await productFor(command),
          ...(options.settings ? { settings: options.settings } : {}),
          ...(options.workdir ? { workdir: options.workdir } : {}),
        })
        const write = Boolean(options.write && !options.dryRun && !result.problems.length && result.changes.length)
        if (write) writeFileSync(file, result.after)
        const { after: _after, ...data } = result
        printResult(command, { ok: result.problems.length === 0, ...data, written: write }, () => formatEnvMigration(result, write))
        if (result.problems.length) exitAfterOutput(ExitCode.findings)
      },
    )
}

/** Reads an input file, turning a missing or unreadable file into one sentence. */
function readInput(read: (path: string, encoding: 'utf8') => string, path: string): string {
  try {
    return read(path, 'utf8')
  } catch (error) {
    throw new BadInputError(`The file '${path}' cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`)
  }
}
