/**
 * What a run's end leaves, as data: its report (its record, its system's view, each target's
 * downtime, the timeline, the sections its system contributes: report-contribution.ts).
 * The engine knows these shapes only; src/reports builds, writes and renders the report, as the
 * run-end writer the edge registers (run-events.ts), so the engine imports nothing of it.
 */
import type { JournalEntry } from './journal.ts'
import type { RunRecord } from './run-record.ts'
import type { RunView } from './system-description.ts'

export interface HostDowntime {
  host: string
  /** Start of the first stop of this host. */
  stoppedAt?: string
  /** End of the last verification of this host (upgrade or rollback). */
  verifiedAt?: string
  downtimeMs?: number
  /** Version the host ended on, per the journal. */
  endedOn?: string
}

/** What a failed run's report says first. */
export interface FailureSummary {
  /** The step that failed and its message. */
  what: string
  /** The host or component it failed on, when it failed on one. */
  where?: string
  /** The target's status as read after the failure ("exited 1", "RUNNING"...). */
  status?: string
  /** The target's last log lines, oldest first (empty: none could be read, and `logsNote` says why). */
  logs: string[]
  /** Why there are no log lines, when there are none. */
  logsNote?: string
  /** The doctor's first finding on that target, in one sentence with its fix. */
  finding?: string
  /** How many checks the doctor made there, when it made any (none found: it says so). */
  doctorChecks?: number
  /** The exact command to run next. */
  next: string
}

/**
 * A run's report: what every run has — its record, its system's view of it (targets, batches,
 * window), each target's downtime, the timeline — and, under their keys, the sections its system
 * contributes (report-section.ts): the recording service's `rollback`, `recreated`, `configReviews`,
 * `stackFile`; the doctor's `diagnoses`.
 */
export interface RunReport {
  run: RunRecord
  view: RunView
  downtime: HostDowntime[]
  timeline: JournalEntry[]
  /** The copy of a file the run left in its run folder when it ended (the stack file on Kubernetes), made from `file`. */
  record?: { file: string; copy: string }
  /** What the system's sections add to the outcome sentence of a rolled-back run: " (database restored)". */
  outcomeNote?: string
  /** What a failed run's report says first (failure-summary.ts). */
  failure?: FailureSummary
  [section: string]: unknown
}
