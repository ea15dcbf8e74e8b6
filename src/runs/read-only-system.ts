/**
 * A run that only reads (`svcops verify recording|live`) as the engine runs it: one record, a
 * journal, a report and a line in `runs list`, started through the one run path (run-actions.ts)
 * like every run. It takes no lock of its environment, so it is never refused beside a running,
 * paused or interrupted upgrade (it says what it sees, mid-upgrade too), and it leaves no lock that
 * could refuse one. Its record stays in the local runs folder only: it writes nothing to the
 * environment, its store included. It is not resumed: an interrupted one is run again.
 */
import type { Environment } from '../config/schema.ts'
import type { Journal } from './journal.ts'
import type { HeldLock, Opened, Playbook } from './playbook.ts'
import type { RunKind, RunParams } from './run-record.ts'
import type { RunRequest, RunSystem } from './run-system.ts'
import type { SystemDescription } from './system-description.ts'

/** What a read-only run does, and how its context opens. */
export interface ReadOnlyJob<P extends RunParams, C> {
  kind: RunKind
  /** What the run does, in its first line: "verify every target of the recording service". */
  what: string
  /** The command that runs it again: "svcops verify recording". */
  again: string
  /** The run's params (its targets), from the environment. */
  params(env: Environment): P
  /** Its procedure (`kind`, `what` and the rest are filled in here). */
  procedure: Playbook<C, P>['procedure']
  /** Opens its context; the dry run opens the same. */
  open(env: Environment, journal: Journal<P>): Promise<Opened<C>>
}

/** The lock a read-only run holds: none. */
const NO_LOCK: HeldLock = { release: () => Promise.resolve() }

/** The playbook of a read-only run: its procedure; there is nothing to roll back and it is run again, not resumed. */
export function readOnlyPlaybook<P extends RunParams, C>(job: ReadOnlyJob<P, C>): Playbook<C, P> {
  return {
    kind: job.kind,
    what: () => job.what.charAt(0).toUpperCase() + job.what.slice(1),
    rollbackCommand: (run) => `svcops runs show ${run.id} (a ${job.kind} changes nothing; there is nothing to roll back)`,
    afterInterruption: () => `A ${job.kind} is not resumed; run it again: ${job.again}`,
    procedure: job.procedure,
  }
}

/** `description`'s system running `job`: no lock, the local runs folder only. */
export function readOnlySystem<P extends RunParams, C>(
  description: SystemDescription<P>,
  job: ReadOnlyJob<P, C>,
): RunSystem<P, RunRequest, C> {
  const playbook = readOnlyPlaybook(job)
  return {
    ...description,
    runStore: () => undefined, // the local runs folder only: a verify writes nothing to the environment
    newRun: (req) => ({ kind: job.kind, targetVersion: '', autoRollback: false, params: job.params(req.env) }),
    announce: (run, env) => `Run ${run.id}: ${job.what} (environment ${env.name}; it only reads and takes no lock).`,
    lock: () => Promise.resolve({ lock: NO_LOCK, takeOver: [] }),
    open: (env, journal) => job.open(env, journal),
    openToPlan: (env, journal) => job.open(env, journal),
    playbook: () => playbook,
    plan: {
      title: (plan) => `Dry run: ${job.what} in environment '${plan.environment}' (nothing will be changed).`,
      facts: () => ({}),
      lines: () => ['Lock: none (it only reads; never refused beside another run)'],
      continuation: () => ({ what: job.kind, unfinished: `it is run again, not resumed: ${job.again}`, more: [] }),
      nothingToUndo: `a ${job.kind} changes nothing; there is nothing to roll back`,
    },
  }
}
