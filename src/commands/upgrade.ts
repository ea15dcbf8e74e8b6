/**
 * Upgrade, roll back and verify the recording service, and look after runs: `svcops upgrade
 * recording`, `svcops rollback recording`, `svcops verify recording`, `svcops runs list|show`,
 * `svcops resume ID`. Options and help only; the playbooks do the work.
 */
import { Option, type Command } from 'commander'
import { BadInputError, ExitCode } from '../core/errors.ts'
import { parseWindow } from '../runs/rollout.ts'
import { events } from '../core/events.ts'
import { confirm, environmentOf, globals, printResult, setResultExitCode } from './context.ts'
import { registerLive } from './live.ts'

function toInt(flag: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < 1)
      throw new BadInputError(`${flag}: '${value}' is not valid; expected a whole number of at least 1.`)
    return Number(value)
  }
}

/** Progress on stderr: live per-host lines on a terminal, plain lines otherwise, nothing with --json. */
async function progress(command: Command): Promise<() => void> {
  const { json, verbose } = globals(command)
  if (json && !verbose) return () => undefined
  const { progressSink } = await import('../reports/progress.ts')
  return events.subscribe(progressSink(process.stderr, { verbose: verbose ?? false }))
}

const METRICS_FILE_HELP =
  "also write the environment's run metrics (Prometheus text) to this file, e.g. /var/lib/node_exporter/textfile/svcops.prom"

/** `--metrics-file`: where the run's metrics go besides `svcops:notify.metrics` (src/notify/run-hooks.ts). */
async function useMetricsFile(flags: { metricsFile?: string }): Promise<void> {
  if (!flags.metricsFile) return
  const { setRunOutputOptions } = await import('../notify/run-hooks.ts')
  setRunOutputOptions({ metricsFile: flags.metricsFile })
}

/** Runs a playbook run with progress on stderr and prints how it ended (its report with --json). */
async function showRun(command: Command, run: () => Promise<{ runId: string; phase: string; report: unknown }>): Promise<void> {
  const stop = await progress(command)
  try {
    const outcome = await run()
    printResult(
      command,
      { ok: true, runId: outcome.runId, phase: outcome.phase, report: outcome.report },
      `Run ${outcome.runId}: ${outcome.phase}.`,
    )
  } finally {
    stop()
  }
}

interface UpgradeFlags {
  metricsFile?: string
  to: string
  hosts?: string
  batch?: number
  maxFail?: string
  autoRollback: boolean
  dryRun?: boolean
  yes?: boolean
  breakLock?: boolean
  window?: number
}

export function register(program: Command): void {
  const upgrade = program.command('upgrade').description('Upgrade a part of the platform.')
  upgrade
    .command('recording')
    .description(
      'Upgrade the recording service on its hosts: preflight, verified backup, canary, batches, verification; automatic rollback on failure.',
    )
    .requiredOption('--to <version>', 'version to install, e.g. 2.0.0')
    .option('--hosts <names>', 'only these hosts (comma-separated names from the environment file)')
    .option('--batch <n>', 'hosts upgraded at once after the canary', toInt('--batch'), 1)
    .option('--max-fail <n|p%>', 'host failures tolerated after the canary before the rollout stops and rolls back', '0')
    .option(
      '--window <duration>',
      'maintenance window from the start, e.g. 90m or 1h30m: a batch starts only if, judged by the longest batch so far, it ends inside it; otherwise the run rolls back what it changed',
      (v: string) => parseWindow(v),
    )
    .option('--no-auto-rollback', 'on failure, keep the broken state for inspection instead of rolling back')
    .option('--dry-run', 'print every step and command per host; change nothing')
    .option('-y, --yes', 'do not ask for confirmation (schedulers, scripts)')
    .option('--break-lock', "take the environment's lock even though another run holds it (logged)")
    .option('--metrics-file <path>', METRICS_FILE_HELP)
    .addHelpText(
      'after',
      `
Steps: preflight (config, lock, manager scopes, database privileges, room for the backup, package
staged on every host before anything stops, current versions, content snapshot) -> backup +
verification -> per host: stop, install, review-config, start, wait-healthy, check-logs,
verify-host -> verify. The canary (marked in the environment file, else the first host) goes
alone and migrates the shared database; then batches of --batch hosts run concurrently.

Every run has an id and a journal in .svcops/runs/<id>/ with report.html, report.md and
report.json; svcops:notify in the stack file tells webhooks and publishes metrics (docs/operations.md).
Exit codes: 0 upgraded, 1 failed (see the report), 2 bad input, 3 locked by another run,
            4 failed and rolled back (the report says why and what was restored).

Examples:
  svcops upgrade recording --env lab --to 2.0.0 --dry-run
  svcops upgrade recording --env prod --to 2.0.0 --batch 5 --max-fail 10% --window 90m --yes --json
  svcops upgrade recording --env staging --to 2.1.0 --hosts rec-2 --no-auto-rollback`,
    )
    .action(async (flags: UpgradeFlags, command: Command) => {
      const env = await environmentOf(command)
      const hosts = flags.hosts
        ?.split(',')
        .map((h) => h.trim())
        .filter(Boolean)
      const request = {
        env,
        to: flags.to,
        ...(hosts ? { hosts } : {}),
        batch: flags.batch ?? 1,
        maxFail: flags.maxFail ?? '0',
        autoRollback: flags.autoRollback,
        ...(flags.breakLock ? { breakLock: true } : {}),
        ...(flags.window ? { windowMs: flags.window } : {}),
      }
      const play = await import('../../playbooks/upgrade.ts')
      if (flags.dryRun) {
        const plan = await play.planRecordingService(request)
        const { renderPlan } = await import('../recording/recording-runs.ts')
        printResult(command, { ok: true, dryRun: true, ...plan }, () => renderPlan(plan))
        return
      }
      await confirm(`Upgrade the recording service of '${env.name}' to ${flags.to}?`, flags.yes)
      await useMetricsFile(flags)
      const stop = await progress(command)
      try {
        const outcome = await play.upgradeRecordingService(request)
        printResult(
          command,
          { ok: true, runId: outcome.runId, phase: outcome.phase, report: outcome.report },
          () => `Run ${outcome.runId}: ${outcome.phase}. Report: .svcops/runs/${outcome.runId}/report.md`,
        )
      } finally {
        stop()
      }
    })

  const rollback = program.command('rollback').description('Roll back a part of the platform.')
  rollback
    .command('recording')
    .description('Roll back the recording service: the last (or given) upgrade run from its journal, or to an explicit version.')
    .option('--run <id>', 'the run to roll back (default: the newest upgrade run of the environment)')
    .option('--to <version>', 'move every host to this version instead, through the upgrade path (backup, verify, auto-rollback)')
    .option('--dry-run', 'print what the rollback would do, per host, with the exact commands; change nothing')
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--break-lock', "take the environment's lock even though another run holds it (logged)")
    .option('--metrics-file <path>', METRICS_FILE_HELP)
    .addHelpText(
      'after',
      `
Rules (the seed's, made lossless): stop; install the previous version; restore the run's verified
backup only if the schema fingerprint changed (or recordings went missing) — after exporting every
recording written since the backup, re-created after the restore and listed in the report; start;
verify. Exit 0 when the rollback succeeded, also when a killed one is finished by svcops resume ID;
with --to, exit 4 means the move to that version failed and was rolled back (the report says why).

Examples:
  svcops rollback recording --env prod --dry-run
  svcops rollback recording --env prod
  svcops rollback recording --env prod --run 20261122T031500Z-3fa9c1 --yes
  svcops rollback recording --env staging --to 1.5.0`,
    )
    .action(
      async (
        flags: { run?: string; to?: string; dryRun?: boolean; yes?: boolean; breakLock?: boolean; metricsFile?: string },
        command: Command,
      ) => {
        if (flags.run && flags.to)
          throw new BadInputError('--run and --to: both given; expected one of them (a run to undo, or a version to go to).')
        const env = await environmentOf(command)
        const play = await import('../../playbooks/upgrade.ts')
        const options = { ...(flags.run ? { runId: flags.run } : {}), ...(flags.to ? { to: flags.to } : {}) }
        if (flags.dryRun) {
          const plan = await play.planRecordingRollback(env, options)
          const { renderPlan } = await import('../recording/recording-runs.ts')
          printResult(command, { ok: true, dryRun: true, plan }, () => renderPlan(plan))
          return
        }
        await confirm(
          `Roll back the recording service of '${env.name}'${flags.run ? ` (run ${flags.run})` : flags.to ? ` to ${flags.to}` : ''}?`,
          flags.yes,
        )
        await useMetricsFile(flags)
        await showRun(command, () => play.rollbackRecordingService(env, { ...options, ...(flags.breakLock ? { breakLock: true } : {}) }))
      },
    )

  const verify = program.command('verify').description('Verify a part of the platform.')
  registerLive({ upgrade, rollback, verify }, showRun)
  verify
    .command('recording')
    .description(
      "The seed's post-upgrade check alone, on every host: GET /, GET /api/v1/content?limit=N, POST a test recording, schema fingerprint, status and the last log lines.",
    )
    .option('--no-test-recording', 'do not create the test recording (read-only check)')
    .addHelpText(
      'after',
      `
Exit 0 when every check passes, 1 otherwise (each failed check is named).

Examples:
  svcops verify recording --env lab
  svcops verify recording --env prod --no-test-recording --json`,
    )
    .action(async (flags: { testRecording: boolean }, command: Command) => {
      const env = await environmentOf(command)
      const stop = await progress(command)
      try {
        const play = await import('../../playbooks/verify.ts')
        const result = await play.verifyRecordingService(env, { testRecording: flags.testRecording })
        printResult(command, result, () => play.renderVerification(result))
        if (!result.ok) setResultExitCode(ExitCode.failed)
      } finally {
        stop()
      }
    })

  const runs = program.command('runs').description('Upgrade and rollback runs recorded in .svcops/runs.')
  runs
    .command('list')
    .description('List runs, newest first, as a table: id, environment, kind, target, outcome, duration, longest downtime.')
    .addOption(new Option('--kind <kind>', 'only runs of this kind').choices(['upgrade', 'rollback', 'backup', 'verify']))
    .addHelpText('after', '\nExamples:\n  svcops runs list\n  svcops runs list --env prod --kind backup\n  svcops runs list --json')
    .action(async (flags: { kind?: string }, command: Command) => {
      // --env (global) filters here: the runs of that environment.
      const { env } = globals(command)
      const { Journal, listRuns } = await import('../runs/journal.ts')
      const { buildReport } = await import('../reports/report.ts')
      const { renderRunsTable } = await import('../reports/report-text.ts')
      const { longestDowntime, runDurationMs } = await import('../reports/timeline.ts')
      const reports = listRuns()
        .filter((r) => (!env || r.environment === env) && (!flags.kind || r.kind === flags.kind))
        .map((r) => buildReport(Journal.open(r.id)))
      const list = reports.map((r) => ({
        ...r.run,
        durationMs: runDurationMs(r) ?? null,
        longestDowntime: longestDowntime(r) ?? null,
      }))
      printResult(command, { ok: true, runs: list }, () => (list.length ? renderRunsTable(reports) : 'No runs yet.'))
    })
  runs
    .command('show')
    .description('Show one run: the outcome in one sentence and its timeline, one line per host; the report on request.')
    .argument('<id>', 'run id (see svcops runs list)')
    .option('--open', "open the run's report.html in the desktop's browser (xdg-open)")
    .option('--html <path>', "write the run's report.html to <path>")
    .option('--markdown', 'print report.md instead of the timeline')
    .addHelpText(
      'after',
      '\nExamples:\n  svcops runs show 20261122T031500Z-3fa9c1\n  svcops runs show 20261122T031500Z-3fa9c1 --html /tmp/run.html\n  svcops runs show 20261122T031500Z-3fa9c1 --open\n  svcops runs show 20261122T031500Z-3fa9c1 --json',
    )
    .action(async (id: string, flags: { open?: boolean; html?: string; markdown?: boolean }, command: Command) => {
      const { Journal } = await import('../runs/journal.ts')
      const { buildReport, renderMarkdown } = await import('../reports/report.ts')
      const { redactDeep } = await import('../core/redact.ts')
      const { renderHtml } = await import('../reports/report-html.ts')
      const { renderRunText } = await import('../reports/report-text.ts')
      const { outcomeSentence } = await import('../reports/timeline.ts')
      const journal = Journal.open(id)
      const report = redactDeep(buildReport(journal))
      if (flags.html || flags.open) {
        const { writeFileSync } = await import('node:fs')
        const file = flags.html ?? journal.file('report.html')
        writeFileSync(file, renderHtml(report), { mode: 0o600 })
        if (flags.open) {
          const { spawn } = await import('node:child_process')
          // The desktop's opener; without one (a server), the path is printed to open elsewhere.
          spawn('xdg-open', [file], { detached: true, stdio: 'ignore' })
            .on('error', () => events.warn(`No xdg-open here; open ${file} in a browser.`))
            .unref()
        }
        events.info(`Report: ${file}`)
      }
      const columns = Math.max(30, Math.min(100, (process.stdout.columns || 100) - 40))
      printResult(command, { ok: true, ...report }, () =>
        flags.markdown ? renderMarkdown(report) : renderRunText(report, outcomeSentence(report), columns),
      )
    })

  program
    .command('resume')
    .description('Continue a run that was interrupted (killed, machine lost), or roll it back with --rollback.')
    .argument('<id>', 'run id (see svcops runs list)')
    .option('--rollback', 'roll the run back instead of continuing it')
    .option(
      '--retry',
      "after a rolled-back upgrade whose cause was fixed (svcops doctor recording): upgrade again to the same target, reusing the run's verified backup",
    )
    .option('--dry-run', 'print what is left to do (or what the rollback would do), per host, with the exact commands; change nothing')
    .addOption(new Option('--break-lock', "take the environment's lock even though another run holds it (logged)"))
    .option('--metrics-file <path>', METRICS_FILE_HELP)
    .addHelpText(
      'after',
      `
Steps the journal records as finished are not repeated; host steps are idempotent (stopping a
stopped service, installing an installed version). A run that was rolling back continues its
rollback.

Examples:
  svcops resume 20261122T031500Z-3fa9c1 --dry-run
  svcops resume 20261122T031500Z-3fa9c1
  svcops resume 20261122T031500Z-3fa9c1 --rollback --json
  svcops resume 20261122T031500Z-3fa9c1 --retry          # the seed's "restore backup and retry"`,
    )
    .action(
      async (
        id: string,
        flags: { rollback?: boolean; retry?: boolean; dryRun?: boolean; breakLock?: boolean; metricsFile?: string },
        command: Command,
      ) => {
        const live = await import('../../playbooks/upgrade-live.ts')
        if (live.isLiveRun(id)) {
          if (flags.retry)
            throw new BadInputError(
              `--retry: run ${id} is an upgrade of the live production system; expected a run of the recording service (a live upgrade is started again with svcops upgrade live).`,
            )
          if (flags.dryRun) {
            const plan = await live.planLiveResume(id, { rollback: flags.rollback ?? false })
            const { renderLivePlan } = await import('../live/live-runs.ts')
            printResult(command, { ok: true, dryRun: true, plan }, () => renderLivePlan(plan))
            return
          }
          await showRun(command, () =>
            live.resumeLiveSystem(id, { ...(flags.rollback ? { rollback: true } : {}), ...(flags.breakLock ? { breakLock: true } : {}) }),
          )
          return
        }
        const play = await import('../../playbooks/upgrade.ts')
        if (flags.retry && !flags.dryRun) {
          await useMetricsFile(flags)
          const stop = await progress(command)
          try {
            const outcome = await play.retryRecordingService(id, flags.breakLock ? { breakLock: true } : {})
            printResult(
              command,
              { ok: true, runId: outcome.runId, retryOf: id, phase: outcome.phase, report: outcome.report },
              `Run ${outcome.runId} (retry of ${id}): ${outcome.phase}.`,
            )
          } finally {
            stop()
          }
          return
        }
        if (flags.dryRun) {
          const plan = await play.planRecordingResume(id, { rollback: flags.rollback ?? false })
          const { renderPlan } = await import('../recording/recording-runs.ts')
          printResult(command, { ok: true, dryRun: true, plan }, () => renderPlan(plan))
          return
        }
        await useMetricsFile(flags)
        await showRun(command, () =>
          play.resumeRecordingService(id, {
            ...(flags.rollback ? { rollback: true } : {}),
            ...(flags.breakLock ? { breakLock: true } : {}),
          }),
        )
      },
    )
}
