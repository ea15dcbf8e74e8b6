/**
 * The first lines of a failed run's report, for the on-call engineer who has 30 seconds: what
 * failed, where, that host's or component's status and last log lines (the seed's step 5: "check
 * the status and the last log lines"), the doctor's finding if it made one, and the exact command
 * to run next. `svcops runs show`, report.md and report.html open with them. Built from the journal
 * alone: the failed step's entry, and the diagnosis its system journaled for that target.
 */
import type { JournalEntry } from '../runs/journal.ts'
import { Phase } from '../runs/step.ts'
import type { RunRecord } from '../runs/run-record.ts'
import type { FailureSummary, RunReport } from './report-types.ts'
import { splitStepName } from './timeline.ts'

export type { FailureSummary } from './report-types.ts'

/** How many log lines a failure's summary shows: enough to see the error, few enough to read at once. */
export const LOG_LINES_SHOWN = 10

const FAILED_PHASES: ReadonlySet<RunRecord['phase']> = new Set(['failed', 'rolled-back', 'rolling-back', 'rollback-failed'])

/** The exact next command of a run in `phase` when its system names none. */
function defaultNext(run: RunRecord): string {
  if (run.phase === 'failed') return `svcops resume ${run.id} --rollback`
  if (run.phase === 'rolling-back' || run.phase === 'rollback-failed') return `svcops resume ${run.id}`
  return `svcops runs show ${run.id} --markdown`
}

/** The step entry that made the run fail: its first failure on the way up, else the first at all. */
function failedEntryOf(entries: JournalEntry[]): JournalEntry | undefined {
  const failed = entries.filter((e) => e.status === 'failed')
  return failed.find((e) => splitStepName(e.step).phase === Phase.run) ?? failed[0]
}

/** The diagnosis journaled for `host` (or the run's own, before any stop), newest last. */
function diagnosisOf(entries: JournalEntry[], host: string | undefined): JournalEntry | undefined {
  return entries.filter((e) => e.report === 'diagnosis' && e.status === 'ok' && e.data && (host ? e.host === host : true)).at(-1)
}

function firstFinding(diagnosis: JournalEntry | undefined, host: string | undefined): string | undefined {
  const findings = (diagnosis?.data?.findings as { host?: string; cause?: string; summary?: string; remedy?: string }[] | undefined) ?? []
  const f = findings.find((x) => !host || !x.host || x.host === host) ?? findings[0]
  if (!f) return undefined
  return `${f.cause ?? 'finding'}${f.host ? ` on ${f.host}` : ''}: ${f.summary ?? ''}${f.remedy ? ` Fix: ${f.remedy}` : ''}`.trim()
}

/**
 * The summary of a failed run (undefined for a run that did not fail). `next`: the system's own
 * next command for the run, when it has one (after a rolled-back upgrade: find the cause, retry).
 */
export function summarizeFailure(report: RunReport, next?: (run: RunRecord) => string | undefined): FailureSummary | undefined {
  const { run, timeline: entries } = report
  if (!FAILED_PHASES.has(run.phase) || (run.phase === 'rolled-back' && run.rollbackRequested)) return undefined
  const failed = failedEntryOf(entries)
  const where = failed?.host
  const diagnosis = diagnosisOf(entries, where)
  const logs = Array.isArray(diagnosis?.data?.logs) ? (diagnosis.data.logs as unknown[]).map(String).slice(-LOG_LINES_SHOWN) : []
  const summary: FailureSummary = {
    what: failed ? `${failed.step} failed${failed.detail ? `: ${failed.detail}` : ''}` : (run.cause ?? 'the run failed'),
    logs,
    next: next?.(run) ?? defaultNext(run),
  }
  if (where) summary.where = where
  if (typeof diagnosis?.data?.status === 'string') summary.status = diagnosis.data.status
  if (!logs.length)
    summary.logsNote =
      typeof diagnosis?.data?.logsError === 'string'
        ? `its log lines could not be read: ${diagnosis.data.logsError}`
        : where
          ? `no log lines were recorded for ${where}`
          : 'the run failed before any host or component was touched'
  const finding = firstFinding(diagnosis, where)
  if (finding) summary.finding = finding
  if (Array.isArray(diagnosis?.data?.checks)) summary.doctorChecks = diagnosis.data.checks.length
  return summary
}

/** The summary as plain lines (the terminal and report.md): what, where, status, log lines, finding, next. */
export function renderFailureLines(s: FailureSummary): string[] {
  const lines = [`Failed: ${s.what}`]
  if (s.where) lines.push(`Where: ${s.where}${s.status ? ` (status: ${s.status})` : ''}`)
  if (s.logs.length) lines.push(`Last log lines${s.where ? ` of ${s.where}` : ''}:`, ...s.logs.map((l) => `  ${l}`))
  else if (s.logsNote) lines.push(`Log lines: ${s.logsNote}.`)
  if (s.finding) lines.push(`Doctor: ${s.finding}`)
  else if (s.doctorChecks !== undefined) lines.push(`Doctor: no known cause among its ${s.doctorChecks} checks.`)
  lines.push(`Next: ${s.next}`)
  return lines
}
