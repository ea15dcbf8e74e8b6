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
import { environmentOf, globals, printResult, showProgress } from './context.ts'
import type { Environment } from '../config/schema.ts'
import type { Journal } from '../runs/journal.ts'
import { lockPolicyOf, type LockPolicy } from '../runs/lock-policy.ts'
import type { RunRecord } from '../runs/run-record.ts'
import type { Systems } from '../runs/system-description.ts'
import type { SystemActions } from '../../playbooks/lib/systems.ts'
import { TRUST_UNSIGNED_HELP } from '../../playbooks/lib/recording-commands.ts'
import { registerRunsFollow } from './runs-follow.ts'
import { runSystems, useRunSystems } from './run-systems.ts'
import { METRICS_FILE_HELP, printPlan, progress, showRun } from './run-output.ts'

interface ResumeFlags {
  rollback?: boolean
  retry?: boolean
  dryRun?: boolean
  breakLock?: boolean
  force?: boolean
  metricsFile?: string
  trustUnsignedRun?: boolean
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
    .addOption(
      new Option('--kind <kind>', 'only runs of this kind').choices([
        'upgrade',
        'rollback',
        'backup',
        'verify',
        'rehearse',
        'restore',
        'delete',
        'prune',
        'psk-rotate',
      ]),
    )
    .addOption(new Option('--system <system>', 'only runs of this system').choices(['recording', 'live']))
    .addHelpText(
      'after',
      '\nExamples:\n  svcops runs list\n  svcops runs list --env prod --kind backup\n  svcops runs list --system live\n  svcops runs list --json',
    )
    .action(async (flags: { kind?: string; system?: string }, command: Command) => {
      const systems = await runSystems()
      const { systemIn } = await import('../runs/system-description.ts')
      const { buildReport } = await import('../reports/report.ts')
      const { renderRunsTable } = await import('../reports/report-text.ts')
      const { longestDowntime, runDurationMs } = await import('../reports/timeline.ts')
      // Warnings (a store that cannot be read, a refused or unsigned record) on stderr, as a run's are.
      const stop = showProgress(command)
      const journals = await openListedRuns(command, systems).finally(stop)
      const reports = journals
        .filter(({ run }) => (!flags.kind || run.kind === flags.kind) && (!flags.system || run.system === flags.system))
        // A refused record's params are not read: its row is its core fields and "refused".
        .map((j) =>
          j.run.trust?.state === 'refused'
            ? { run: { ...j.run, params: {} }, view: { targets: [], batches: [], previousVersions: {} }, downtime: [], timeline: [] }
            : buildReport(j, systemIn(systems, j.run.system)),
        )
      const list = reports.map((r) => ({ ...r.run, durationMs: runDurationMs(r) ?? null, longestDowntime: longestDowntime(r) ?? null }))
      printResult(command, { ok: true, runs: list }, () => (list.length ? renderRunsTable(reports) : 'No runs yet.'))
    })
}

/**
 * The journals `runs list` shows: with --env (or --stack-file), the environment's runs wherever they
 * are kept (`listEnvironmentRuns`); without, the local folder's. Each shows its holder's state.
 */
async function openListedRuns(command: Command, systems: Systems): Promise<Journal[]> {
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
  for (const record of await listEnvironmentRuns(env, systems, { includeRefused: true })) {
    // A refused record is listed as refused, its sentence said; its journal is never read.
    if (record.trust && record.trust.state !== 'signed') events.warn(record.trust.sentence)
    if (record.trust?.state === 'refused') {
      journals.push(Journal.inMemory(record))
      continue
    }
    if (existsSync(join(runsDir(), record.id, 'run.json'))) {
      const journal = Journal.open(record.id)
      journal.run = record
      journals.push(journal)
      continue
    }
    const stored = await readEnvironmentRun(env, systems, record.id)
    journals.push(Journal.inMemory(record, undefined, stored?.entries ?? []))
  }
  return journals
}

/** Run `id`'s journal: the local folder's, else (with --env or --stack-file) the environment's, read into memory. */
async function openShownRun(id: string, command: Command, systems: Systems): Promise<Journal> {
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
  const stored = await readEnvironmentRun(env, systems, id)
  if (!stored)
    throw new BadInputError(
      `There is no run '${id}' in ${runsDir()} nor in environment '${env.name}'.`,
      `List the runs with: svcops runs list --env ${env.name}`,
    )
  if (stored.record.trust?.state === 'refused') return Journal.inMemory(stored.record)
  const record = (await listEnvironmentRuns(env, systems, { includeRefused: true })).find((r) => r.id === id) ?? stored.record
  return Journal.inMemory({ ...record, trust: stored.record.trust }, undefined, stored.entries)
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
  const systems = await runSystems()
  const { systemIn } = await import('../runs/system-description.ts')
  const { buildReport, renderMarkdown } = await import('../reports/report.ts')
  const { redactDeep } = await import('../core/redact.ts')
  const { renderHtml } = await import('../reports/report-html.ts')
  const { renderRunText } = await import('../reports/report-text.ts')
  const { outcomeSentence } = await import('../reports/timeline.ts')
  const stop = showProgress(command)
  const journal = await openShownRun(id, command, systems).finally(stop)
  const system = systemIn(systems, journal.run.system)
  const trust = journal.run.trust
  if (trust?.state === 'refused') {
    // Never followed, never rendered: the run is shown as refused, with the sentence that says why.
    printResult(command, { ok: true, runId: id, refused: trust.sentence }, () => `Run ${id}: refused. ${trust.sentence}`)
    return
  }
  if (trust?.state === 'unsigned') {
    const done = showProgress(command)
    events.warn(trust.sentence)
    done()
  }
  const report = redactDeep(shownOrSaid(id, () => buildReport(journal, system)))
  let html: { file: string; opened: boolean } | undefined
  if (flags.html || flags.open) {
    const { writeFileAtomic } = await import('../core/atomic-write.ts')
    const file = flags.html ?? journal.file('report.html')
    writeFileAtomic(file, renderHtml(report, system))
    html = { file, opened: flags.open ? await openInBrowser(file) : false }
    if (!globals(command).json) process.stderr.write(`Report: ${file}\n`)
  }
  const columns = Math.max(30, Math.min(100, (process.stdout.columns || 100) - 40))
  printResult(command, { ok: true, ...report, ...(html ? { html } : {}) }, () =>
    shownOrSaid(id, () => (flags.markdown ? renderMarkdown(report, system) : renderRunText(report, outcomeSentence(report), columns))),
  )
}

/**
 * Run `id`'s report or its text, made by `make`; a journal whose fields have types svcops never
 * writes (changed by something else) makes that fail, and is then said in one sentence rather than
 * crashing the view.
 */
function shownOrSaid<T>(id: string, make: () => T): T {
  try {
    return make()
  } catch (error) {
    throw new BadInputError(
      `Run ${id}: its journal could not be shown (${errorMessage(error)}); it holds a field svcops never writes, so it was changed by something else.`,
    )
  }
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
    .option('--trust-unsigned-run', TRUST_UNSIGNED_HELP)
    .option('--metrics-file <path>', METRICS_FILE_HELP)
    .addHelpText('after', RESUME_HELP)
    .action(resume)
}

/** `svcops resume ID`: the run's own system, looked up by the name its record gives, continues it. */
async function resume(id: string, flags: ResumeFlags, command: Command): Promise<void> {
  const lockPolicy = lockPolicyOf(flags) // bad input (--force alone) before the run is read
  const { journal, env } = await runToResume(id, flags, command)
  const given = env ? { env } : {}
  const options = { ...(flags.rollback ? { rollback: true } : {}), lockPolicy, ...given }
  const { systemByName } = await import('../../playbooks/lib/systems.ts')
  const entry = systemByName(journal.run.system)
  const system = await entry.load()
  if (flags.retry && !system.retry)
    throw new BadInputError(
      `--retry: run ${id} is an upgrade of ${entry.title}; expected a run of a system that retries its upgrades (the recording service), since ${entry.title} is started again with ${entry.startAgain}.`,
    )
  refuseBackupRun(journal.run)
  if (flags.retry && system.retry && !flags.dryRun) return retry(id, flags, command, { lockPolicy, ...given }, system.retry)
  if (flags.dryRun) {
    const plan = await system.planResume(id, { rollback: flags.rollback ?? false, ...given, journal })
    printPlan(command, plan, () => system.render(plan), { spread: false })
    return
  }
  await showRun(command, () => system.resume(id, options))
}

/**
 * A backup run (backup, restore, delete, prune) is not continued: the upgrade playbook would take it
 * for an upgrade, and running the command again is what an interrupted one is for (the store lists
 * only complete backups: the manifest is last; a restore is one transaction).
 */
function refuseBackupRun(run: RunRecord): void {
  if (run.kind === 'backup' || run.kind === 'restore' || run.kind === 'delete' || run.kind === 'prune')
    throw new BadInputError(
      `run ${run.id}: a ${run.kind} run (${run.phase}); expected an upgrade or rollback run, since a ${run.kind} is not resumed but ${run.kind === 'backup' ? 'taken' : 'run'} again.`,
      run.kind === 'backup' ? `Take a new one: svcops backup run --env ${run.environment}` : `Run svcops backup ${run.kind} again.`,
    )
}

/**
 * The run to resume: the local folder's; else, with --env or --stack-file, the environment's —
 * checked (run-mac.ts: refused, or unsigned without --trust-unsigned-run, it writes nothing here),
 * then copied into the local folder (its stack being the one given), or read into memory for
 * --dry-run. `env`: the stack given, the run's environment, when the run came from it.
 */
async function runToResume(id: string, flags: ResumeFlags, command: Command): Promise<{ journal: Journal; env?: Environment }> {
  const { env: name, stackFile } = globals(command)
  const { Journal, runsDir } = await import('../runs/journal.ts')
  if (existsSync(join(runsDir(), id, 'run.json')) || (!name && !stackFile)) return { journal: Journal.open(id) }
  const systems = await runSystems()
  const env = await environmentOf(command)
  const { openRunToContinue } = await import('../runs/run-listing.ts')
  const access = { dryRun: flags.dryRun ?? false, trustUnsigned: flags.trustUnsignedRun ?? false }
  // Neither here nor in the environment: the local folder's own sentence.
  return { journal: (await openRunToContinue(env, systems, id, access)) ?? Journal.open(id), env }
}

/** `svcops resume ID --retry`: a new run to the same target, reusing the rolled-back run's verified backup. */
async function retry(
  id: string,
  flags: ResumeFlags,
  command: Command,
  options: { lockPolicy: LockPolicy; env?: Environment },
  again: NonNullable<SystemActions['retry']>,
): Promise<void> {
  // The closing line reads reports and the journal (zod): loaded by a retry, not by `svcops --help`.
  const { closingLine, endingWithClosingLine } = await import('../edge/closing-line.ts')
  await useRunSystems(flags.metricsFile ? { metricsFile: flags.metricsFile } : {})
  const stop = await progress(command)
  try {
    const outcome = await again(id, options)
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
