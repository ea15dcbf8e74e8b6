/**
 * The run journal. Every upgrade or rollback run has an id and a folder `.svcops/runs/<id>/` with
 * `run.json` (what the run is: environment, versions, hosts, backup, phase) and `journal.jsonl`
 * (one line per step start and end: outcome and what it changed). Lines are appended and synced
 * before the step's effect is relied on, so a run killed with SIGKILL leaves a journal that
 * `svcops resume ID` can continue from. Everything written passes through the redaction layer.
 */
import { closeSync, constants, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readSync, statSync, writeSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import { writeFileAtomic } from '../core/atomic-write.ts'
import { BadInputError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { redactDeep } from '../core/redact.ts'
import { isRunId, readRunRecord, type RunParams, type RunRecord } from './run-record.ts'

export type StepOutcome = 'start' | 'ok' | 'failed' | 'skipped'

/** One line of `journal.jsonl`. */
export interface JournalEntry {
  time: string
  step: string
  host?: string
  status: StepOutcome
  /** What the step changed ("stopped svc-recording", "installed 2.0.0 over 1.5.0"). */
  changed?: string[]
  detail?: string
  durationMs?: number
  /** Facts the step learned that later steps (or a resume) need. */
  data?: Record<string, unknown>
  /** The step makes the service unavailable: from its start on, a failure is rolled back. */
  disruptive?: boolean
  /** What this finished step adds to the report (a section a system contributes, or `verified`: see `StepReport`). */
  report?: string
}

/** `.svcops/runs` under the working directory, or `SVCOPS_RUNS_DIR`. */
export function runsDir(): string {
  return resolve(process.env.SVCOPS_RUNS_DIR ?? join('.svcops', 'runs'))
}

/** Run folders are ours, but a person or a disk can damage them: every file read is checked and capped. */
const MAX_JOURNAL_BYTES = 64 << 20

const entrySchema = z.looseObject({
  time: z.string(),
  step: z.string(),
  host: z.string().optional(),
  status: z.enum(['start', 'ok', 'failed', 'skipped']),
})

function writeSynced(path: string, text: string): void {
  writeFileAtomic(path, text, { mode: 0o600, sync: true })
}

// The journal is appended to, never through a link: a run folder is ours (created 0700 by `create`).
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW

/** The environment's copy of a journal (run-mirror.ts), told of every write after it is synced locally. */
export interface JournalCopy {
  saveRecord(record: RunRecord): void
  addEntry(entry: JournalEntry): void
  /** Waits for the copy at most `deadlineMs`; true when it is complete. */
  flush(deadlineMs: number): Promise<boolean>
  /** The run's end: a last attempt to make the copy whole. */
  finish(deadlineMs: number): Promise<boolean>
  /** A step boundary: failed writes tried once more; the failure's sentence when they fail again. */
  retry(deadlineMs: number): Promise<string | undefined>
  /** The failure's sentence while a write has failed (a late write is not one). */
  readonly failedWrite: string | undefined
  /** A run refused before it began: no more writes, and what was written removed, within `deadlineMs`. */
  discard(deadlineMs: number): Promise<boolean>
}

/** Told of an entry once it is synced (never of the dry run's, which nothing can lose): `dir` is its run's folder. */
export type JournalObserver = (entry: JournalEntry, dir: string) => void

/**
 * The process's journal observers. The journal itself tells nobody; what watches every synced line
 * is installed at the edge by whoever needs it (the crash tests' failpoint, given to a child svcops
 * with `--import`, kills it right after a chosen line: test/support/crash-failpoint.ts).
 */
const observers = new Set<JournalObserver>()

/** Adds `observer` to every journal of this process; returns what removes it. */
export function observeJournals(observer: JournalObserver): () => void {
  observers.add(observer)
  return () => {
    observers.delete(observer)
  }
}

/** An open journal: the run record plus its append-only step log. `P`: the system's params of the record. */
export class Journal<P extends RunParams = RunParams> {
  readonly dir: string
  run: RunRecord<P>
  /** Entries of a journal kept in memory only (the dry run's), else undefined. */
  private readonly memory: JournalEntry[] | undefined
  /** The whole lines of journal.jsonl read so far (it only grows): a read parses only what was appended since. */
  private read: { bytes: number; entries: JournalEntry[] } = { bytes: 0, entries: [] }
  /** The environment's copy, when the run has one. */
  private copy: JournalCopy | undefined

  private constructor(dir: string, run: RunRecord<P>, memory?: JournalEntry[]) {
    this.dir = dir
    this.run = run
    this.memory = memory
  }

  /** A journal that writes nothing: the dry run goes through the same steps with it. */
  static inMemory<P extends RunParams>(run: RunRecord<P>, base = runsDir(), entries: JournalEntry[] = []): Journal<P> {
    return new Journal(join(base, run.id), run, [...entries])
  }

  /** Creates the folder of a new run and writes its record. */
  static create<P extends RunParams>(run: RunRecord<P>, base = runsDir()): Journal<P> {
    const dir = join(base, run.id)
    mkdirSync(base, { recursive: true, mode: 0o700 })
    // Not recursive: a folder of this name that exists already (planted) is refused, never reused.
    mkdirSync(dir, { mode: 0o700 })
    const journal = new Journal(dir, run)
    journal.save()
    return journal
  }

  /** Opens the journal of run `id`; a clear error when there is none. */
  static open(id: string, base = runsDir()): Journal {
    if (!isRunId(id))
      throw new BadInputError(`Run id '${id}' is not valid; expected an id like 20261122T031500Z-3fa9c1 (see 'svcops runs list').`)
    const file = join(base, id, 'run.json')
    if (!existsSync(file)) throw new BadInputError(`There is no run '${id}' in ${base}.`, `List the runs with: svcops runs list`)
    return new Journal(join(base, id), readRunRecord(file))
  }

  /** Keeps `copy` told of every write from now on (the environment's copy of the run). */
  keepCopy(copy: JournalCopy): void {
    this.copy = copy
  }

  /** Waits for the environment's copy at most `deadlineMs` (a step boundary); true when it is complete or there is none. */
  async flushCopy(deadlineMs: number): Promise<boolean> {
    return this.copy ? this.copy.flush(deadlineMs) : true
  }

  /** A step boundary: the environment's copy tried again after a failed write; the failure's sentence when it fails again. */
  async retryCopy(deadlineMs: number): Promise<string | undefined> {
    return this.copy ? this.copy.retry(deadlineMs) : undefined
  }

  /** The failure's sentence while the environment's copy lacks a write its store refused or failed. */
  get copyFailure(): string | undefined {
    return this.copy?.failedWrite
  }

  /** The run's end: a last attempt to make the environment's copy whole, within `deadlineMs`. */
  async finishCopy(deadlineMs: number): Promise<boolean> {
    return this.copy ? this.copy.finish(deadlineMs) : true
  }

  /** A refused run: the environment's copy removed (within `deadlineMs`); true when it is gone or there is none. */
  async discardCopy(deadlineMs: number): Promise<boolean> {
    return this.copy ? this.copy.discard(deadlineMs) : true
  }

  /**
   * Writes a run kept elsewhere (the environment's store) into a new local folder: the record and
   * its journal as they are. `svcops resume` and `rollback --run` then continue it from here.
   */
  static createCopy(run: RunRecord, entries: JournalEntry[], base = runsDir()): Journal {
    const journal = Journal.create(run, base)
    writeSynced(join(journal.dir, 'journal.jsonl'), entries.map((e) => JSON.stringify(redactDeep(e)) + '\n').join(''))
    return journal
  }

  /** Updates fields of the run record's core and writes it (synced). */
  update(fields: Partial<Omit<RunRecord<P>, 'params'>>): void {
    this.run = { ...this.run, ...fields }
    this.save()
  }

  /** Updates the system's params of the run record and writes it (synced). */
  updateParams(fields: Partial<P>): void {
    this.run = { ...this.run, params: { ...this.run.params, ...fields } }
    this.save()
  }

  /** The same journal with its record's params checked by a system's schema (see `withParams`). */
  typed<Q extends RunParams>(run: RunRecord<Q>): Journal<Q> {
    const journal = this as unknown as Journal<Q>
    journal.run = run
    return journal
  }

  private save(): void {
    if (this.memory) return
    const run = redactDeep(this.run)
    writeSynced(join(this.dir, 'run.json'), JSON.stringify(run, null, 2) + '\n')
    this.copy?.saveRecord(run)
  }

  /** Appends one entry and syncs it: after this returns, a kill cannot lose it. */
  append(entry: Omit<JournalEntry, 'time'>): JournalEntry {
    const full: JournalEntry = redactDeep({ time: new Date().toISOString(), ...entry })
    if (this.memory) {
      this.memory.push(full)
      return full
    }
    const file = join(this.dir, 'journal.jsonl')
    const fd = openSync(file, APPEND, 0o600)
    try {
      writeSync(fd, JSON.stringify(full) + '\n')
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    this.copy?.addEntry(full)
    for (const observer of observers) observer(full, this.dir)
    return full
  }

  /**
   * Every entry so far, oldest first. A torn last line (killed mid-write) is ignored. Lines read
   * before are not parsed again: a rollout asks on every host, and the journal grows with the fleet.
   */
  entries(): JournalEntry[] {
    if (this.memory) return [...this.memory]
    const file = join(this.dir, 'journal.jsonl')
    if (!existsSync(file)) return []
    const size = statSync(file).size
    if (size > MAX_JOURNAL_BYTES) throw new BadInputError(`${file}: is ${size} bytes; a journal is at most ${MAX_JOURNAL_BYTES} bytes.`)
    if (size < this.read.bytes) this.read = { bytes: 0, entries: [] } // replaced, not appended to: read it all
    const fresh = readFrom(file, this.read.bytes, size)
    const lines = fresh.toString('utf8').split('\n')
    const tail = lines.pop() ?? '' // after the last newline: empty, or a line still (or forever) torn
    while (lines.length && !lines.at(-1)?.trim()) lines.pop()
    const { entries: out, torn } = parseLines(lines, file, this.read.entries.length, !tail.trim())
    if (torn) return [...this.read.entries, ...out]
    const whole = lines.length ? Buffer.byteLength(lines.join('\n')) + 1 : 0 // blank lines at the end stay unread
    this.read = { bytes: this.read.bytes + whole, entries: [...this.read.entries, ...out] }
    const last = tail.trim() ? parseEntry(tail) : undefined
    return last ? [...this.read.entries, last] : [...this.read.entries]
  }

  /** The last `ok` entry of `step` (on `host`), if the step finished in this run. */
  finished(step: string, host?: string): JournalEntry | undefined {
    return this.entries()
      .filter((e) => e.step === step && e.host === host && e.status === 'ok')
      .at(-1)
  }

  /** True once a disruptive step (a stop) has started: the line between "nothing changed" and a rollback. */
  disrupted(): boolean {
    return this.entries().some((e) => e.disruptive === true)
  }

  /** Hosts on which a disruptive step started, in the order of `hosts`. */
  disruptedHosts(hosts: string[]): string[] {
    const touched = new Set(this.entries().flatMap((e) => (e.disruptive && e.host ? [e.host] : [])))
    return hosts.filter((h) => touched.has(h))
  }

  /** Path of a file in the run folder (report.json, report.md, exports). */
  file(name: string): string {
    return join(this.dir, name)
  }
}

/** Bytes `start` to `end` of `file`. */
function readFrom(file: string, start: number, end: number): Buffer {
  const fd = openSync(file, 'r')
  try {
    const buffer = Buffer.alloc(end - start)
    return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, start))
  } finally {
    closeSync(fd)
  }
}

/** One journal line as an entry, or undefined when it is not one. */
function parseEntry(line: string): JournalEntry | undefined {
  try {
    const parsed = entrySchema.safeParse(JSON.parse(line))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/**
 * The entries of a journal's text (`where` names it in errors), oldest first. A torn last line
 * (killed mid-write) is ignored; any other line that is not an entry is refused.
 */
export function parseJournalLines(text: string, where: string): JournalEntry[] {
  const lines = text.split('\n')
  while (lines.length && !lines.at(-1)?.trim()) lines.pop()
  return parseLines(lines, where, 0, true).entries
}

/**
 * Journal lines as entries; `before`: entries read before them (for the line numbers in errors).
 * Only the last line may be torn by a kill (when `lastMayBeTorn`): everything before it was synced
 * whole, so any other line that is not an entry is refused.
 */
function parseLines(lines: string[], where: string, before: number, lastMayBeTorn: boolean): { entries: JournalEntry[]; torn: boolean } {
  const entries: JournalEntry[] = []
  for (const [i, line] of lines.entries()) {
    const entry = parseEntry(line)
    if (entry) {
      entries.push(entry)
      continue
    }
    if (lastMayBeTorn && i === lines.length - 1) return { entries, torn: true }
    throw new BadInputError(`${where}:${before + i + 1}: is not a journal entry; the journal was changed by something other than svcops.`)
  }
  return { entries, torn: false }
}

/** Every run in `base`, newest first. Unreadable folders are skipped (they are not runs). */
export function listRuns(base = runsDir()): RunRecord[] {
  if (!existsSync(base)) return []
  const runs: RunRecord[] = []
  for (const id of readdirSync(base).filter(isRunId)) {
    const file = join(base, id, 'run.json')
    if (!existsSync(file)) continue
    try {
      runs.push(readRunRecord(file))
    } catch (error) {
      // One damaged run folder must not hide the others from `runs list` or `rollback`.
      events.warn(`Skipping ${file}: ${errorMessage(error)}`)
    }
  }
  // Newest first by the start's milliseconds: ids carry whole seconds, and two runs may start in one.
  return runs.sort((a, b) => b.startedAt.localeCompare(a.startedAt) || b.id.localeCompare(a.id))
}
