/**
 * A run's system as its report reads it: the view of its targets and the facts and sections it
 * contributes — from the description its caller gives (the run's system, from the registry built at
 * the edge); a run without one gets no targets and no sections.
 */
import type { RunRecord } from '../runs/run-record.ts'
import type { RunView, SystemDescription } from '../runs/system-description.ts'
import type { ReportSection } from './report-section.ts'

/** What a report knows of a run's system: the view of its targets, and the sections it contributes. */
export interface ReportSystem {
  view(run: RunRecord): RunView
  facts(run: RunRecord): string[]
  sections: ReadonlyArray<ReportSection<never>>
  /** The system's next command after a failed run, if it has its own. */
  next(run: RunRecord): string | undefined
}

/** A system's description as a report reads it; a system not described gets no targets and no sections. */
export function reportSystemOf(run: RunRecord, system: SystemDescription | undefined): ReportSystem {
  if (!system)
    return { view: () => ({ targets: [], batches: [], previousVersions: {} }), facts: () => [], sections: [], next: () => undefined }
  return {
    view: (r) => system.view(r),
    facts: (r) => system.report.facts?.(r) ?? [],
    sections: system.report.sections,
    next: (r) => system.report.next?.(r),
  }
}
