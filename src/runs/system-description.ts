/**
 * What reports, notifications and metrics know of a system: its name, the schema of its runs'
 * params, its view of a run (targets, batches, window, versions before) and what it adds to a
 * report. Descriptions are made known at the edge (the CLI) or by the engine when it runs a system,
 * so that the report of any run can be built from its folder alone.
 */
import type { z } from 'zod'
import type { Environment } from '../config/schema.ts'
import type { ReportContribution } from './report-contribution.ts'
import type { RunParams, RunRecord } from './run-record.ts'
import type { RunStore } from './run-store.ts'

/** How a system calls what it acts on, in every view of its runs (data: report.json keeps it). */
export interface SystemWords {
  /** One target: "host", "component". */
  readonly target: string
  /** Several targets: "hosts", "components". */
  readonly targets: string
}

/** The words of a system that gave none. */
export const PLAIN_WORDS: SystemWords = { target: 'target', targets: 'targets' }

/** How the generic views (timeline, downtime, runs list, notifications) see a run of a system. */
export interface RunView {
  /** What the run acts on, in rollout order: hosts, components, a Deployment (the report's lanes). */
  targets: string[]
  /** The rollout's batches (`[[canary], [batch 1...]]`), when the run has them. */
  batches: string[][]
  /** End of the maintenance window, when the run has one. */
  windowEnd?: string
  /** The version each target ran before the run (what a rollback returns to). */
  previousVersions: Record<string, string>
  /** How the system calls its targets (absent: PLAIN_WORDS). */
  words?: SystemWords
  /** The label of each of `batches` ("canary", "batch 1"); absent: "group 1", "group 2"... */
  batchLabels?: string[]
}

/** What reports, notifications and metrics know of a system. */
export interface SystemDescription<P extends RunParams = RunParams> {
  /** Its name in records (`RunRecord.system`). */
  readonly name: string
  /** Its name in sentences: "the recording service". */
  readonly title: string
  /** Its params, checked when a run is continued. */
  readonly params: z.ZodType<P>
  view(run: RunRecord<P>): RunView
  /** What it adds to a run's report: facts and sections. */
  readonly report: ReportContribution
  /**
   * Where its runs are kept in environment `env` (the environment's own store, read from any
   * machine), or undefined when `env` has no such system. Opening connects to nothing.
   */
  runStore?(env: Environment): RunStore | undefined
}

const described = new Map<string, SystemDescription>()

/** Makes a system's description known to reports, notifications and metrics (the last one given for a name counts). */
export function describeSystem(description: SystemDescription): void {
  described.set(description.name, description)
}

/** Every system made known, in the order they were. */
export function describedSystems(): SystemDescription[] {
  return [...described.values()]
}

/**
 * Makes exactly `descriptions` known again, as `describedSystems()` returned them: what a caller
 * that made systems known in a process others go on using (a test file in a shared worker) does to
 * leave it as it found it.
 */
export function restoreDescribedSystems(descriptions: SystemDescription[]): void {
  described.clear()
  for (const d of descriptions) described.set(d.name, d)
}

/** The description of system `name`, if it was made known. */
export function describedSystem(name: string): SystemDescription | undefined {
  return described.get(name)
}
