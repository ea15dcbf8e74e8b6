/**
 * Where runs are kept. Every run is written to its local folder first (synced: the crash tests and
 * `svcops resume` rely on it) and, as it goes, to a store in the environment itself — the recording
 * service's PostgreSQL (`svcops` schema), the live host (files under a svcops folder), a ConfigMap in
 * the namespace — so that every machine that can operate the environment reads the same history,
 * and a restore of the product's database cannot roll it back. One interface for both: the local
 * folder is a `RunStore` too, and a copy.
 *
 * A system names its environment's store in its description (`SystemDescription.runStore`).
 */
import type { JournalEntry } from './journal.ts'
import type { LockState } from './run-presence.ts'
import type { RunRecord } from './run-record.ts'

/** A person's decision for a run waiting after its canary (run-decision.ts): what, who and when. */
export interface Decision {
  decision: 'promote' | 'abort'
  /**
   * Who decided, as the place that keeps the decision authenticated them: the database role
   * (`current_user` of the session that inserted it), or the account of the process (its uid, not
   * `$USER`) that wrote the run folder's file.
   */
  by: string
  /** When, by the clock of the place that keeps it (the database server's for the store). */
  at: string
  /** The environment the decision was made for; a decision without one, or naming another, is refused. */
  environment?: string | undefined
  /** How `by` was established, for people: "database role", "local account". */
  identity?: string | undefined
  /**
   * When the stack names a run key (run-mac.ts): the decider's MAC with it over the run id, the
   * environment, the decision and `at` (the decider's clock, which may differ from the store's):
   * only who holds the key may decide.
   */
  seal?: { at: string; mac: string } | undefined
}

/** A decision as a store read it back: whether it was taken after the pause, by the store's own clock. */
export interface StoredDecision extends Decision {
  /**
   * True when the store's clock says it was taken after the run's open pause began (the pause's
   * journal entry reached the store), false when before; undefined when the store cannot tell
   * (the pause's entry is not there yet).
   */
  afterPause?: boolean | undefined
}

/** A run as a store keeps it: its record and its journal, oldest entry first. */
export interface StoredRun {
  record: RunRecord
  entries: JournalEntry[]
}

/** What one write carries: the record when it changed, and the journal's entries from `from` on (`all`: the whole journal). */
export interface RunWrite {
  record: RunRecord
  /** Index of the first entry not written before. */
  from: number
  /** Every entry so far (a store that rewrites a whole object needs them all; others take `all.slice(from)`). */
  all: JournalEntry[]
  /**
   * False when the record is as the last write left it (only entries were added): a store that
   * keeps the record apart may leave it alone. Absent: it may have changed.
   */
  recordChanged?: boolean
}

/** A place runs are kept. */
export interface RunStore {
  /** Where, for people: "svcops schema of recording at 10.0.0.5:5432". */
  readonly where: string
  /** Writes a run's record and new journal entries; idempotent (a retried write changes nothing more). */
  write(change: RunWrite): Promise<void>
  /** The records of `environment`'s runs, newest first. */
  listRecords(environment: string): Promise<RunRecord[]>
  /** One run with its journal, or undefined when this store does not hold it. */
  readRun(id: string): Promise<StoredRun | undefined>
  /** Forgets run `id` (a refusal that never began is not a run); nothing when the store does not hold it. */
  remove(id: string): Promise<void>
  /** Whether the environment's lock has a live holder for `run` (what the store can tell; else `unknown`). */
  lockState(run: RunRecord): Promise<LockState>
  /**
   * Keeps a person's decision for run `id`, waiting after its canary (`svcops runs promote|abort`),
   * where its holder on another machine reads it; who decided and when are the store's to say (the
   * authenticated identity, its clock), not the caller's. The first decision kept counts and is
   * returned, with `first` true when it is this one.
   */
  decide?(id: string, decision: Decision): Promise<{ kept: Decision; first: boolean }>
  /**
   * The decision kept for run `id`, if any; `pauseEntry`, the index of the journal entry that began
   * the run's open pause, lets the store say by its own clock whether it came after.
   */
  readDecision?(id: string, pauseEntry?: number): Promise<StoredDecision | undefined>
  /** Forgets decision `decision` of run `id`, refused by its holder, so that a valid one can be kept after it. */
  dismissDecision?(id: string, decision: Decision): Promise<void>
  /** Closes what the store holds open. */
  close(): Promise<void>
}

/** Newest first by the start's milliseconds, then by id (ids carry whole seconds). */
export function newestFirst(a: Pick<RunRecord, 'startedAt' | 'id'>, b: Pick<RunRecord, 'startedAt' | 'id'>): number {
  return b.startedAt.localeCompare(a.startedAt) || b.id.localeCompare(a.id)
}
