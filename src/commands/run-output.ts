/**
 * How the commands that run playbooks show them: live progress on stderr (plain lines off a
 * terminal, nothing with --json unless --verbose), the outcome of a run (its report with --json),
 * and a dry run's plan. Each such command wires the systems and the observers of runs first
 * (run-systems.ts).
 */
import type { Command } from 'commander'
import { BadInputError, SvcopsError, withHint } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { join } from 'node:path'
import type { RunReport } from '../reports/report-types.ts'
import { renderClosingLine } from '../reports/report-text.ts'
import type { PlanBlocker } from '../runs/engine.ts'
import { runsDir } from '../runs/journal.ts'
import type { RunPlan } from '../runs/run-system.ts'
import { globals, printResult, rememberedArgs, setResultExitCode } from './context.ts'
import { useRunSystems } from './run-systems.ts'

export const METRICS_FILE_HELP =
  "also write the environment's run metrics (Prometheus text) to this file, e.g. /var/lib/node_exporter/textfile/svcops.prom"

/** A run as a command starts it: its id, how it ended, its report. */
export interface ShownRun {
  runId: string
  phase: string
  report: unknown
}

/** How a run is shown: progress on stderr, its outcome (and report with --json) on stdout. */
export type ShowRun = (command: Command, run: () => Promise<ShownRun>, human?: (outcome: ShownRun) => string) => Promise<void>

/** `--batch`-like options: a whole number of at least 1, else bad input naming the flag. */
export function toInt(flag: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < 1)
      throw new BadInputError(`${flag}: '${value}' is not valid; expected a whole number of at least 1.`)
    return Number(value)
  }
}

/** Progress on stderr: live per-host lines on a terminal, plain lines otherwise, nothing with --json. */
export async function progress(command: Command): Promise<() => void> {
  const { json, verbose } = globals(command)
  if (json && !verbose) return () => undefined
  const { progressSink } = await import('../reports/progress.ts')
  return events.subscribe(progressSink(process.stderr, { verbose: verbose ?? false }))
}

/** Runs a playbook run (the systems and observers wired, `--metrics-file` honoured) with progress on stderr, and prints how it ended. */
export const showRun: ShowRun = async (command, run, human) => {
  await useRunSystems(command.opts<{ metricsFile?: string }>())
  const stop = await progress(command)
  try {
    const outcome = await run()
    printResult(
      command,
      { ok: true, runId: outcome.runId, phase: outcome.phase, report: outcome.report },
      human ? () => human(outcome) : () => closingLine(outcome),
    )
  } catch (error) {
    throw endingWithClosingLine(error)
  } finally {
    stop()
  }
}

/**
 * A run that ended in an error (failed, rolled back) ends with its closing line too: the error's
 * hint gets it, after the command to run next, in place of a bare "See the report: ...".
 */
export function endingWithClosingLine(error: unknown): unknown {
  if (!(error instanceof SvcopsError)) return error
  const { runId, phase, report } = error.facts as { runId?: unknown; phase?: unknown; report?: unknown }
  if (typeof runId !== 'string' || typeof phase !== 'string' || !report) return error
  const last = closingLine({ runId, phase, report })
  const keep = error.hint && !error.hint.startsWith('See the report:') ? `${error.hint}\n` : ''
  return withHint(error, `${keep}${last}`)
}

/** The run's last line from its report (downtime, what changed, where the report is), else its id and phase. */
export function closingLine(outcome: ShownRun): string {
  const report = outcome.report as RunReport | undefined
  if (!report?.run || !Array.isArray(report.downtime)) return `Run ${outcome.runId}: ${outcome.phase}.`
  return renderClosingLine(report, join(runsDir(), outcome.runId, 'report.md'))
}

/**
 * Prints a dry run: the plan's fields at the top of the JSON (`spread`) or under `plan`, the
 * system's text, and a closing summary (what would change, what blocks it, the exact command that
 * would go ahead). It exits as the real run would: the exit code of the first step that would
 * refuse (5 an open gate, 2 bad input, 1 what cannot be read), with `ok: false` and the blocking ids.
 */
export function printPlan(command: Command, plan: RunPlan, text: () => string, options: { spread: boolean }): void {
  const summary = summarizePlan(plan, goAheadCommand())
  const ok = summary.blockers.length === 0
  const head = { ok, dryRun: true, summary }
  printResult(command, options.spread ? { ...head, ...plan } : { ...head, plan }, () => `${text()}\n\n${renderPlanSummary(summary)}`)
  const first = summary.blockers[0]
  if (first) setResultExitCode(first.exitCode)
}

/** The closing lines of a dry run, as `--json` carries them too. */
export interface PlanSummary {
  /** The targets the run would change, and how. */
  changes: string
  /** What would stop the real run, in step order. */
  blockers: (PlanBlocker & { step: string; host?: string })[]
  /** The ids of what blocks it (gates to acknowledge), all of them. */
  blocking: string[]
  /** The exact command that would go ahead (with the `--ack` the gates need once handled). */
  command: string
}

function summarizePlan(plan: RunPlan, command: string): PlanSummary {
  const targets = [...new Set(plan.steps.flatMap((s) => (s.host ? [s.host] : [])))]
  const blockers = plan.steps.flatMap((s) => (s.blocked ? [{ step: s.step, ...(s.host ? { host: s.host } : {}), ...s.blocked }] : []))
  const blocking = [...new Set(blockers.flatMap((b) => b.ids ?? []))]
  const what = plan.what === 'upgrade' ? `to ${plan.target}` : `${plan.what} of run ${plan.runId ?? '?'}`
  const changes = targets.length
    ? `${targets.join(', ')} ${what} (${plan.steps.length} steps)`
    : `${what} (${plan.steps.length} steps, nothing on any single target)`
  return { changes, blockers, blocking, command: blocking.length ? withAck(command, blocking) : command }
}

function renderPlanSummary(s: PlanSummary): string {
  const lines = ['Summary of this dry run (nothing was changed):', `  would change: ${s.changes}`]
  if (!s.blockers.length) lines.push('  blocks it: nothing found', `  to go ahead: ${s.command}`)
  for (const b of s.blockers) lines.push(`  blocks it (exit ${b.exitCode}) at ${b.host ? `${b.host} ` : ''}${b.step}: ${b.reason}`)
  if (s.blockers.length) lines.push(`  once that is handled, go ahead with: ${s.command}`)
  return lines.join('\n')
}

/** The command line of this dry run without `--dry-run`, each argument quoted for a shell where it needs it. */
function goAheadCommand(): string {
  const args = rememberedArgs().filter((a) => a !== '--dry-run' && a !== '--json')
  return ['svcops', ...args.map(shellQuote)].join(' ')
}

function withAck(command: string, ids: string[]): string {
  return `${command} --ack ${ids.join(',')}`
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`
}
