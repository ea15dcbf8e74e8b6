/** The shape of a run's report, apart from the code that builds and renders it (report.ts, report-html.ts, timeline.ts). */
import type { JournalEntry, RunRecord } from '../runs/journal.ts'

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

export interface RunReport {
  run: RunRecord
  downtime: HostDowntime[]
  timeline: JournalEntry[]
  configReviews: Array<{ host: string; review: unknown }>
  recreated: unknown[]
  /** The doctor's findings and checks (preflight, or a failed host before its rollback): why it failed. */
  diagnoses: Array<{ step: string; host?: string; failure?: string; findings: unknown[]; checks: unknown[] }>
  rollback?: { restore: boolean; reason: string; hosts: string[] }
  /** Kubernetes platform: what the stack file holds at the run's last check, and what the Deployment runs (the file is the record). */
  stackFile?: { file: string; key: string; version: string | null; deployment: string | null }
  /** Kubernetes platform: the copy of the stack file the run left in its run folder (`copy`), made from `file` at its end. */
  record?: { file: string; copy: string }
}

/** A doctor finding as the report shows it (src/doctor writes these into a step's data). */
export interface FindingView {
  cause: string
  host: string
  severity: string
  summary: string
  evidence: string[]
  remedy: string
}
/** One check the doctor made, as the report shows it. */
export interface CheckView {
  cause: string
  host: string
  status: string
  check: string
  detail: string
}
