/**
 * The actions of every system's runs, written once over a system's definition (run-system.ts):
 * start a run, resume or roll back one from its journal, the dry run of each, and the plan as
 * text. The engine takes the environment's lock before any run folder exists, opens and closes the
 * system's context, and leaves the procedure to the playbook the system names.
 */
import { loadEnvironmentFile } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { PlannedStep } from './engine.ts'
import { Journal } from './journal.ts'
import type { LockPolicy } from './lock-policy.ts'
import { planRun, resumeRun, startRun, type RunOutcome } from './playbook.ts'
import { isFinished, newRunRecord, phaseToContinue, withParams, type RunParams, type RunRecord } from './run-record.ts'
import type { RunPlan, RunRequest, RunSystem } from './run-system.ts'
import type { RunStore } from './run-store.ts'
import type { SystemDescription } from './system-description.ts'

/** The record of a new run of `system` from `req` (validated by the system). */
export function newSystemRecord<P extends RunParams, Req extends RunRequest, C>(system: RunSystem<P, Req, C>, req: Req): RunRecord<P> {
  return newRunRecord({ ...system.newRun(req), system: system.name, environment: req.env.name, envFile: req.env.file })
}

/** Starts a new run of `system`: the environment's lock, the run folder, the playbook under the failure policy. */
export async function startSystemRun<P extends RunParams, Req extends RunRequest, C>(
  system: RunSystem<P, Req, C>,
  req: Req,
): Promise<RunOutcome> {
  const record = newSystemRecord(system, req)
  const lockPolicy = req.lockPolicy ?? 'respect'
  const { lock, takeOver } = await system.lock(req.env, record, { lockPolicy })
  const journal = Journal.create(record)
  events.info(system.announce(record, req.env))
  return startRun({
    playbook: system.playbook(record),
    journal,
    lock,
    open: (j) => system.open(req.env, j, { takeOver, lockPolicy }),
    system,
    ...storeOf(system, req.env),
  })
}

/** Continues run `id` of `system` from its journal, or rolls it back with `rollback: true` (`svcops resume`). */
export async function resumeSystemRun<P extends RunParams, Req extends RunRequest, C>(
  system: RunSystem<P, Req, C>,
  id: string,
  options: { rollback?: boolean; lockPolicy?: LockPolicy } & RecordedFrom,
): Promise<RunOutcome> {
  const { journal, env } = continuationOf(system, id, options)
  const lockPolicy = options.lockPolicy ?? 'respect'
  const { lock, takeOver } = await system.lock(env, journal.run, { resuming: id, lockPolicy })
  const playbook = system.playbook(journal.run)
  const open = (j: Journal<P>) => system.open(env, j, { takeOver: [...takeOver, id], lockPolicy })
  return resumeRun({ playbook, journal, lock, open, system, ...storeOf(system, env) }, options.rollback ? { rollback: true } : {})
}

/** The environment's store of `system`'s runs in `env`, as a setup field (none: the local folder only). */
function storeOf<P extends RunParams>(system: SystemDescription<P>, env: Environment): { store?: RunStore } {
  const store = system.runStore?.(env)
  return store ? { store } : {}
}

/** The dry run of a new run of `system`: its playbook in plan mode on a journal kept in memory; reads only. */
export async function planSystemRun<P extends RunParams, Req extends RunRequest, C>(
  system: RunSystem<P, Req, C>,
  req: Req,
): Promise<RunPlan> {
  const record = newSystemRecord(system, req)
  const journal = Journal.inMemory(record)
  const steps = await planned(system, req.env, journal, 'start')
  return { environment: req.env.name, what: 'upgrade', target: record.targetVersion, ...system.plan.facts(record, req), steps }
}

/** The dry run of `svcops resume ID` (or of its rollback): what is left, from the journal. */
export async function planSystemContinuation<P extends RunParams, Req extends RunRequest, C>(
  system: RunSystem<P, Req, C>,
  id: string,
  options: { rollback: boolean } & RecordedFrom,
): Promise<RunPlan> {
  const continuation = continuationOf(system, id, options)
  const { env, journal, rollingBack, nothingToUndo } = continuation
  const record = journal.run
  // The run's entries in memory: planning writes nothing.
  const rehearsal = Journal.inMemory({ ...record }, undefined, journal.entries())
  const steps = nothingToUndo ? [] : await planned(system, env, rehearsal, rollingBack ? 'rollback' : 'resume')
  const words = system.plan.continuation(journal, env)
  const finished = journal.entries().filter((e) => e.status === 'ok').length
  const first: PlannedStep = {
    step: 'journal',
    title: `run ${record.id} (${words.what} to ${record.targetVersion}) is ${record.phase}${record.cause ? `: ${record.cause}` : ''}`,
    actions: [`${finished} step(s) finished${isFinished(record) ? '' : `; ${words.unfinished}`}`, ...words.more],
  }
  return {
    environment: env.name,
    what: rollingBack ? 'rollback' : 'resume',
    runId: id,
    target: record.targetVersion,
    ...system.plan.facts(record),
    steps: [first, ...(nothingToUndo ? [{ step: 'nothing to roll back' as const, title: system.plan.nothingToUndo, actions: [] }] : steps)],
  }
}

/** The plan as text: its title, the system's lines (rollout, window), then one block per step. */
export function renderRunPlan<P extends RunParams, Req extends RunRequest, C>(system: RunSystem<P, Req, C>, plan: RunPlan): string {
  const head =
    plan.what === 'upgrade'
      ? system.plan.title(plan)
      : `Dry run: ${plan.what} of run ${plan.runId ?? '?'} in environment '${plan.environment}' (nothing will be changed).`
  const lines = [head, ...system.plan.lines(plan), '']
  for (const s of plan.steps) {
    lines.push(`${s.host ? `[${s.host}] ` : ''}${s.batch ? `${s.batch}: ` : ''}${s.step} — ${s.title}`)
    for (const a of s.actions) lines.push(`    ${a}`)
  }
  return lines.join('\n')
}

/**
 * The environment of a run in the local folder resumed without a stack: the stack file it was
 * started with, read again. Both fields are this machine's own: a run copied from an environment's
 * store gets the name and file of the stack the operator gave (run-listing.ts), never the stored
 * ones; a stack that names another environment than the record is refused.
 */
export function environmentOfRun(record: Pick<RunRecord, 'envFile' | 'environment' | 'id'>): Environment {
  const env = loadEnvironmentFile(record.envFile, record.environment)
  assertSameEnvironment(record, env)
  return env
}

/** Refuses a run whose record names another environment than `env`, the stack in use. */
function assertSameEnvironment(record: Pick<RunRecord, 'environment' | 'id'>, env: Environment): void {
  if (record.environment !== env.name)
    throw new BadInputError(
      `Run ${record.id} names environment '${record.environment}', not '${env.name}' (the stack in use); it is refused.`,
      `Give the stack file of the run's own environment, or see it with: svcops runs show ${record.id} --env ${env.name}`,
    )
}

/** Where a continuation's run and environment come from, when not from the local folder and the record's stack file. */
export interface RecordedFrom {
  /** The stack the operator gave (`--env`, `--stack-file`): the run's environment. */
  env?: Environment
  /** The run already opened (read from the environment into memory, for a dry run). */
  journal?: Journal
}

/** A recorded run about to be continued (`svcops resume ID [--rollback]`, `rollback ... --run ID`), or planned so. */
export interface Continuation<P extends RunParams> {
  /** The run's journal on disk, its params checked by the system's schema. */
  journal: Journal<P>
  /** The environment the run was started with. */
  env: Environment
  /** The continuation is a rollback: asked for, or the run was rolling back when it stopped. */
  rollingBack: boolean
  /** A rollback of a run that stopped nothing: there is nothing to undo, it is only marked failed. */
  nothingToUndo: boolean
}

/** Opens run `id` of `system` for a continuation; refuses another system's run, and a finished run unless it is rolled back. */
export function continuationOf<P extends RunParams, Req extends RunRequest, C>(
  system: RunSystem<P, Req, C>,
  id: string,
  options: { rollback?: boolean } & RecordedFrom,
): Continuation<P> {
  const { journal, env } = recordedRun(system, id, options)
  const record = journal.run
  // A verify only reads (read-only-system.ts): an interrupted one is run again, never continued.
  if (record.kind === 'verify')
    throw new BadInputError(
      `Run ${record.id} is a verify (${record.phase}); it changed nothing, so it is not resumed or rolled back.`,
      `Run it again: svcops verify ${record.system} --env ${record.environment}`,
    )
  if (isFinished(record) && !options.rollback)
    throw new BadInputError(
      `Run ${record.id} is finished (${record.phase}); there is nothing to resume.`,
      record.phase === 'succeeded' ? `To undo it: ${system.playbook(record).rollbackCommand(record)}` : undefined,
    )
  const rollingBack = options.rollback === true || phaseToContinue(record) === 'rolling-back'
  return { journal, env, rollingBack, nothingToUndo: rollingBack && !journal.disrupted() }
}

/**
 * Run `id` of `system` as recorded (`from.journal`, else the local folder's): its journal, its
 * params checked by the system's schema, and its environment — `from.env`, the stack the operator
 * gave, else the stack file it was started with here; a record naming another environment is refused.
 */
export function recordedRun<P extends RunParams, Req extends RunRequest, C>(
  system: RunSystem<P, Req, C>,
  id: string,
  from: RecordedFrom = {},
): { journal: Journal<P>; env: Environment } {
  const opened = from.journal ?? Journal.open(id)
  if (opened.run.system !== system.name)
    throw new BadInputError(`Run ${id} is a run of ${opened.run.system}, not of ${system.title}.`, `See it with: svcops runs show ${id}`)
  const journal = opened.typed(withParams(opened.run, system.params, system.title))
  if (!from.env) return { journal, env: environmentOfRun(journal.run) }
  assertSameEnvironment(journal.run, from.env)
  return { journal, env: from.env }
}

async function planned<P extends RunParams, Req extends RunRequest, C>(
  system: RunSystem<P, Req, C>,
  env: Environment,
  journal: Journal<P>,
  what: 'start' | 'resume' | 'rollback',
): Promise<PlannedStep[]> {
  const opened = await system.openToPlan(env, journal)
  try {
    return await planRun(system.playbook(journal.run), opened.ctx, journal, what)
  } finally {
    await opened.close()
  }
}
