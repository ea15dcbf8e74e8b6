/**
 * Following a run started elsewhere (`svcops runs watch ID`, Argo Rollouts' `get --watch`): its
 * record and journal read again and again from where it is kept — its local folder while its holder
 * is this machine, else the environment's store (run-store.ts) that every machine reaches — each
 * new entry handed on as it was journaled, until the run ends (or its holder is gone). The run's
 * process is never asked anything: what it journals is all a watcher sees.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadEnvironmentFile } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError, ExitCode, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { Journal, runsDir, type JournalEntry } from './journal.ts'
import { environmentStores } from './run-listing.ts'
import type { Systems } from './system-description.ts'
import { heldHere, presentRun } from './run-presence.ts'
import { assertRunId, isFinished, isPaused, readRunRecord, type RunRecord } from './run-record.ts'

/** A run as read at one moment: its record (as a person should see it) and every entry so far. */
export interface RunSnapshot {
  record: RunRecord
  entries: JournalEntry[]
}

/** Where a followed run is read from. */
export interface RunSource {
  /** The run's id. */
  readonly id: string
  /** Where, for people: a folder, or the environment's store. */
  readonly where: string
  /** True when it is the run's own folder on this machine (read often: it costs a file read). */
  readonly local: boolean
  /** The run now, or undefined when the source does not hold it. */
  read(): Promise<RunSnapshot | undefined>
  close(): Promise<void>
}

/** Run `id` in the local runs folder `base`: its record read again each time, its journal read on from where it was. */
export function localRunSource(id: string, base = runsDir()): RunSource {
  const journal = Journal.open(id, base)
  return {
    id,
    where: journal.dir,
    local: true,
    read: () => Promise.resolve({ record: presentRun(readRunRecord(join(journal.dir, 'run.json'))), entries: journal.entries() }),
    close: () => Promise.resolve(),
  }
}

/** Run `id` as environment `env`'s stores keep it, its holder asked of through the environment's lock. */
export function storeRunSource(env: Environment, systems: Systems, id: string): RunSource {
  const stores = environmentStores(env, systems)
  return {
    id,
    where: stores.map((s) => s.where).join(', ') || `environment '${env.name}' (it keeps no runs)`,
    local: false,
    async read() {
      for (const store of stores) {
        const found = await store.readRun(id)
        if (!found) continue
        const { record } = found
        const unfinished = !isFinished(record) && record.phase !== 'interrupted' && !heldHere(record)
        const lock = unfinished ? await store.lockState(record).catch(() => 'unknown' as const) : 'unknown'
        return { record: presentRun(record, lock), entries: found.entries }
      }
      return undefined
    },
    close: () => Promise.all(stores.map((s) => s.close())).then(() => undefined),
  }
}

/**
 * Where `svcops runs watch ID` reads run `id`: its folder here while this machine holds it; else
 * the environment's store (`env`, or the stack file the run names), which the holder writes to as
 * it goes — a local copy of a run held elsewhere does not change. Refused when neither has it.
 * `systems`: whose stores the environment is read from.
 */
export function runSourceOf(id: string, env: Environment | undefined, systems: Systems, base = runsDir()): RunSource {
  assertRunId(id)
  const here = existsSync(join(base, id, 'run.json')) ? Journal.open(id, base).run : undefined
  if (here && heldHere(here)) return localRunSource(id, base)
  const where = env ?? (here ? environmentOfRun(here) : undefined)
  if (where && environmentStores(where, systems).length) return storeRunSource(where, systems, id)
  if (here) return localRunSource(id, base)
  throw new BadInputError(
    `There is no run '${id}' in ${base}${env ? ` nor in environment '${env.name}'` : ''}.`,
    'A run started on another machine is read from its environment: add --env ENV (or --stack-file FILE).',
  )
}

/** The environment a run names, when its stack file is on this machine. */
function environmentOfRun(run: RunRecord): Environment | undefined {
  try {
    return loadEnvironmentFile(run.envFile, run.environment)
  } catch {
    // Only its local copy can be read, then: it is what this machine has.
    return undefined
  }
}

/** What a follower is told as the run goes. */
export interface FollowHandlers {
  /** An entry journaled since the last one told. */
  entry(entry: JournalEntry): void
  /** The run waits after its canary (told once per wait). */
  paused(record: RunRecord): void
}

/**
 * Follows the run `source` reads until it ends or its holder is gone, every `intervalMs`; returns
 * it as it ended. A read that fails after the first is said once and tried again: a watcher outlives
 * a store's hiccup.
 */
export async function followRun(source: RunSource, on: FollowHandlers, options: { intervalMs: number }): Promise<RunSnapshot> {
  let told = 0
  let pausedAt: string | undefined
  let warned = false
  for (let reads = 0; ; reads++) {
    let now: RunSnapshot | undefined
    try {
      now = await source.read()
    } catch (error) {
      if (reads === 0) throw error
      if (!warned) events.warn(`Run ${source.id} could not be read from ${source.where} (${errorMessage(error)}); trying again.`)
      warned = true
    }
    if (!now && reads === 0) throw new BadInputError(`There is no run '${source.id}' in ${source.where}.`)
    if (now) {
      for (const entry of now.entries.slice(told)) on.entry(entry)
      told = Math.max(told, now.entries.length)
      if (isPaused(now.record) && now.record.pausedAt !== pausedAt) on.paused(now.record)
      pausedAt = isPaused(now.record) ? now.record.pausedAt : undefined
      if (isFinished(now.record) || now.record.phase === 'interrupted') return now
    }
    await sleep(options.intervalMs)
  }
}

/** The exit code a run's end means: 0 succeeded (or an asked-for rollback), 4 failed and rolled back, 1 failed, 130 interrupted. */
export function exitCodeOfRun(run: Pick<RunRecord, 'phase' | 'kind' | 'rollbackRequested'>): number {
  switch (run.phase) {
    case 'succeeded':
    case 'no-op':
      return ExitCode.ok
    case 'rolled-back':
      return run.rollbackRequested === true || run.kind === 'rollback' ? ExitCode.ok : ExitCode.rolledBack
    case 'interrupted':
      return ExitCode.interrupted
    default:
      return ExitCode.failed
  }
}
