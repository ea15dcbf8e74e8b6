/**
 * What a run tells whoever listens: that it started (or was resumed), and that it ended with its
 * report written — or was refused before anything changed, and leaves no run behind. The engine emits these and waits for every observer; the observers — webhooks
 * (src/notify), the environment's metrics (src/metrics) — are registered at the edge (the CLI), as
 * a controller watches events rather than being called by what it watches. An observer's failure
 * is a warning: it never fails the run.
 */
import { errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { RunReport } from '../reports/report-types.ts'
import type { Journal } from './journal.ts'

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
