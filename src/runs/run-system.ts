/**
 * A system as the engine runs it: what it adds to a run's record (`params`, checked by its own
 * schema), how a request becomes a run, how its environment is locked, how its context is opened
 * and closed, which playbook a run follows, and how its dry run and its report read. The engine
 * (run-actions.ts) starts, resumes, plans and renders every system's runs from this one definition,
 * as Helm's actions do over a generic release record; it names no system and no system's field.
 *
 * The part that reports, notifications and metrics need is its `SystemDescription`
 * (system-description.ts).
 */
import type { Environment } from '../config/schema.ts'
import type { PlannedStep } from './engine.ts'
import type { Journal } from './journal.ts'
import type { LockPolicy } from './lock-policy.ts'
import type { HeldLock, Opened, Playbook } from './playbook.ts'
import type { RunKind, RunParams, RunRecord } from './run-record.ts'
import type { SystemDescription } from './system-description.ts'

export type { RunView, SystemDescription } from './system-description.ts'

/** A run's request: the environment it acts on, and whether it may take a lock another run holds (default `respect`). */
export interface RunRequest {
  env: Environment
  lockPolicy?: LockPolicy
}

/** A new run's own fields, from its request. */
export interface NewRun<P extends RunParams> {
  kind: RunKind
  targetVersion: string
  autoRollback: boolean
  procedure?: string
  params: P
}

/** The dry run: what would be done, step by step, with the exact commands. */
export interface RunPlan {
  environment: string
  what: 'upgrade' | 'resume' | 'rollback'
  runId?: string
  target: string
  steps: PlannedStep[]
  /** What the system's plan shows besides (the rollout's batches, the window). */
  [fact: string]: unknown
}

/** How a system's dry runs read. */
export interface PlanWords<P extends RunParams, Req> {
  /** The first line of the dry run of a new run. */
  title(plan: RunPlan): string
  /** What the plan of a run shows besides its steps (`req`: a new run's request). */
  facts(run: RunRecord<P>, req?: Req): Record<string, unknown>
  /** The lines of those facts under the title. */
  lines(plan: RunPlan): string[]
  /** The continuation's first step: what the run is, where an unfinished one stopped, what else happens first. */
  continuation(journal: Journal<P>, env: Environment): { what: string; unfinished: string; more: string[] }
  /** The step shown for a rollback of a run that stopped nothing. */
  nothingToUndo: string
}

/** A system as the engine runs it. */
export interface RunSystem<P extends RunParams, Req extends RunRequest, C> extends SystemDescription<P> {
  /** A new run's fields from a request, validated: bad input names the flag, before anything is read or changed. */
  newRun(req: Req): NewRun<P>
  /** The line announcing a new run. */
  announce(run: RunRecord<P>, env: Environment): string
  /**
   * Takes the environment's lock for `run` (`resuming`: the run being continued, whose own stale
   * lock is taken over); `takeOver`: dead runs whose leftovers (target locks) the run may take.
   */
  lock(
    env: Environment,
    run: RunRecord<P>,
    options: { resuming?: string; lockPolicy: LockPolicy },
  ): Promise<{ lock: HeldLock; takeOver: string[] }>
  /** Opens the context of a run (the targets' own locks taken); closing releases them. */
  open(env: Environment, journal: Journal<P>, options: { takeOver: string[]; lockPolicy: LockPolicy }): Promise<Opened<C>>
  /** Opens the context of a dry run: it reads, never changes. */
  openToPlan(env: Environment, journal: Journal<P>): Promise<Opened<C>>
  /** The playbook a run follows: its kind's, or the procedure it recorded. */
  playbook(run: RunRecord<P>): Playbook<C, P>
  readonly plan: PlanWords<P, Req>
}
