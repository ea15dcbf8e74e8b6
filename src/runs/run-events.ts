/**
 * What a run tells whoever listens: that it started (or was resumed), and that it ended with its
 * report written — or was refused before anything changed, and leaves no run behind. The engine emits these and waits for every observer; the observers — webhooks
 * (src/notify), the environment's metrics (src/metrics) — are registered at the edge (the CLI), as
 * a controller watches events rather than being called by what it watches. An observer's failure
 * is a warning: it never fails the run.
 */
import { events } from '../core/events.ts'
import { OperationError, errorMessage } from '../core/errors.ts'
import type { Journal } from './journal.ts'
import type { RunReport } from './run-report.ts'
import type { SystemDescription } from './system-description.ts'

export type RunEvent =
  | {
      kind: 'run-started'
      journal: Journal
      resumed: boolean
      /** What the run acts on (hosts, components), for "on 3 host(s)". */
      targets: string[]
    }
  | { kind: 'run-ended'; journal: Journal; report: RunReport }
  /** Refused after it was told started (a check before anything changed): the run is then forgotten. */
  | { kind: 'run-refused'; journal: Journal; cause: string }

export type RunObserver = (event: RunEvent) => Promise<void> | void

const observers = new Set<RunObserver>()

/** Adds an observer of every run of this process; returns the function that removes it. */
export function observeRuns(observer: RunObserver): () => void {
  observers.add(observer)
  return () => observers.delete(observer)
}

/** Tells every observer, all at once, and waits for them; a failing one is a warning. */
export async function tellObservers(event: RunEvent): Promise<void> {
  await Promise.all(
    [...observers].map(async (observe) => {
      try {
        await observe(event)
      } catch (error) {
        events.warn(`An observer of run ${event.journal.run.id} failed: ${errorMessage(error)}`)
      }
    }),
  )
}

/**
 * Writes the report of a run that ended into its folder (report.json, .md, .html) and returns it:
 * src/reports' `writeReport`, which the edge registers (the CLI and the playbooks' scripts through
 * `useRunSystems`, the tests in their setup). The first of the run's end: the observers hear of the
 * end with the report written.
 */
export type RunEndWriter = (journal: Journal, system: SystemDescription | undefined) => RunReport

let endWriter: RunEndWriter | undefined

/** Makes `writer` the one that writes every run's report in this process; returns what puts the one before it back. */
export function writeRunEndsWith(writer: RunEndWriter): () => void {
  const before = endWriter
  endWriter = writer
  return () => {
    endWriter = before
  }
}

/** The run-end writer registered at the edge; a run starts only with one, so a run that acts always leaves its report. */
export function runEndWriter(): RunEndWriter {
  if (!endWriter)
    throw new OperationError(
      'No report writer is registered for the run (an entry point that starts runs wires it with useRunSystems); nothing was started.',
    )
  return endWriter
}
