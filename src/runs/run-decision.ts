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
 * decision can follow), and the run keeps waiting. When the stack names a run key (run-mac.ts),
 * a decision must also carry its MAC with that key (`decisionMac`): who may decide is then who
 * holds the key, whatever the store lets write. The MAC binds the pause the decision answers (the
 * index and time of the entry that began it), so a decision kept for an earlier pause, or for one a
 * forged record claimed, and saved and put back later, answers no other; a MAC made before the pause
 * began is refused too.
 */
import { timingSafeEqual } from 'node:crypto'
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs'
import { hostname, userInfo } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { loadEnvironmentFile } from '../config/load.ts'
import { writeFileAtomic } from '../core/atomic-write.ts'
import { BadInputError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { Journal, JournalEntry } from './journal.ts'
import { runKeyOf, runMac } from './run-mac.ts'
import type { RunRecord } from './run-record.ts'
import type { Decision, RunStore, StoredDecision } from './run-store.ts'

export type { Decision } from './run-store.ts'

const DECISION_FILE = 'decision.json'
const MAX_DECISION_BYTES = 4096

const sealSchema = z.object({ at: z.string().max(64), mac: z.string().max(128) })
const decisionSchema = z.object({
  decision: z.enum(['promote', 'abort']),
  by: z.string(),
  at: z.string(),
  environment: z.string().optional(),
  identity: z.string().optional(),
  seal: sealSchema.optional(),
})
const storedSchema = z.object({ decision: z.enum(['promote', 'abort']), seal: sealSchema.optional() })

/** A decision read from a run folder (`where` names it): checked, one sentence when it is not one. */
export function parseDecision(json: unknown, where: string): Decision {
  const parsed = decisionSchema.safeParse(json)
  if (!parsed.success)
    throw new BadInputError(`${where}: is not a decision; expected {"decision": "promote" | "abort", "by", "at", "environment"}.`)
  return parsed.data
}

/** What a stored decision decides, and its seal (who and when are the store's columns, not its JSON): one sentence when it is not one. */
export function parseStoredDecision(json: unknown, where: string): Pick<Decision, 'decision' | 'seal'> {
  const parsed = storedSchema.safeParse(json)
  if (!parsed.success) throw new BadInputError(`${where}: is not a decision; expected {"decision": "promote" | "abort", "seal"?}.`)
  return parsed.data
}

/** A run's open pause: the index of the journal entry that began it, and that entry's time. */
export interface PauseRef {
  index: number
  time: string
}

/**
 * The MAC with run key `key` of decision `decision` for run `runId` of `environment`, taken at `at`
 * (the decider's clock), answering the pause `pause` (none: a decision no pause accepts).
 */
export function decisionMac(
  key: Buffer,
  runId: string,
  environment: string,
  decision: Decision['decision'],
  at: string,
  pause: PauseRef | undefined,
): string {
  // `content` is no record's nor entry's shape, so no MAC of one passes for another's.
  const answers = pause ? { index: pause.index, time: pause.time } : null
  return runMac(key, { environment, runId, content: { decision: { decision, at, pause: answers } } })
}

/**
 * A decision taken here, for run folder files: the account is this process's (its uid's name, not
 * `$USER`, which any caller sets), on this machine; the store records its own identity instead.
 * With the environment's run key `key`, it carries its MAC, bound to the run's open pause `pause`.
 */
export function localDecision(
  decision: Decision['decision'],
  environment: string,
  runId?: string,
  key?: Buffer,
  pause?: PauseRef,
): Decision {
  let account: string
  try {
    account = userInfo().username
  } catch {
    account = `uid${process.getuid?.() ?? '?'}`
  }
  const at = new Date().toISOString()
  const seal = key && runId ? { seal: { at, mac: decisionMac(key, runId, environment, decision, at, pause) } } : {}
  return { decision, by: `${account}@${hostname()}`, at, environment, identity: 'local account', ...seal }
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
export function openPause(entries: readonly JournalEntry[]): PauseRef | undefined {
  let open: PauseRef | undefined
  entries.forEach((e, index) => {
    if (e.step !== 'pause') return
    if (e.status !== 'start') open = undefined
    else open ??= { index, time: e.time }
  })
  return open
}

/** What the holder checks a decision against: its run, and the run key when the stack names one. */
export interface DecisionCheck {
  runId: string
  environment: string
  /** When the pause began, by the run's clock (a store without a clock of its own is compared with it). */
  since: string | undefined
  /** The open pause a decision's MAC must answer (openPause of the run's journal). */
  pause?: PauseRef
  key: Buffer | undefined
}

/**
 * Why decision `d` (read from `where`) does not count for the run `check` names, or undefined when
 * it counts. `afterPause`: the store's own verdict, when it has a clock.
 */
export function refusalOf(d: StoredDecision, where: string, check: DecisionCheck): string | undefined {
  const { environment, since, key } = check
  const what = `The ${d.decision} of ${where} (by ${d.by || 'nobody'} at ${d.at})`
  const keeps = 'refused; the run keeps waiting.'
  if (!d.by) return `${what} names no one its store authenticated (it was written before svcops recorded who decides); ${keeps}`
  if (d.environment !== environment)
    return `${what} is for environment '${d.environment ?? '(none)'}'; expected '${environment}', the run's: ${keeps}`
  if (key && !sealHolds(d, check.runId, environment, key, check.pause))
    return `${what} carries no valid MAC of the run key (svcops:runs.key, or the one derived from the backup key) for this run's pause (entry ${check.pause?.index ?? '?'}); only who holds it may decide, and only for the pause it answers: ${keeps}`
  // The decider's own time, under the MAC: a seal made before the pause began answers none.
  if (key && d.seal && check.pause && !(Date.parse(d.seal.at) >= Date.parse(check.pause.time)))
    return `${what} was sealed at ${d.seal.at}, before the run paused (at ${check.pause.time}); a decision counts only while the run waits: ${keeps}`
  const early = d.afterPause === false || (d.afterPause === undefined && since !== undefined && Date.parse(d.at) < Date.parse(since))
  if (early)
    return `${what} was taken before the run paused (at ${since ?? 'its pause'}); a decision counts only while the run waits: ${keeps}`
  return undefined
}

function sealHolds(d: Decision, runId: string, environment: string, key: Buffer, pause: PauseRef | undefined): boolean {
  if (!d.seal) return false
  const expected = Buffer.from(decisionMac(key, runId, environment, d.decision, d.seal.at, pause))
  const given = Buffer.from(d.seal.mac)
  return expected.length === given.length && timingSafeEqual(expected, given)
}

/** The run key of the stack `run` was started with (none when it names none); a key that cannot be read is an error. */
function runKeyOfRun(run: Pick<RunRecord, 'envFile' | 'environment'>): Buffer | undefined {
  return runKeyOf(loadEnvironmentFile(run.envFile, run.environment))
}

/**
 * The decisions of `journal`'s run: its folder's file, and every `STORE_EVERY`th read the
 * environment's `store` too. A store that cannot be read is said once; the folder still counts. A
 * decision refused (refusalOf) is said once, removed where it is kept, and the run keeps waiting.
 */
export function decisionsOf(
  journal: Journal,
  store?: RunStore,
  runKey: () => Buffer | undefined = () => runKeyOfRun(journal.run),
): DecisionSource {
  let reads = 0
  let warned = false
  let pause: PauseRef | undefined
  let check: DecisionCheck | undefined
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
      try {
        check ??= { runId: id, environment, since: pause?.time, pause, key: runKey() }
      } catch (error) {
        // Without the key nothing can be checked: no decision counts until it can be read.
        sayOnce(`The run key could not be read (${errorMessage(error)}); no decision counts until it can be: the run keeps waiting.`)
        return undefined
      }
      const local = readLocalDecision(journal.dir)
      if (local) {
        const why = refusalOf(local, `run folder ${journal.dir}`, check)
        if (!why) return local
        sayOnce(why)
        rmSync(join(journal.dir, DECISION_FILE), { force: true })
      }
      if (!store?.readDecision || reads++ % STORE_EVERY !== 0) return undefined
      try {
        const stored = await store.readDecision(id, pause?.index)
        if (!stored) return undefined
        if (stored.afterPause === undefined && !refusalOf({ ...stored, afterPause: true }, store.where, check)) {
          // The pause's entry has not reached the store: its clock cannot tell yet, so the decision waits with the run.
          sayOnce(
            `The ${stored.decision} of ${store.where} waits until the run's pause is written there (the store's clock decides whether it came after).`,
          )
          return undefined
        }
        const why = refusalOf(stored, store.where, check)
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
