/**
 * `svcops runs promote ID` and `svcops runs abort ID`: a person's decision for a run that waits after
 * its canary, kept where its holder looks (run-decision.ts): the run's folder when it is on this
 * machine, and the environment's store — from the run's own stack file, or `--env` for a run
 * started on another machine. Refused, with nothing kept, for a run that is not waiting, and for a
 * run read from the environment that a resume would refuse (run-mac.ts): a refused record's pause is
 * not to be believed, nor an unsigned one's where the environment signs its runs.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { loadEnvironmentFile } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError, OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { Journal, runsDir } from './journal.ts'
import { localDecision, openPause, readLocalDecision, writeLocalDecision, type Decision, type PauseRef } from './run-decision.ts'
import { readEnvironmentRun } from './run-listing.ts'
import { assertRunTrusted, runKeyOf } from './run-mac.ts'
import { heldHere, presentRun } from './run-presence.ts'
import { assertRunId, isPaused, type RunRecord } from './run-record.ts'
import { systemIn, type Systems } from './system-description.ts'

/** What `decideRun` kept, and what the run will do with it. */
export interface KeptDecision {
  decision: Decision
  /** Where it was kept (the run folder, the environment's store). */
  kept: string[]
  /** The run's holder is gone: the decision counts when it is resumed. */
  holderGone: boolean
}

/** How a decision reaches its run: the systems whose stores keep runs, the local runs folder, and `--trust-unsigned-run`. */
export interface DecisionAccess {
  /** The systems, for the store of the run's own (built at the edge). */
  systems: Systems
  base?: string
  /** An unsigned record read from an environment that signs its runs may be decided for (as a resume's flag). */
  trustUnsigned?: boolean
}

/** Keeps `decision` for run `id` (`env`: the environment to reach a run started elsewhere). */
export async function decideRun(
  id: string,
  decision: Decision['decision'],
  env: Environment | undefined,
  access: DecisionAccess,
): Promise<KeptDecision> {
  const { record, local, pause } = await findDecidable(id, decision, env, access)
  const where = env ?? environmentOfRecord(record)
  // With the stack's run key the decision carries its MAC, bound to the pause it answers: the waiting run honours no other.
  const key = where ? runKeyOf(where) : undefined
  if (key && !pause)
    throw new BadInputError(
      `Run ${id} is marked as waiting after its canary, but its journal holds no open pause; a decision answers a pause, so none is kept.`,
      `See where it is: svcops runs show ${id}`,
    )
  const ours = localDecision(decision, record.environment, id, key, pause)
  const kept: string[] = []
  let counted: Decision | undefined
  // The store first: a decision taken on another machine before this one counts here too. It records
  // who decided and when itself (the database role, its clock), not what this machine says.
  const store = where ? systemIn(access.systems, record.system)?.runStore?.(where) : undefined
  if (store?.decide) {
    try {
      const { kept: first, first: isOurs } = await store.decide(id, ours)
      if (!isOurs) throw alreadyDecided(id, first)
      counted = first
      kept.push(store.where)
    } catch (error) {
      if (error instanceof BadInputError) throw error
      // The run folder is enough when the holder is this machine; elsewhere the store is the only way.
      if (!local || !heldHere(record)) throw new OperationError(`The decision could not be kept in ${store.where}: ${errorMessage(error)}`)
      events.warn(`The decision could not be kept in ${store.where} (${errorMessage(error)}); the run reads it from its folder.`)
    } finally {
      await store.close()
    }
  }
  if (local) {
    const first = writeLocalDecision(local.dir, ours)
    if (first !== ours) throw alreadyDecided(id, first)
    // A holder on this machine reads its folder first: that decision is the one it acts on.
    if (!counted || heldHere(record)) counted = first
    kept.push(local.dir)
  }
  if (!counted || !kept.length)
    throw new BadInputError(
      `Run ${id} is held on another machine (${record.holder}) and its environment keeps no decisions; expected --env naming an environment whose store holds the run.`,
    )
  return { decision: counted, kept, holderGone: presentRun(record).phase === 'interrupted' }
}

/**
 * Run `id`'s record, its local journal and its open pause, refused as a decision for it is: no such
 * run, refused or unsigned as a resume would refuse it, not waiting, another environment.
 */
async function findDecidable(
  id: string,
  decision: Decision['decision'],
  env: Environment | undefined,
  { systems, base = runsDir(), trustUnsigned = false }: DecisionAccess,
): Promise<{ record: RunRecord; local: Journal | undefined; pause: PauseRef | undefined }> {
  assertRunId(id)
  const local = existsSync(join(base, id, 'run.json')) ? Journal.open(id, base) : undefined
  const stored = env && (!local || !heldHere(local.run)) ? await readEnvironmentRun(env, systems, id) : undefined
  // The resume's rule: refused never; unsigned only on the operator's word. Where the stack names no
  // run key every run is unsigned and a decision carries no MAC, so the store's role alone decides.
  if (stored) assertRunTrusted(stored.record, trustUnsigned || !runKeyOf(env ?? {}))
  const record = stored?.record ?? local?.run
  if (!record)
    throw new BadInputError(
      `There is no run '${id}' in ${base}${env ? ` nor in environment '${env.name}'` : ''}.`,
      env ? `List the runs with: svcops runs list --env ${env.name}` : 'A run started on another machine is reached with --env ENV.',
    )
  refuseUnlessPaused(record, decision)
  // A row filed under one environment whose record names another is not a run to decide there.
  if (env && record.environment !== env.name)
    throw new BadInputError(
      `Run ${id} kept with environment '${env.name}' names environment '${record.environment}'; a decision is for the environment a run is of, expected --env ${record.environment}.`,
    )
  // The pause as the journal read with the record shows it (the store's, checked with the record; else the folder's).
  return { record, local, pause: openPause(stored ? stored.entries : (local?.entries() ?? [])) }
}

/** What `runs promote|abort ID --dry-run` shows: where the decision would be kept and what the run would then do. */
export interface PlannedDecision {
  runId: string
  decision: Decision['decision']
  /** Where `decideRun` would keep it, in its order (the environment's store, the run folder). */
  wouldKeep: string[]
  /** What the waiting run does once it reads it. */
  then: string
  /** The run's holder is gone: the decision would count when it is resumed. */
  holderGone: boolean
}

/**
 * `svcops runs promote|abort ID --dry-run`: the same refusals as `decideRun` (no such run, not
 * waiting, another environment, a decision already in its folder), and where it would keep the
 * decision; nothing is kept. A decision another machine kept in the store first is found by the run.
 */
export async function planDecision(
  id: string,
  decision: Decision['decision'],
  env: Environment | undefined,
  access: DecisionAccess,
): Promise<PlannedDecision> {
  const { record, local } = await findDecidable(id, decision, env, access)
  const wouldKeep: string[] = []
  const where = env ?? environmentOfRecord(record)
  const store = where ? systemIn(access.systems, record.system)?.runStore?.(where) : undefined
  if (store) {
    if (store.decide) wouldKeep.push(store.where)
    await store.close()
  }
  if (local) {
    const first = readLocalDecision(local.dir)
    if (first) throw alreadyDecided(id, first)
    wouldKeep.push(local.dir)
  }
  if (!wouldKeep.length)
    throw new BadInputError(
      `Run ${id} is held on another machine (${record.holder}) and its environment keeps no decisions; expected --env naming an environment whose store holds the run.`,
    )
  return {
    runId: id,
    decision,
    wouldKeep,
    then: decision === 'promote' ? 'it goes on with its next batches after its canary' : 'it rolls back what it changed (exit 4)',
    holderGone: presentRun(record).phase === 'interrupted',
  }
}

function alreadyDecided(id: string, first: Decision): BadInputError {
  return new BadInputError(`Run ${id} was already ${pastTense(first)} by ${first.by} at ${first.at}; the first decision counts.`)
}

function pastTense(d: Decision): string {
  return d.decision === 'promote' ? 'promoted' : 'aborted'
}

/** A decision is for a run that waits after its canary; anything else is refused naming its phase. */
function refuseUnlessPaused(record: RunRecord, decision: Decision['decision']): void {
  if (isPaused(record)) return
  throw new BadInputError(
    `Run ${record.id} is not waiting after its canary (it is ${presentRun(record).phase}); svcops runs ${decision} applies to a run started with --pause-after-canary while it waits.`,
    `See where it is: svcops runs show ${record.id}`,
  )
}

/** The environment the run was started with, when its stack file is here; else undefined (said once). */
function environmentOfRecord(record: RunRecord): Environment | undefined {
  try {
    return loadEnvironmentFile(record.envFile, record.environment)
  } catch (error) {
    events.warn(`${errorMessage(error)} The decision is kept in the run folder only.`)
    return undefined
  }
}
