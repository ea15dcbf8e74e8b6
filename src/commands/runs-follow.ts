/**
 * Following and steering a run from another terminal or machine: `svcops runs watch ID` (its steps
 * as they are journaled, then its last line; exits as the run ended), `svcops runs promote ID` and
 * `svcops runs abort ID` (a run waiting after its canary goes on, or rolls back). Options and help
 * only; src/runs/run-follow.ts and run-promotion.ts do the work.
 */
import type { Command } from 'commander'
import type { Environment } from '../config/schema.ts'
import { formatDuration } from '../core/events.ts'
import { redactDeep, redact } from '../core/redact.ts'
import { sanitizeLine, stringifyForTerminal } from '../core/sanitize.ts'
import type { JournalEntry } from '../runs/journal.ts'
import type { RunRecord } from '../runs/run-record.ts'
import { environmentOf, globals, printResult, setResultExitCode } from './context.ts'
import { runSystems } from './run-systems.ts'

const WATCH_HELP = `
Reads the run's journal where it is kept: its folder here while this machine runs it, else (with
--env or --stack-file) the copy kept with the environment, which every machine reaches. Prints each
step as it is journaled and, once the run ends, its last line. Ctrl-C stops watching, not the run.
Exit codes: the run's own: 0 succeeded, 1 failed, 4 failed and rolled back, 130 interrupted
            (resume it with svcops resume ID); 2 no such run.

Examples:
  svcops runs watch 20261122T031500Z-3fa9c1
  svcops runs watch 20261122T031500Z-3fa9c1 --env prod          # a run started on another machine
  svcops runs watch 20261122T031500Z-3fa9c1 --json | jq -c .    # one JSON object a line`

/** Who decides, for both commands' help (docs/operations.md, "Who may decide"). */
const WHO_DECIDES = `The decision records who took it as its store authenticated them (the database role of the
stack's database.user; in the run folder, this machine's account) and the run's environment. The
waiting run refuses, saying why, a decision taken before it paused or for another environment.
Who may decide: whoever may INSERT into svcops.run_decisions and, when the stack names a run key
(svcops:runs.key, or the one derived from the backup key), holds it (docs/operations.md).`

const DECISION_HELP = {
  promote: `
For a run started with --pause-after-canary that waits after its verified canary: it goes on with
its next batches. Kept in the run's folder and with its environment (use --env for a run started
on another machine); a run killed while it waited finds it when resumed.
${WHO_DECIDES}

Examples:
  svcops runs promote 20261122T031500Z-3fa9c1
  svcops runs promote 20261122T031500Z-3fa9c1 --env prod`,
  abort: `
For a run started with --pause-after-canary that waits after its verified canary: it rolls back what
it changed, as a failure after the canary would (the run then ends with exit 4). Kept in the run's
folder and with its environment (use --env for a run started on another machine).
${WHO_DECIDES}

Examples:
  svcops runs abort 20261122T031500Z-3fa9c1
  svcops runs abort 20261122T031500Z-3fa9c1 --env prod`,
} as const

/** Registers `runs watch`, `runs promote` and `runs abort` under `runs`. */
export function registerRunsFollow(runs: Command): void {
  runs
    .command('watch')
    .description('Follow a run live, from this or another terminal or machine: each step as it is journaled, then its last line.')
    .argument('<id>', 'run id (see svcops runs list)')
    .addHelpText('after', WATCH_HELP)
    .action(watchRun)
  for (const decision of ['promote', 'abort'] as const)
    runs
      .command(decision)
      .description(
        decision === 'promote'
          ? 'Let a run waiting after its canary (--pause-after-canary) go on.'
          : 'Make a run waiting after its canary (--pause-after-canary) roll back what it changed.',
      )
      .argument('<id>', 'run id (see svcops runs list)')
      .option('--dry-run', 'check the run as the decision would, and show where it would be kept; keep nothing')
      .option(
        '--trust-unsigned-run',
        "decide for a run read without a MAC from an environment whose stack names a run key (as resume's flag); know where it comes from",
      )
      .addHelpText('after', DECISION_HELP[decision])
      .action((id: string, flags: { dryRun?: boolean; trustUnsignedRun?: boolean }, command: Command) =>
        flags.dryRun
          ? planDecide(id, decision, command, flags.trustUnsignedRun ?? false)
          : decide(id, decision, command, flags.trustUnsignedRun ?? false),
      )
}

/** The environment named by --env or --stack-file, else undefined (the local folder only). */
async function optionalEnvironment(command: Command): Promise<Environment | undefined> {
  const { env, stackFile } = globals(command)
  return env || stackFile ? environmentOf(command) : undefined
}

async function watchRun(id: string, _flags: object, command: Command): Promise<void> {
  const systems = await runSystems()
  const { systemIn } = await import('../runs/system-description.ts')
  const { followRun, runSourceOf, exitCodeOfRun } = await import('../runs/run-follow.ts')
  const { Journal, runsDir } = await import('../runs/journal.ts')
  const { buildReport } = await import('../reports/report.ts')
  const { renderClosingLine } = await import('../reports/report-text.ts')
  const json = globals(command).json === true
  const env = await optionalEnvironment(command)
  const source = runSourceOf(id, env, systems)
  const say = (line: unknown) =>
    process.stdout.write(json ? `${stringifyForTerminal(redactDeep(line))}\n` : `${sanitizeLine(redact(String(line)))}\n`)
  try {
    const end = await followRun(
      source,
      {
        entry: (e) => say(json ? { kind: 'step', ...e } : entryLine(e)),
        paused: (r) => say(json ? { kind: 'paused', runId: r.id, pausedAt: r.pausedAt } : pausedLine(r)),
      },
      { intervalMs: source.local ? 500 : 2000 },
    )
    const report = buildReport(Journal.inMemory(end.record, undefined, end.entries), systemIn(systems, end.record.system))
    const where = source.local ? `${runsDir()}/${id}/report.md` : `svcops runs show ${id}${env ? ` --env ${env.name}` : ''}`
    const code = exitCodeOfRun(end.record)
    const last = renderClosingLine(report, where)
    say(json ? { kind: 'end', ok: code === 0, runId: id, phase: end.record.phase, exitCode: code, summary: last } : last)
    if (!json) say(`(exit ${code}: ${EXIT_MEANING[code] ?? 'failed'})`)
    if (code) setResultExitCode(code)
  } finally {
    await source.close()
  }
}

const EXIT_MEANING: Readonly<Record<number, string>> = {
  0: 'the run succeeded',
  1: 'the run failed',
  4: 'the run failed and was rolled back',
  130: 'the run was interrupted; continue it with svcops resume ID or roll it back with svcops resume ID --rollback',
}

const MARK: Readonly<Record<JournalEntry['status'], string>> = { start: '…', ok: '✓', failed: '✗', skipped: '·' }

/** One journal entry as a line: "03:15:02  ✓ [rec-1] stop (1.2 s): stopped svc-recording". */
function entryLine(e: JournalEntry): string {
  const took = e.durationMs !== undefined ? ` (${formatDuration(e.durationMs)})` : ''
  const what = [...(e.changed ?? []), ...(e.detail ? [e.detail] : [])].join('; ')
  return `${e.time.slice(11, 19)}  ${MARK[e.status]} ${e.host ? `[${e.host}] ` : ''}${e.step}${took}${what ? `: ${what}` : ''}`
}

function pausedLine(r: RunRecord): string {
  return `Paused after the canary since ${r.pausedAt?.slice(11, 19) ?? '?'}; go on: svcops runs promote ${r.id}   roll back: svcops runs abort ${r.id}`
}

async function decide(id: string, decision: 'promote' | 'abort', command: Command, trustUnsigned: boolean): Promise<void> {
  const systems = await runSystems()
  const { decideRun } = await import('../runs/run-promotion.ts')
  const kept = await decideRun(id, decision, await optionalEnvironment(command), { systems, trustUnsigned })
  const done = decision === 'promote' ? 'promoted; it goes on after its canary' : 'aborted; it rolls back what it changed'
  const later = kept.holderGone ? ` Its holder is gone: the decision counts when it is resumed (svcops resume ${id}).` : ''
  const who = kept.decision.identity ? `${kept.decision.by} (${kept.decision.identity})` : kept.decision.by
  printResult(
    command,
    { ok: true, runId: id, ...kept },
    `Run ${id} ${done} (by ${who}, kept in ${kept.kept.join(' and ')}).${later} Follow it: svcops runs watch ${id}`,
  )
}

async function planDecide(id: string, decision: 'promote' | 'abort', command: Command, trustUnsigned: boolean): Promise<void> {
  const systems = await runSystems()
  const { planDecision } = await import('../runs/run-promotion.ts')
  const plan = await planDecision(id, decision, await optionalEnvironment(command), { systems, trustUnsigned })
  const later = plan.holderGone ? ` Its holder is gone: the decision would count when it is resumed (svcops resume ${id}).` : ''
  printResult(
    command,
    { ok: true, dryRun: true, ...plan },
    [
      `Dry run: ${decision} run ${id} (nothing will be kept).`,
      ...plan.wouldKeep.map((w) => `  keep the decision in ${w}`),
      `  then the run: ${plan.then}.${later}`,
    ].join('\n'),
  )
}
