/**
 * A person's decision for a run that waits after its canary (`--pause-after-canary`): `svcops runs
 * promote ID` lets it go on, `svcops runs abort ID` makes it roll back as a failure after the canary
 * would. The decision is kept where the waiting run looks for it, every second: `decision.json` in
 * its run folder (a person on the same machine) and its environment's store (a person anywhere,
 * `RunStore.decide`). It is kept, not sent: a run killed while it waited and resumed later finds the
 * decision taken meanwhile, and waits again when there is none.
 *
 * A decision carries who took it as the place keeping it authenticated them (the store's database
 * role, the run folder's account) and the environment it was taken for. The holder honours it only
 * when it names the run's environment and someone, and was taken while the run waited: after the
 * entry that began the open pause (a pause killed and resumed is still open), by the store's clock
 * where the store has one. Anything else is refused in one sentence, forgotten (so that a valid
 * decision can follow), and the run keeps waiting.
 */
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs'
import { hostname, userInfo } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { writeFileAtomic } from '../core/atomic-write.ts'
import { BadInputError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { Journal, JournalEntry } from './journal.ts'
import type { Decision, RunStore, StoredDecision } from './run-store.ts'

export type { Decision } from './run-store.ts'

const DECISION_FILE = 'decision.json'
const MAX_DECISION_BYTES = 4096

const decisionSchema = z.object({
  decision: z.enum(['promote', 'abort']),
  by: z.string(),
  at: z.string(),
  environment: z.string().optional(),
  identity: z.string().optional(),
})
const kindSchema = z.object({ decision: z.enum(['promote', 'abort']) })

/** A decision read from a run folder (`where` names it): checked, one sentence when it is not one. */
export function parseDecision(json: unknown, where: string): Decision {
  const parsed = decisionSchema.safeParse(json)
  if (!parsed.success)
    throw new BadInputError(`${where}: is not a decision; expected {"decision": "promote" | "abort", "by", "at", "environment"}.`)
  return parsed.data
}

/** What a stored decision decides (who and when are the store's columns, not its JSON): one sentence when it is not one. */
export function parseDecisionKind(json: unknown, where: string): Decision['decision'] {
  const parsed = kindSchema.safeParse(json)
  if (!parsed.success) throw new BadInputError(`${where}: is not a decision; expected {"decision": "promote" | "abort"}.`)
  return parsed.data.decision
}

/**
 * A decision taken here, for run folder files: the account is this process's (its uid's name, not
 * `$USER`, which any caller sets), on this machine; the store records its own identity instead.
 */
export function localDecision(decision: Decision['decision'], environment: string): Decision {
  let account: string
  try {
    account = userInfo().username
  } catch {
    account = `uid${process.getuid?.() ?? '?'}`
  }
  return { decision, by: `${account}@${hostname()}`, at: new Date().toISOString(), environment, identity: 'local account' }
}

/** The decision kept in run folder `dir`, if any (size-capped and checked: a run folder can be damaged). */
export function readLocalDecision(dir: string): Decision | undefined {
  const file = join(dir, DECISION_FILE)
  if (!existsSync(file)) return undefined
  if (statSync(file).size > MAX_DECISION_BYTES) throw new BadInputError(`${file}: is over ${MAX_DECISION_BYTES} bytes; not a decision.`)
  let json: unknown
  try {
    json = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    throw new BadInputError(`${file}: is not valid JSON; expected a decision written by svcops runs promote|abort.`)
  }
  return parseDecision(json, file)
}

/** Keeps `decision` in run folder `dir` unless one is there already; returns the one that counts. */
export function writeLocalDecision(dir: string, decision: Decision): Decision {
  const before = readLocalDecision(dir)
  if (before) return before
  writeFileAtomic(join(dir, DECISION_FILE), JSON.stringify(decision) + '\n', { mode: 0o600, sync: true })
  return decision
}

/** Where a waiting run looks for its decision. */
export interface DecisionSource {
  /** The decision taken for the run, if any yet; a decision refused is said once and not returned. */
  read(): Promise<Decision | undefined>
}

/** Reads the environment's store every this many looks at the run folder: one short session each. */
const STORE_EVERY = 2

/** The journal entry that began the run's open pause: the first `pause` start since the last pause ended. */
export function openPause(entries: readonly JournalEntry[]): { index: number; time: string } | undefined {
  let open: { index: number; time: string } | undefined
  entries.forEach((e, index) => {
    if (e.step !== 'pause') return
    if (e.status !== 'start') open = undefined
    else open ??= { index, time: e.time }
  })
  return open
}

/**
 * Why decision `d` (read from `where`) does not count for a run of `environment` paused since
 * `since`, or undefined when it counts. `afterPause`: the store's own verdict, when it has a clock.
 */
export function refusalOf(d: StoredDecision, where: string, environment: string, since: string | undefined): string | undefined {
  const what = `The ${d.decision} of ${where} (by ${d.by || 'nobody'} at ${d.at})`
  const keeps = 'refused; the run keeps waiting.'
  if (!d.by) return `${what} names no one its store authenticated (it was written before svcops recorded who decides); ${keeps}`
  if (d.environment !== environment)
    return `${what} is for environment '${d.environment ?? '(none)'}'; expected '${environment}', the run's: ${keeps}`
  const early = d.afterPause === false || (d.afterPause === undefined && since !== undefined && Date.parse(d.at) < Date.parse(since))
  if (early)
    return `${what} was taken before the run paused (at ${since ?? 'its pause'}); a decision counts only while the run waits: ${keeps}`
  return undefined
}

/**
 * The decisions of `journal`'s run: its folder's file, and every `STORE_EVERY`th read the
 * environment's `store` too. A store that cannot be read is said once; the folder still counts. A
 * decision refused (refusalOf) is said once, removed where it is kept, and the run keeps waiting.
 */
export function decisionsOf(journal: Journal, store?: RunStore): DecisionSource {
  let reads = 0
  let warned = false
  let pause: { index: number; time: string } | undefined
  const said = new Set<string>()
  const sayOnce = (text: string) => {
    if (said.has(text)) return
    said.add(text)
    events.warn(text)
  }
  const id = journal.run.id
  const environment = journal.run.environment
  return {
    async read() {
      // The pause began before the first read and stays open while the run waits.
      pause ??= openPause(journal.entries())
      const local = readLocalDecision(journal.dir)
      if (local) {
        const why = refusalOf(local, `run folder ${journal.dir}`, environment, pause?.time)
        if (!why) return local
        sayOnce(why)
        rmSync(join(journal.dir, DECISION_FILE), { force: true })
      }
      if (!store?.readDecision || reads++ % STORE_EVERY !== 0) return undefined
      try {
        const stored = await store.readDecision(id, pause?.index)
        if (!stored) return undefined
        if (stored.afterPause === undefined && !refusalOf({ ...stored, afterPause: true }, store.where, environment, undefined)) {
          // The pause's entry has not reached the store: its clock cannot tell yet, so the decision waits with the run.
          sayOnce(
            `The ${stored.decision} of ${store.where} waits until the run's pause is written there (the store's clock decides whether it came after).`,
          )
          return undefined
        }
        const why = refusalOf(stored, store.where, environment, pause?.time)
        if (!why) return stored
        sayOnce(why)
        await store.dismissDecision?.(id, stored)
        return undefined
      } catch (error) {
        if (!warned)
          events.warn(`The decisions kept in ${store.where} could not be read (${errorMessage(error)}); looking in the run folder only.`)
        warned = true
        return undefined
      }
    },
  }
}

/** How often a waiting run looks for its decision. */
export const DECISION_POLL_MS = 1000
