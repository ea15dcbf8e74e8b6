/**
 * Whether a run's holder is still there. A record says `running` (or `rolling-back`) until its
 * process writes the end; a process killed hard (SIGKILL, a lost machine, a closed terminal's
 * second signal) never does. Such a run is shown `interrupted` — never `running` — so a person
 * reads that it waits for `svcops resume ID [--rollback]`. Its holder is gone when its pid is dead
 * on its own machine, or when the environment's lock no longer names it as a live holder.
 */
import { hostname } from 'node:os'
import { isAlive } from '../core/process.ts'
import type { RunRecord } from './run-record.ts'

/** What the environment's lock says of a run, when it was asked: held by a live session, or not. */
export type LockState = 'held' | 'not-held' | 'unknown'

/** True when the run's holder is this machine (its `user@machine`). */
export function heldHere(run: Pick<RunRecord, 'holder'>): boolean {
  return run.holder.slice(run.holder.lastIndexOf('@') + 1) === hostname()
}

/**
 * The run as a person should see it: an unfinished `running`/`rolling-back` run whose holder is
 * gone becomes `interrupted` (with the phase it was in); anything else as recorded. `lock` is what
 * the environment's lock says of it, for a holder on another machine.
 */
export function presentRun<R extends RunRecord>(run: R, lock: LockState = 'unknown'): R {
  if (run.phase !== 'running' && run.phase !== 'rolling-back') return run
  const gone = heldHere(run) ? !isAlive(run.pid) : lock === 'not-held'
  return gone ? { ...run, phase: 'interrupted', interruptedIn: run.phase } : run
}
