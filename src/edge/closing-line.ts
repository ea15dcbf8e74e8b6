/**
 * The last line of a run, the same from both entries: its outcome, what changed, the downtime and
 * where the report is (src/reports/report-text.ts), also after a failure. A module of its own
 * because it loads the journal and the reports, which command-io.ts (loaded by the CLI at start-up)
 * imports only when a run is shown.
 */
import { join } from 'node:path'
import { SvcopsError, withHint } from '../core/errors.ts'
import type { RunReport } from '../reports/report-types.ts'
import { renderClosingLine } from '../reports/report-text.ts'
import { runsDir } from '../runs/journal.ts'

/** A run as a command starts it: its id, how it ended, its report. */
export interface ShownRun {
  runId: string
  phase: string
  report: unknown
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
