/**
 * What reports, notifications and metrics know of a system: its name, the schema of its runs'
 * params, its view of a run (targets, batches, window, versions before) and what it adds to a
 * report. The edge (the CLI, a playbook's script) builds the list of descriptions (`Systems`) and
 * passes it to the readers of runs; the engine is given the description of the system it runs.
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

/**
 * The systems a process knows, built at the edge from each system's folder
 * (src/edge/system-folders.ts) and passed to whatever reads runs of any system: the listing of
 * an environment's runs (their stores), reports, metrics, decisions. Nothing fills it as a side
 * effect of an import.
 */
export type Systems = readonly SystemDescription[]

/** The description of system `name` among `systems`, if there is one. */
export function systemIn(systems: Systems, name: string): SystemDescription | undefined {
  return systems.find((s) => s.name === name)
}
