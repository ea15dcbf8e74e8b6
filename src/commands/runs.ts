/**
 * The runs svcops recorded, and the way to finish one: `svcops runs list|show` (the journal for
 * people and machines, report.md/html on request) and `svcops resume ID [--rollback|--retry]`, which
 * continues a run of whichever system it belongs to. Options and help only; the playbooks do the work.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Option, type Command } from 'commander'
import { BadInputError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { environmentOf, globals, printResult } from './context.ts'
import type { Journal } from '../runs/journal.ts'
import { registerRunsFollow } from './runs-follow.ts'
import { useRunSystems } from './run-systems.ts'
import { closingLine, endingWithClosingLine } from '../../playbooks/lib/closing-line.ts'
import { METRICS_FILE_HELP, printPlan, progress, showRun } from './run-output.ts'

interface ResumeFlags {
  rollback?: boolean
  retry?: boolean
  dryRun?: boolean
  breakLock?: boolean
  force?: boolean
  metricsFile?: string
}

const SHOW_HELP =
  '\nExamples:\n  svcops runs show 20261122T031500Z-3fa9c1\n  svcops runs show 20261122T031500Z-3fa9c1 --html /tmp/run.html\n  svcops runs show 20261122T031500Z-3fa9c1 --open\n  svcops runs show 20261122T031500Z-3fa9c1 --json'

const RESUME_HELP = `
Steps the journal records as finished are not repeated; host steps are idempotent (stopping a
stopped service, installing an installed version). A run that was rolling back continues its
rollback.

Examples:
  svcops resume 20261122T031500Z-3fa9c1 --dry-run
  svcops resume 20261122T031500Z-3fa9c1
  svcops resume 20261122T031500Z-3fa9c1 --rollback --json
  svcops resume 20261122T031500Z-3fa9c1 --retry          # the seed's "restore backup and retry"`

/** Registers `runs list|show|watch|promote|abort` and `resume`. */
export function register(program: Command): void {
  const runs = program.command('runs').description('Upgrade and rollback runs recorded in .svcops/runs.')
  registerRunsList(runs)
  registerRunsShow(runs)
  registerRunsFollow(runs)
  registerResume(program)
}

function registerRunsList(runs: Command): void {
  runs
    .command('list')
    .description('List runs, newest first, as a table: id, environment, system, kind, target, outcome, duration, longest downtime.')
    .addOption(new Option('--kind <kind>', 'only runs of this kind').choices(['upgrade', 'rollback', 'backup', 'verify']))
    .addOption(new Option('--system <system>', 'only runs of this system').choices(['recording', 'live']))
    .addHelpText(
      'after',
      '\nExamples:\n  svcops runs list\n  svcops runs list --env prod --kind backup\n  svcops runs list --system live\n  svcops runs list --json',
    )
    .action(async (flags: { kind?: string; system?: string }, command: Command) => {
      await useRunSystems()
      const { buildReport } = await import('../reports/report.ts')
      const { renderRunsTable } = await import('../reports/report-text.ts')
      const { longestDowntime, runDurationMs } = await import('../reports/timeline.ts')
      const reports = (await openListedRuns(command))
        .filter(({ run }) => (!flags.kind || run.kind === flags.kind) && (!flags.system || run.system === flags.system))
        .map((j) => buildReport(j))
      const list = reports.map((r) => ({ ...r.run, durationMs: runDurationMs(r) ?? null, longestDowntime: longestDowntime(r) ?? null }))
      printResult(command, { ok: true, runs: list }, () => (list.length ? renderRunsTable(reports) : 'No runs yet.'))
    })
}

/**
 * The journals `runs list` shows: with --env (or --stack-file), the environment's runs wherever they
 * are kept (`listEnvironmentRuns`); without, the local folder's. Each shows its holder's state.
 */
async function openListedRuns(command: Command): Promise<Journal[]> {
  const { env: name, stackFile } = globals(command)
  const { Journal, listRuns } = await import('../runs/journal.ts')
  const { presentRun } = await import('../runs/run-presence.ts')
  const local = (id: string): Journal => {
    const journal = Journal.open(id)
    journal.run = presentRun(journal.run)
    return journal
  }
  if (!name && !stackFile) return listRuns().map((r) => local(r.id))
  const env = await environmentOf(command).catch((error: unknown) => {
    // No stack file here: the local copies of that environment's runs are all there is to show.
    events.warn(`${errorMessage(error)} Showing the local copies of the runs only.`)
    return undefined
  })
  if (!env)
    return listRuns()
      .filter((r) => r.environment === name)
      .map((r) => local(r.id))
  const { listEnvironmentRuns, readEnvironmentRun } = await import('../runs/run-listing.ts')
  const { runsDir } = await import('../runs/journal.ts')
  const journals: Journal[] = []
  for (const record of await listEnvironmentRuns(env)) {
    if (existsSync(join(runsDir(), record.id, 'run.json'))) {
      const journal = Journal.open(record.id)
      journal.run = record
      journals.push(journal)
      continue
    }
    const stored = await readEnvironmentRun(env, record.id)
    journals.push(Journal.inMemory(record, undefined, stored?.entries ?? []))
  }
  return journals
}

/** Run `id`'s journal: the local folder's, else (with --env or --stack-file) the environment's, read into memory. */
async function openShownRun(id: string, command: Command): Promise<Journal> {
  const { Journal, runsDir } = await import('../runs/journal.ts')
  const { presentRun } = await import('../runs/run-presence.ts')
  const { env: name, stackFile } = globals(command)
  if (existsSync(join(runsDir(), id, 'run.json')) || (!name && !stackFile)) {
    const journal = Journal.open(id)
    journal.run = presentRun(journal.run)
    return journal
  }
  const env = await environmentOf(command)
  const { listEnvironmentRuns, readEnvironmentRun } = await import('../runs/run-listing.ts')
  const stored = await readEnvironmentRun(env, id)
  if (!stored)
    throw new BadInputError(
      `There is no run '${id}' in ${runsDir()} nor in environment '${env.name}'.`,
      `List the runs with: svcops runs list --env ${env.name}`,
    )
  const record = (await listEnvironmentRuns(env)).find((r) => r.id === id) ?? stored.record
  return Journal.inMemory(record, undefined, stored.entries)
}

function registerRunsShow(runs: Command): void {
  runs
    .command('show')
    .description('Show one run: the outcome in one sentence and its timeline, one line per host; the report on request.')
    .argument('<id>', 'run id (see svcops runs list)')
    .option('--open', "open the run's report.html in the desktop's browser (xdg-open)")
    .option('--html <path>', "write the run's report.html to <path>")
    .option('--markdown', 'print report.md instead of the timeline')
    .addHelpText('after', SHOW_HELP)
    .action(showRunFolder)
}

async function showRunFolder(id: string, flags: { open?: boolean; html?: string; markdown?: boolean }, command: Command): Promise<void> {
  await useRunSystems()
  const { buildReport, renderMarkdown } = await import('../reports/report.ts')
  const { redactDeep } = await import('../core/redact.ts')
  const { renderHtml } = await import('../reports/report-html.ts')
  const { renderRunText } = await import('../reports/report-text.ts')
  const { outcomeSentence } = await import('../reports/timeline.ts')
  const journal = await openShownRun(id, command)
  const report = redactDeep(buildReport(journal))
  let html: { file: string; opened: boolean } | undefined
  if (flags.html || flags.open) {
    const { writeFileAtomic } = await import('../core/atomic-write.ts')
    const file = flags.html ?? journal.file('report.html')
    writeFileAtomic(file, renderHtml(report))
    html = { file, opened: flags.open ? await openInBrowser(file) : false }
    if (!globals(command).json) process.stderr.write(`Report: ${file}\n`)
  }
  const columns = Math.max(30, Math.min(100, (process.stdout.columns || 100) - 40))
  printResult(command, { ok: true, ...report, ...(html ? { html } : {}) }, () =>
    flags.markdown ? renderMarkdown(report) : renderRunText(report, outcomeSentence(report), columns),
  )
}

/**
 * Opens `file` in the desktop's browser (xdg-open); false, and why on stderr with the path to open
 * elsewhere, where there is no display (a server over SSH) or no opener.
 */
async function openInBrowser(file: string): Promise<boolean> {
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) {
    process.stderr.write(
      `--open: no display here (neither DISPLAY nor WAYLAND_DISPLAY is set); open ${file} in a browser on a machine with one.\n`,
    )
    return false
  }
  const { spawn } = await import('node:child_process')
  return new Promise((resolve) => {
    const child = spawn('xdg-open', [file], { detached: true, stdio: 'ignore' })
    child.once('error', (error) => {
      process.stderr.write(
        `--open: xdg-open could not be started (${error.message}; Debian package xdg-utils); open ${file} in a browser.\n`,
      )
      resolve(false)
    })
    child.once('spawn', () => {
      child.unref()
      resolve(true)
    })
  })
}

function registerResume(program: Command): void {
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
    // Scripts pass --yes to every command that changes an environment; resume asks nothing (the run was confirmed when it started).
    .option('-y, --yes', 'accepted like every command that changes an environment; resume asks no question')
    .addOption(
      new Option(
        '--break-lock',
        "take the environment's lock another run holds; refused while that run is unfinished unless --force (logged)",
      ),
    )
    .option('--force', "with --break-lock: break the lock even though the holder's run did not finish (that run is then left as it is)")
    .option('--metrics-file <path>', METRICS_FILE_HELP)
    .addHelpText('after', RESUME_HELP)
    .action(resume)
}

/** `svcops resume ID`: the run's own system continues it. */
async function resume(id: string, flags: ResumeFlags, command: Command): Promise<void> {
  await copyRunIfElsewhere(id, command)
  const options = {
    ...(flags.rollback ? { rollback: true } : {}),
    ...(flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}),
  }
  const { renderRunPlan } = await import('../runs/run-actions.ts')
  const live = await import('../../playbooks/upgrade-live.ts')
  if (live.isLiveRun(id)) {
    if (flags.retry)
      throw new BadInputError(
        `--retry: run ${id} is an upgrade of the live production system; expected a run of the recording service (a live upgrade is started again with svcops upgrade live).`,
      )
    if (flags.dryRun) {
      const plan = await live.planLiveResume(id, { rollback: flags.rollback ?? false })
      printPlan(command, plan, () => renderRunPlan(live.live, plan), { spread: false })
      return
    }
    await showRun(command, () => live.resumeLiveSystem(id, options))
    return
  }
  await refuseBackupRun(id)
  const play = await import('../../playbooks/upgrade.ts')
  if (flags.retry && !flags.dryRun) return retry(id, flags, command)
  if (flags.dryRun) {
    const plan = await play.planRecordingResume(id, { rollback: flags.rollback ?? false })
    printPlan(command, plan, () => renderRunPlan(play.recording, plan), { spread: false })
    return
  }
  await showRun(command, () => play.resumeRecordingService(id, options))
}

/**
 * A backup run is not continued: the upgrade playbook would take it for an upgrade, and a new backup
 * is what an interrupted one is for (the store lists only complete backups: the manifest is last).
 */
async function refuseBackupRun(id: string): Promise<void> {
  const { Journal } = await import('../runs/journal.ts')
  const run = Journal.open(id).run
  if (run.kind === 'backup')
    throw new BadInputError(
      `run ${id}: a backup run (${run.phase}); expected an upgrade or rollback run, since a backup is not resumed but taken again.`,
      `Take a new one: svcops backup run --env ${run.environment}`,
    )
}

/**
 * A run started on another machine is kept in its environment: with --env or --stack-file, it is
 * copied into the local folder first (its stack file being the one given here), then continued.
 */
async function copyRunIfElsewhere(id: string, command: Command): Promise<void> {
  const { env: name, stackFile } = globals(command)
  const { runsDir } = await import('../runs/journal.ts')
  if (existsSync(join(runsDir(), id, 'run.json')) || (!name && !stackFile)) return
  await useRunSystems()
  const { copyRunFromEnvironment } = await import('../runs/run-listing.ts')
  await copyRunFromEnvironment(await environmentOf(command), id)
}

/** `svcops resume ID --retry`: a new run to the same target, reusing the rolled-back run's verified backup. */
async function retry(id: string, flags: ResumeFlags, command: Command): Promise<void> {
  const play = await import('../../playbooks/upgrade.ts')
  await useRunSystems(flags.metricsFile ? { metricsFile: flags.metricsFile } : {})
  const stop = await progress(command)
  try {
    const outcome = await play.retryRecordingService(id, flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {})
    printResult(
      command,
      { ok: true, runId: outcome.runId, retryOf: id, phase: outcome.phase, report: outcome.report },
      () => `${closingLine(outcome)} (A retry of run ${id}.)`,
    )
  } catch (error) {
    throw endingWithClosingLine(error)
  } finally {
    stop()
  }
}
