/**
 * What a system contributes to its runs' reports, as a contract the engine carries in a system's
 * description (system-description.ts) and src/reports renders: facts for the report's head and
 * sections, each built from the journal's entries.
 */
import type { JournalEntry } from './journal.ts'
import type { RunRecord } from './run-record.ts'

/** One section of a report. `V`: its value, kept in report.json under `key`. */
export interface ReportSection<V = unknown> {
  /** Its key in report.json (`rollback`, `configReviews`...). */
  readonly key: string
  /** Its value from the journal's entries and the record; undefined leaves it out. */
  build(entries: JournalEntry[], run: RunRecord): V | undefined
  /** A line of the report's head ("stack file: ... holds ..."), without its bullet. */
  headline?(value: V): string | undefined
  /**
   * Its part of report.md (a `## ...` section), or nothing. It is given the value with every string
   * made one line with its control characters escaped (names and log lines are data), unless
   * `multiline`: then the value keeps its lines and the section sanitizes each one itself.
   */
  markdown?(value: V): string[]
  /** Its markdown is given the value with its lines kept (a configuration diff). */
  readonly multiline?: boolean
  /** Its part of report.html: a title and an HTML body (every value escaped), or nothing. */
  html?(value: V): { title: string; body: string } | undefined
  /** Shown before the downtime table (the rollback's decision), else after it. */
  readonly beforeDowntime?: boolean
  /** What it adds to the outcome sentence of a rolled-back run: " (database restored)". */
  outcome?(value: V): string
}

/** What a system contributes to the reports of its runs. */
export interface ReportContribution {
  /** Facts of the run for the report's head, one sentence each without a bullet ("backup b-1 (verified before anything stopped)"). */
  facts?(run: RunRecord): string[]
  readonly sections: ReadonlyArray<ReportSection<never>>
  /** The exact command to run next after a failed run, when the system knows better than "roll it back" or "resume it". */
  next?(run: RunRecord): string | undefined
}
