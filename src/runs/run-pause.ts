/**
 * The wait after a verified canary (`--pause-after-canary`, Argo Rollouts' pause): the run journals
 * the `pause` step's start and marks its record `pausedAt` (what `runs show|list|watch` read, here
 * and, through the environment's copy, on every machine), keeps its lock, and looks for a person's
 * decision (run-decision.ts) every second. Promoted, the step ends `ok` and the rollout goes on;
 * aborted, it ends `failed` and the error it throws takes the failure policy's way back. A signal
 * stops the wait at once (it is a safe point): the step ends `skipped`, so a resume waits again.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { InterruptedError, OperationError, withFacts } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { interruptSignal } from '../core/lifecycle.ts'
import type { Journal } from './journal.ts'
import { DECISION_POLL_MS, type DecisionSource } from './run-decision.ts'
import { STEP_DEADLINE_MS } from './run-mirror.ts'

/** The journal's name of the wait. */
export const PAUSE_STEP = 'pause'

/** Waits for `svcops runs promote|abort ID`; returns when promoted, throws when aborted or interrupted. */
export async function waitForDecision(journal: Journal, decisions: DecisionSource, canary: string): Promise<void> {
  const id = journal.run.id
  const started = Date.now()
  journal.append({
    step: PAUSE_STEP,
    status: 'start',
    detail: `the canary (${canary}) is verified; waiting for svcops runs promote ${id} or svcops runs abort ${id}`,
  })
  journal.update({ pausedAt: new Date().toISOString() })
  events.emit({ kind: 'step', step: PAUSE_STEP, status: 'start' })
  events.info(
    `Run ${id} is paused after its canary (${canary}) and keeps its lock. Go on: svcops runs promote ${id}   Roll back: svcops runs abort ${id}`,
  )
  await journal.flushCopy(STEP_DEADLINE_MS)
  for (;;) {
    const signal = interruptSignal()
    if (signal) {
      const detail = `interrupted by ${signal} while waiting; a resume waits again`
      journal.append({ step: PAUSE_STEP, status: 'skipped', detail, durationMs: Date.now() - started })
      journal.update({ pausedAt: undefined })
      throw withFacts(new InterruptedError(`Interrupted by ${signal}.`), { signal })
    }
    const decision = await decisions.read()
    if (decision) {
      const durationMs = Date.now() - started
      const promoted = decision.decision === 'promote'
      const who = decision.identity ? `${decision.by} (${decision.identity})` : decision.by
      const detail = `${promoted ? 'promoted' : 'aborted'} by ${who} at ${decision.at}`
      journal.append({ step: PAUSE_STEP, status: promoted ? 'ok' : 'failed', detail, durationMs, data: { decision } })
      journal.update({ pausedAt: undefined })
      events.emit({ kind: 'step', step: PAUSE_STEP, status: promoted ? 'ok' : 'failed', detail, durationMs })
      await journal.flushCopy(STEP_DEADLINE_MS)
      if (promoted) return
      throw new OperationError(`Aborted after the canary by ${who} (svcops runs abort ${id}).`)
    }
    await sleep(DECISION_POLL_MS)
  }
}
