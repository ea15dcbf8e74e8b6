/**
 * The run journal. Every upgrade or rollback run has an id and a folder `.svcops/runs/<id>/` with
 * `run.json` (what the run is: environment, versions, hosts, backup, phase) and `journal.jsonl`
 * (one line per step start and end: outcome and what it changed). Lines are appended and synced
 * before the step's effect is relied on, so a run killed with SIGKILL leaves a journal that
 * `svcops resume ID` can continue from. Everything written passes through the redaction layer.
 */
import { randomBytes } from 'node:crypto'
import {
  appendFileSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { hostname, userInfo } from 'node:os'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import { BadInputError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { redactDeep } from '../core/redact.ts'
import type { ReportSection } from './step.ts'

export type RunKind = 'upgrade' | 'rollback' | 'backup' | 'verify'
export type RunPhase = 'running' | 'rolling-back' | 'succeeded' | 'failed' | 'rolled-back' | 'rollback-failed'

/** What a run is about; written at start, updated as facts are learned (backup id, fingerprints). */
export interface RunRecord {
  id: string
  kind: RunKind
  environment: string
  envFile: string
  /** Version every host should end on when the run succeeds ('' for a backup run). */
  targetVersion: string
  /** Version per host before the run (what a rollback returns to). */
  previousVersions: Record<string, string>
  /** Host names in rollout order (canary first). */
  hosts: string[]
  batchSize: number
  maxFail: string
  autoRollback: boolean
  phase: RunPhase
  startedAt: string
  finishedAt?: string
  /** Who runs it: user@machine and pid, for the lock and for people reading `runs list`. */
  holder: string
  pid: number
  backupId?: string
  fingerprintBefore?: string
  fingerprintAfter?: string
  /** Recording ids seen in the content snapshot before anything stopped. */
  snapshotIds?: string[]
  /** Why the run failed, in one sentence. */
  cause?: string
  /** End of the maintenance window (`--window`): no batch starts that would end after it. */
  deadline?: string
  /** Run this one rolls back (for rollback runs). */
  rollsBack?: string
  /**
   * The rollback was asked for (`svcops rollback ...`, `resume ID --rollback`) rather than started
   * by the failure policy: resumed after a kill, it ends as the asked-for rollback does (exit 0),
   * not as a failed run that was rolled back (exit 4).
   */
  rollbackRequested?: boolean
  /**
   * Which procedure of its kind the run follows, so `resume` continues it with the same one:
   * `downgrade` for `rollback recording --to V` across a schema change. Absent: the kind's own
   * (records written before the field existed are upgrades).
   */
  procedure?: 'downgrade'
  /** The part of the platform the run acts on; absent: the recording service. */
  system?: 'live'
  /** Live upgrades: the gates acknowledged with `--ack` (catalog change ids). */
  acks?: string[]
  /** Live upgrades: the one TCP endpoint kept when the pipeline lists several (`--tcp-endpoint`). */
  tcpEndpoint?: string
}

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
  /** What this finished step adds to the report (see `ReportSection`). */
  report?: ReportSection
}

/** `.svcops/runs` under the working directory, or `SVCOPS_RUNS_DIR`. */
export function runsDir(): string {
  return resolve(process.env.SVCOPS_RUNS_DIR ?? join('.svcops', 'runs'))
}

/** A sortable, unique run id: `20261122T031500Z-3fa9c1`. */
export function newRunId(now = new Date()): string {
  return `${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`
}

/** `user@machine` of this process. */
export function holderName(): string {
  let user = process.env.USER ?? process.env.LOGNAME
  try {
    user ??= userInfo().username
  } catch {
    user ??= `uid${process.getuid?.() ?? '?'}`
  }
  return `${user}@${hostname()}`
}

/**
 * A new run's record: its id, who runs it and since when, `phase: 'running'`, and the fields a kind
 * of run sets itself (`fields`). Kinds without hosts or versions leave those empty.
 */
export function newRunRecord(fields: Pick<RunRecord, 'kind' | 'environment' | 'envFile'> & Partial<RunRecord>): RunRecord {
  return {
    id: newRunId(),
    targetVersion: '',
    previousVersions: {},
    hosts: [],
    batchSize: 1,
    maxFail: '0',
    autoRollback: false,
    phase: 'running',
    startedAt: new Date().toISOString(),
    holder: holderName(),
    pid: process.pid,
    ...fields,
  }
}

/** Run folders are ours, but a person or a disk can damage them: every file read is checked and capped. */
const MAX_RECORD_BYTES = 1 << 20
const MAX_JOURNAL_BYTES = 64 << 20

const runRecordSchema = z.looseObject({
  id: z.string().regex(/^\d{8}T\d{6}Z-[0-9a-f]{6}$/),
  kind: z.enum(['upgrade', 'rollback', 'backup', 'verify']),
  environment: z.string(),
  envFile: z.string(),
  targetVersion: z.string(),
  previousVersions: z.record(z.string(), z.string()),
  hosts: z.array(z.string()),
  batchSize: z.number().int().min(1),
  maxFail: z.string(),
  autoRollback: z.boolean(),
  phase: z.enum(['running', 'rolling-back', 'succeeded', 'failed', 'rolled-back', 'rollback-failed']),
  startedAt: z.string(),
  holder: z.string(),
  pid: z.number().int(),
  procedure: z.literal('downgrade').optional(),
  system: z.literal('live').optional(),
  acks: z.array(z.string()).optional(),
  tcpEndpoint: z.string().optional(),
  rollbackRequested: z.boolean().optional(),
})

const entrySchema = z.looseObject({
  time: z.string(),
  step: z.string(),
  host: z.string().optional(),
  status: z.enum(['start', 'ok', 'failed', 'skipped']),
})

/** Reads and checks a run record; one sentence naming the file and the field when it is not one. */
export function readRunRecord(file: string): RunRecord {
  const size = statSync(file).size
  if (size > MAX_RECORD_BYTES) throw new BadInputError(`${file}: is ${size} bytes; a run record is at most ${MAX_RECORD_BYTES} bytes.`)
  let json: unknown
  try {
    json = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    throw new BadInputError(`${file}: is not valid JSON; expected a run record written by svcops.`)
  }
  const parsed = runRecordSchema.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new BadInputError(
      `${file}: ${issue?.path.join('.') || '(record)'}: ${issue?.message ?? 'invalid'}; expected a run record written by svcops.`,
    )
  }
  return parsed.data
}

const RUN_ID = /^\d{8}T\d{6}Z-[0-9a-f]{6}$/

function writeSynced(path: string, text: string): void {
  const tmp = `${path}.tmp`
  writeFileSync(tmp, text, { mode: 0o600 })
  const fd = openSync(tmp, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
}

/** An open journal: the run record plus its append-only step log. */
export class Journal {
  readonly dir: string
  run: RunRecord
  /** Entries of a journal kept in memory only (the dry run's), else undefined. */
  private readonly memory: JournalEntry[] | undefined
  /** The whole lines of journal.jsonl read so far (it only grows): a read parses only what was appended since. */
  private read: { bytes: number; entries: JournalEntry[] } = { bytes: 0, entries: [] }

  private constructor(dir: string, run: RunRecord, memory?: JournalEntry[]) {
    this.dir = dir
    this.run = run
    this.memory = memory
  }

  /** A journal that writes nothing: the dry run goes through the same steps with it. */
  static inMemory(run: RunRecord, base = runsDir(), entries: JournalEntry[] = []): Journal {
    return new Journal(join(base, run.id), run, [...entries])
  }

  /** Creates the folder of a new run and writes its record. */
  static create(run: RunRecord, base = runsDir()): Journal {
    const dir = join(base, run.id)
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const journal = new Journal(dir, run)
    journal.save()
    return journal
  }

  /** Opens the journal of run `id`; a clear error when there is none. */
  static open(id: string, base = runsDir()): Journal {
    if (!RUN_ID.test(id))
      throw new BadInputError(`Run id '${id}' is not valid; expected an id like 20261122T031500Z-3fa9c1 (see 'svcops runs list').`)
    const file = join(base, id, 'run.json')
    if (!existsSync(file)) throw new BadInputError(`There is no run '${id}' in ${base}.`, `List the runs with: svcops runs list`)
    return new Journal(join(base, id), readRunRecord(file))
  }

  /** Updates fields of the run record and writes it (synced). */
  update(fields: Partial<RunRecord>): void {
    this.run = { ...this.run, ...fields }
    this.save()
  }

  private save(): void {
    if (this.memory) return
    writeSynced(join(this.dir, 'run.json'), JSON.stringify(redactDeep(this.run), null, 2) + '\n')
  }

  /** Appends one entry and syncs it: after this returns, a kill cannot lose it. */
  append(entry: Omit<JournalEntry, 'time'>): JournalEntry {
    const full: JournalEntry = redactDeep({ time: new Date().toISOString(), ...entry })
    if (this.memory) {
      this.memory.push(full)
      return full
    }
    const file = join(this.dir, 'journal.jsonl')
    appendFileSync(file, JSON.stringify(full) + '\n', { mode: 0o600 })
    const fd = openSync(file, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    crashIfAsked(full)
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
    const out: JournalEntry[] = []
    for (const [i, line] of lines.entries()) {
      const entry = parseEntry(line)
      if (entry) {
        out.push(entry)
        continue
      }
      // Only the last line can be torn by a kill; everything before it was synced whole.
      if (i === lines.length - 1 && !tail.trim()) return [...this.read.entries, ...out]
      throw new BadInputError(
        `${file}:${this.read.entries.length + i + 1}: is not a journal entry; the journal was changed by something other than svcops.`,
      )
    }
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

/** Every run in `base`, newest first. Unreadable folders are skipped (they are not runs). */
export function listRuns(base = runsDir()): RunRecord[] {
  if (!existsSync(base)) return []
  const runs: RunRecord[] = []
  for (const id of readdirSync(base).filter((d) => RUN_ID.test(d))) {
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

/** True when the process `pid` on this machine is alive (a run's holder that died is not). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** True when a run's phase is final (nothing left to resume). */
export function isFinished(run: RunRecord): boolean {
  return run.phase !== 'running' && run.phase !== 'rolling-back'
}

/**
 * The crash tests' failpoint: with `SVCOPS_CRASH_AFTER=step` or `step@host` in svcops' environment,
 * the process kills itself with SIGKILL right after that step's `ok` line is synced — the state a
 * power cut or an OOM kill leaves at that step boundary, at the exact boundary however busy the
 * machine is (a kill from outside can come late, after the run has gone on or even ended).
 */
function crashIfAsked(entry: Omit<JournalEntry, 'time'>): void {
  const at = process.env.SVCOPS_CRASH_AFTER
  if (!at || entry.status !== 'ok') return
  const [step, host] = at.split('@')
  if (entry.step === step && entry.host === host) process.kill(process.pid, 'SIGKILL')
}
