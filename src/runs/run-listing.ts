/**
 * An environment's runs wherever they are kept: the local folder (a copy) and the environment's own
 * stores (run-store.ts), merged by id. This is the one way to list an environment's runs — `runs
 * list`, `rollback` without `--run`, retention and `runs watch` all read it — and the way a run kept
 * only in the environment becomes a local folder that `resume` and `rollback --run` continue.
 */
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Environment } from '../config/schema.ts'
import { writeFileAtomic } from '../core/atomic-write.ts'
import { OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { redactDeep } from '../core/redact.ts'
import { Journal, listRuns, runsDir } from './journal.ts'
import { heldHere, presentRun } from './run-presence.ts'
import { assertRunTrusted, TRUST_UNSIGNED_FLAG } from './run-mac.ts'
import { holderName, isFinished, isRunId, type RunRecord } from './run-record.ts'
import { newestFirst, type RunStore, type RunWrite, type StoredRun } from './run-store.ts'
import type { Systems } from './system-description.ts'

/** The local runs folder as a store: what `runs list` shows without an environment, and where copies land. */
export function localRunStore(base = runsDir()): RunStore {
  return {
    where: base,
    write({ record, all }: RunWrite) {
      if (!existsSync(join(base, record.id, 'run.json'))) {
        Journal.createCopy(record, all, base)
        return Promise.resolve()
      }
      writeFileAtomic(join(base, record.id, 'run.json'), JSON.stringify(redactDeep({ ...record, trust: undefined }), null, 2) + '\n', {
        mode: 0o600,
        sync: true,
      })
      writeFileAtomic(join(base, record.id, 'journal.jsonl'), all.map((e) => JSON.stringify(redactDeep(e)) + '\n').join(''), {
        mode: 0o600,
        sync: true,
      })
      return Promise.resolve()
    },
    listRecords: (environment) => Promise.resolve(listRuns(base).filter((r) => r.environment === environment)),
    readRun(id) {
      if (!isRunId(id) || !existsSync(join(base, id, 'run.json'))) return Promise.resolve(undefined)
      const journal = Journal.open(id, base)
      return Promise.resolve({ record: journal.run, entries: journal.entries() })
    },
    remove(id) {
      if (isRunId(id)) rmSync(join(base, id), { recursive: true, force: true })
      return Promise.resolve()
    },
    lockState: () => Promise.resolve('unknown'),
    close: () => Promise.resolve(),
  }
}

/** The stores environment `env` keeps runs in (one per system of `systems` it has, or only system `only`'s), each opened lazily. */
export function environmentStores(env: Environment, systems: Systems, only?: string): RunStore[] {
  return systems.flatMap((system) => {
    if (only !== undefined && system.name !== only) return []
    const store = system.runStore?.(env)
    return store ? [store] : []
  })
}

/**
 * Every run of environment `env`, newest first: the local folder's (`base`) and its environment's
 * stores', merged by id — the environment's record counts unless only the local one is finished
 * (its last write did not reach the environment). An unfinished run whose holder is gone is shown
 * `interrupted` (run-presence.ts). A store that cannot be read is said once; the others still count
 * — unless `strict`, for a reader that must not decide on part of the runs (retention): then it
 * throws. `system`: only that system's runs, and only its store is read.
 * A stored record that is refused (run-mac.ts) is said and left out — never followed — unless
 * `includeRefused` (a view, which shows it as refused). `systems`: whose stores are read.
 */
export async function listEnvironmentRuns(
  env: Environment,
  systems: Systems,
  options: { base?: string; strict?: boolean; system?: string; includeRefused?: boolean } = {},
): Promise<RunRecord[]> {
  const byId = new Map<string, { record: RunRecord; store?: RunStore }>()
  const wanted = (r: RunRecord) => r.environment === env.name && (options.system === undefined || r.system === options.system)
  for (const record of listRuns(options.base ?? runsDir()).filter(wanted)) byId.set(record.id, { record })
  const stores = environmentStores(env, systems, options.system)
  try {
    for (const store of stores) {
      let records: RunRecord[]
      try {
        records = await store.listRecords(env.name)
      } catch (error) {
        if (options.strict) throw new OperationError(`The runs kept in ${store.where} could not be read: ${errorMessage(error)}.`)
        events.warn(`The runs kept in ${store.where} could not be read (${errorMessage(error)}); showing the local copies only.`)
        continue
      }
      for (const record of records) {
        if (record.trust?.state === 'refused' && !options.includeRefused) {
          events.warn(record.trust.sentence)
          continue
        }
        const local = byId.get(record.id)
        if (local && isFinished(local.record) && !isFinished(record)) continue
        byId.set(record.id, { record, store })
      }
    }
    const runs: RunRecord[] = []
    for (const { record, store } of byId.values()) runs.push(await presented(record, store ?? stores[0]))
    return runs.sort(newestFirst)
  } finally {
    await Promise.all(stores.map((s) => s.close()))
  }
}

/** The run as a person should see it, asking `store`'s lock about a holder on another machine. */
async function presented(record: RunRecord, store: RunStore | undefined): Promise<RunRecord> {
  if (isFinished(record) || record.phase === 'interrupted' || heldHere(record) || !store || record.trust?.state === 'refused')
    return presentRun(record)
  const state = await store.lockState(record).catch(() => 'unknown' as const)
  return presentRun(record, state)
}

/** Run `id` as environment `env`'s stores (those of `systems`) keep it, or undefined when none does. */
export async function readEnvironmentRun(env: Environment, systems: Systems, id: string): Promise<StoredRun | undefined> {
  const stores = environmentStores(env, systems)
  try {
    for (const store of stores) {
      const found = await store.readRun(id).catch((error: unknown) => {
        events.warn(`Run ${id} could not be read from ${store.where}: ${errorMessage(error)}.`)
        return undefined
      })
      if (found) return found
    }
    return undefined
  } finally {
    await Promise.all(stores.map((s) => s.close()))
  }
}

/** How a run read from an environment may drive a continuation. */
export interface RunAccess {
  /** `--trust-unsigned-run`: an unsigned record may drive it (recorded in the record). */
  trustUnsigned?: boolean
  /** A dry run: the run is read into memory, nothing is written to the local folder. */
  dryRun?: boolean
}

/**
 * Makes sure run `id` has a local folder (`base`): when only the environment keeps it (started on
 * another machine), its record and journal are copied here, its stack file and environment being
 * `env`'s (the stack the operator gave, never the record's), so that `resume` and `rollback --run`
 * continue it. A record that is refused, or unsigned without `trustUnsigned`, is refused (one
 * sentence) and nothing is written. True when the run is (now) in the local folder.
 */
export async function copyRunFromEnvironment(
  env: Environment,
  systems: Systems,
  id: string,
  base = runsDir(),
  access: RunAccess = {},
): Promise<boolean> {
  if (!isRunId(id)) return false
  if (existsSync(join(base, id, 'run.json'))) return true
  const found = await trustedEnvironmentRun(env, systems, id, access)
  if (!found) return false
  await localRunStore(base).write({ record: found.record, from: 0, all: found.entries })
  events.info(`Run ${id} was copied from the environment to ${join(base, id)}.`)
  return true
}

/**
 * Run `id` to continue in environment `env`: the local folder's (`base`), else the environment's —
 * checked as `copyRunFromEnvironment` does, and copied to the local folder unless `access.dryRun`
 * (then kept in memory). Undefined when neither keeps it.
 */
export async function openRunToContinue(
  env: Environment,
  systems: Systems,
  id: string,
  access: RunAccess = {},
  base = runsDir(),
): Promise<Journal | undefined> {
  if (!isRunId(id)) return undefined
  if (existsSync(join(base, id, 'run.json'))) return Journal.open(id, base)
  if (!access.dryRun) return (await copyRunFromEnvironment(env, systems, id, base, access)) ? Journal.open(id, base) : undefined
  const found = await trustedEnvironmentRun(env, systems, id, access)
  return found ? Journal.inMemory(found.record, base, found.entries) : undefined
}

/** Run `id` as `env`'s stores keep it, refused unless trusted, as the local copy would hold it. */
async function trustedEnvironmentRun(env: Environment, systems: Systems, id: string, access: RunAccess): Promise<StoredRun | undefined> {
  const found = await readEnvironmentRun(env, systems, id)
  if (!found) return undefined
  assertRunTrusted(found.record, access.trustUnsigned ?? false)
  const { trust, ...record } = found.record
  if (trust?.state === 'unsigned') events.warn(`${trust.sentence} It is trusted on ${TRUST_UNSIGNED_FLAG}.`)
  return {
    record: {
      ...record,
      environment: env.name,
      envFile: env.file,
      ...(trust?.state === 'unsigned' ? { trustedUnsigned: { by: holderName(), at: new Date().toISOString() } } : {}),
    },
    entries: found.entries,
  }
}
