/**
 * A person's decision for a run that waits after its canary (`--pause-after-canary`): `svcops runs
 * promote ID` lets it go on, `svcops runs abort ID` makes it roll back as a failure after the canary
 * would. The decision is kept where the waiting run looks for it, every second: `decision.json` in
 * its run folder (a person on the same machine) and its environment's store (a person anywhere,
 * `RunStore.decide`). It is kept, not sent: a run killed while it waited and resumed later finds the
 * decision taken meanwhile, and waits again when there is none.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { z } from 'zod'
import { writeFileAtomic } from '../core/atomic-write.ts'
import { BadInputError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { Journal } from './journal.ts'
import type { Decision, RunStore } from './run-store.ts'

export type { Decision } from './run-store.ts'

const DECISION_FILE = 'decision.json'
const MAX_DECISION_BYTES = 4096

const decisionSchema = z.object({ decision: z.enum(['promote', 'abort']), by: z.string(), at: z.string() })

/** A decision read from anywhere (`where` names it): checked, one sentence when it is not one. */
export function parseDecision(json: unknown, where: string): Decision {
  const parsed = decisionSchema.safeParse(json)
  if (!parsed.success) throw new BadInputError(`${where}: is not a decision; expected {"decision": "promote" | "abort", "by", "at"}.`)
  return parsed.data
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
  /** The decision taken for the run, if any yet. */
  read(): Promise<Decision | undefined>
}

/** Reads the environment's store every this many looks at the run folder: one short session each. */
const STORE_EVERY = 2

/**
 * The decisions of `journal`'s run: its folder's file, and every `STORE_EVERY`th read the
 * environment's `store` too. A store that cannot be read is said once; the folder still counts.
 */
export function decisionsOf(journal: Journal, store?: RunStore): DecisionSource {
  let reads = 0
  let warned = false
  return {
    async read() {
      const local = readLocalDecision(journal.dir)
      if (local || !store?.readDecision || reads++ % STORE_EVERY !== 0) return local
      try {
        return await store.readDecision(journal.run.id)
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
