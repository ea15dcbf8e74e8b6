/**
 * A run's copy in its environment, written as the run goes. The local folder is written first and
 * synced (a kill loses nothing there); the environment's store is written after, in order, one
 * batch at a time, and the engine waits for it at each step boundary at most `STEP_DEADLINE_MS`:
 * a slow store never holds a step longer than that — its write goes on in the background and the
 * next ones queue behind it. A write the store refuses or that fails is never silently lost: the
 * next step boundary tries once more (`retry`) and, when that fails too, the engine stops the run
 * there with the store's answer (a rollback under way goes on, said once); at the run's end one
 * more attempt writes the whole record and journal, and a failure then fails the command.
 */
import { errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { JournalEntry } from './journal.ts'
import type { RunRecord } from './run-record.ts'
import type { RunStore } from './run-store.ts'

/** How long a step boundary waits for the environment's copy. */
export const STEP_DEADLINE_MS = 2_000
/** How long the run's end waits for the environment's copy (the last chance to make it whole). */
export const END_DEADLINE_MS = 15_000

/** The environment's copy of one run. */
export class RunMirror {
  readonly store: RunStore
  private record: RunRecord
  private readonly all: JournalEntry[]
  private written = 0
  private recordDirty = true
  private chain: Promise<void> = Promise.resolve()
  private failed = false
  /** The store's answer to the first write that failed (since the last success). */
  private failure: string | undefined

  constructor(store: RunStore, record: RunRecord, entries: JournalEntry[]) {
    this.store = store
    this.record = record
    this.all = [...entries]
    // The record and the journal so far (a resumed run's, or one the store never got whole).
    this.kick()
  }

  /** The record changed. */
  saveRecord(record: RunRecord): void {
    this.record = record
    this.recordDirty = true
    this.kick()
  }

  /** An entry was appended (and synced locally). */
  addEntry(entry: JournalEntry): void {
    this.all.push(entry)
    this.kick()
  }

  /** False once a write failed (until a retry succeeds). */
  get healthy(): boolean {
    return !this.failed
  }

  /**
   * A step boundary after a failed write: every write so far tried once more, within `deadlineMs`.
   * Undefined when the store now holds them (or nothing failed); else one sentence naming the store
   * and its answer. A write still under way when the deadline passes is not a failure.
   */
  async retry(deadlineMs: number): Promise<string | undefined> {
    if (!this.failed) return undefined
    this.failed = false
    this.written = 0
    this.recordDirty = true
    this.kick(true)
    await this.flush(deadlineMs)
    return this.failed ? this.failureSentence() : undefined
  }

  /** After a write failed (and no retry made it whole yet): the store and its answer, in one sentence. */
  get failedWrite(): string | undefined {
    return this.failed ? this.failureSentence() : undefined
  }

  /** What failed, in one sentence: the store and its answer. */
  failureSentence(): string {
    return `The run's record could not be written to ${this.store.where}: ${this.failure ?? 'no answer'}`
  }

  /** Waits for the writes so far, at most `deadlineMs`; true when they are all in the environment. */
  async flush(deadlineMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), deadlineMs)
      timer.unref()
    })
    const done = await Promise.race([this.chain.then(() => 'done' as const), late])
    clearTimeout(timer)
    return done === 'done' && !this.failed && this.written === this.all.length && !this.recordDirty
  }

  /** The run's end: one more attempt to write everything, even after a failure, within `deadlineMs`. */
  async finish(deadlineMs: number): Promise<boolean> {
    if (this.failed) {
      this.failed = false
      this.written = 0
      this.recordDirty = true
      this.kick(true)
    }
    const ok = await this.flush(deadlineMs)
    if (ok && this.wasFailed) events.info(`The run's record and journal are now complete in ${this.store.where}.`)
    return ok
  }

  private wasFailed = false
  private discarded = false

  /**
   * A run refused before it began leaves no record in the environment: writes stop, the one under
   * way ends, then the store forgets the run. False when that did not happen within `deadlineMs`
   * (said once: the record then stays in the environment as a failed run would).
   */
  async discard(deadlineMs: number): Promise<boolean> {
    this.discarded = true
    const removed = this.chain.then(() => this.store.remove(this.record.id))
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), deadlineMs)
      timer.unref()
    })
    const done = await Promise.race([removed.then(() => 'done' as const), late]).catch((error: unknown) => {
      events.warn(`The refused run's record could not be removed from ${this.store.where}: ${errorMessage(error)}.`)
      return 'failed' as const
    })
    clearTimeout(timer)
    if (done === 'late') events.warn(`The refused run's record is still being removed from ${this.store.where}.`)
    return done === 'done'
  }

  private kick(retry = false): void {
    if (this.discarded || (this.failed && !retry)) return
    this.chain = this.chain.then(() => this.drain())
  }

  private async drain(): Promise<void> {
    if (this.discarded || this.failed || (!this.recordDirty && this.written === this.all.length)) return
    const from = this.written
    const upTo = this.all.length
    const recordChanged = this.recordDirty
    this.recordDirty = false
    try {
      await this.store.write({ record: this.record, from, all: this.all.slice(0, upTo), recordChanged })
      this.written = upTo
      this.failure = undefined
    } catch (error) {
      this.recordDirty = true
      this.failure = errorMessage(error).replace(/\.$/, '')
      if (!this.wasFailed) events.warn(`${this.failureSentence()}; tried again at the next step boundary.`)
      this.failed = true
      this.wasFailed = true
    }
  }
}
