/**
 * How the commands that run playbooks show them: live progress on stderr (plain lines off a
 * terminal, nothing with --json unless --verbose), the outcome of a run (its report with --json),
 * and a dry run's plan. Each such command wires the systems and the observers of runs first
 * (run-systems.ts).
 */
import type { Command } from 'commander'
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { RunPlan } from '../runs/run-system.ts'
import { globals, printResult } from './context.ts'
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
      human ? () => human(outcome) : `Run ${outcome.runId}: ${outcome.phase}.`,
    )
  } finally {
    stop()
  }
}

/** Prints a dry run: the plan's fields at the top of the JSON (`spread`) or under `plan`, and the system's text. */
export function printPlan(command: Command, plan: RunPlan, text: () => string, options: { spread: boolean }): void {
  printResult(command, options.spread ? { ok: true, dryRun: true, ...plan } : { ok: true, dryRun: true, plan }, text)
}
