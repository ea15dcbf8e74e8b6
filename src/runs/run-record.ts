/**
 * What a run is, as `run.json` keeps it: a core every system shares — its id, kind, the system and
 * environment it acts on, its phase, who holds it, when it started and ended, how it ended — and
 * `params`, the system's own facts (the recording service's hosts, batches and backup; the live
 * system's gate acknowledgements...), which that system's schema checks (src/runs/run-system.ts).
 * The engine reads and writes the core only.
 *
 * Records written before the core existed (every field flat, no `system`: the recording service)
 * are read as the core plus `params` (migrated on read), so a run interrupted before an upgrade of
 * svcops still resumes after it.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { hostname, userInfo } from 'node:os'
import { z } from 'zod'
import { BadInputError } from '../core/errors.ts'

/** What a run does; `restore`, `delete` and `prune` are the backup commands that change what runs depend on. */
export type RunKind = 'upgrade' | 'rollback' | 'backup' | 'verify' | 'rehearse' | 'restore' | 'delete' | 'prune' | 'psk-rotate'
/**
 * `interrupted`: stopped at a safe point on a signal, or its holder's process is gone (shown so by
 * `runs list|show`); unfinished, like `running`: `svcops resume ID [--rollback]` finishes it.
 */
export type RunPhase = 'running' | 'rolling-back' | 'interrupted' | 'succeeded' | 'failed' | 'rolled-back' | 'rollback-failed' | 'no-op'

/** A system's own facts of a run, as the engine sees them: checked by the system's schema, never read here. */
export type RunParams = Record<string, unknown>

/** What a run is; written at start, updated as facts are learned. */
export interface RunRecord<P extends RunParams = RunParams> {
  id: string
  kind: RunKind
  /** The part of the platform the run acts on, by its system's name (`recording`, `live`). */
  system: string
  environment: string
  /** The stack file the run was started with (read again to continue it). */
  envFile: string
  /** The version the run moves to, for the kinds that move one (shown by `runs list`, notifications, the report). */
  targetVersion: string
  /** On failure after the first disruptive step, the playbook's rollback runs (not with `--no-auto-rollback`). */
  autoRollback: boolean
  phase: RunPhase
  startedAt: string
  finishedAt?: string
  /** Who runs it: user@machine and pid, for the lock and for people reading `runs list`. */
  holder: string
  pid: number
  /** Why the run failed, in one sentence. */
  cause?: string
  /**
   * The rollback was asked for (`svcops rollback ...`, `resume ID --rollback`) rather than started
   * by the failure policy: resumed after a kill, it ends as the asked-for rollback does (exit 0),
   * not as a failed run that was rolled back (exit 4).
   */
  rollbackRequested?: boolean
  /** The phase an `interrupted` run was in when it stopped (`running` or `rolling-back`): a resume continues that. */
  interruptedIn?: 'running' | 'rolling-back'
  /** Which procedure of its kind the run follows, so `resume` continues it with the same one (absent: the kind's own). */
  procedure?: string
  /**
   * Since when the run waits after its canary for a person (`--pause-after-canary`): `svcops runs
   * promote ID` or `svcops runs abort ID` (run-decision.ts). Set only while it waits; the phase stays `running`.
   */
  pausedAt?: string
  /**
   * Who let this run, read unsigned from its environment's store, drive a resume or rollback
   * (`--trust-unsigned-run`, run-mac.ts), and when; kept so the run says it was trusted on a person's word.
   */
  trustedUnsigned?: { by: string; at: string }
  /** The system's own facts, checked by its schema. */
  params: P
  /** How the record read from an environment's store was authenticated (run-mac.ts); set on read, never written. */
  trust?: RunTrust
}

/** A stored record's authentication: signed with the run key, unsigned (a warning), or refused (one sentence). */
export type RunTrust =
  | { state: 'signed'; /** How many journal entries the record was signed with, when it binds them (run-mac.ts). */ entries?: number }
  | { state: 'unsigned' | 'refused'; sentence: string }

/** The fields of the core: everything else a record written before the core existed held is the system's. */
const CORE_FIELDS = new Set([
  'id',
  'kind',
  'system',
  'environment',
  'envFile',
  'targetVersion',
  'autoRollback',
  'phase',
  'startedAt',
  'finishedAt',
  'holder',
  'pid',
  'cause',
  'rollbackRequested',
  'interruptedIn',
  'procedure',
  'pausedAt',
  'trustedUnsigned',
  'params',
])

/** The system of a record written before records named theirs: the recording service, the only one then. */
const SYSTEM_BEFORE_NAMES = 'recording'

const RUN_ID = /^\d{8}T\d{6}Z-[0-9a-f]{6}$/

const runRecordSchema = z.object({
  id: z.string().regex(RUN_ID),
  kind: z.enum(['upgrade', 'rollback', 'backup', 'verify', 'rehearse', 'restore', 'delete', 'prune', 'psk-rotate']),
  system: z.string().min(1),
  environment: z.string(),
  envFile: z.string(),
  targetVersion: z.string().default(''),
  autoRollback: z.boolean(),
  phase: z.enum(['running', 'rolling-back', 'interrupted', 'succeeded', 'failed', 'rolled-back', 'rollback-failed', 'no-op']),
  startedAt: z.string(),
  finishedAt: z.string().optional(),
  holder: z.string(),
  pid: z.number().int(),
  cause: z.string().optional(),
  rollbackRequested: z.boolean().optional(),
  interruptedIn: z.enum(['running', 'rolling-back']).optional(),
  procedure: z.string().optional(),
  pausedAt: z.string().optional(),
  trustedUnsigned: z.strictObject({ by: z.string(), at: z.string() }).optional(),
  params: z.record(z.string(), z.unknown()),
})

/** A sortable, unique run id: `20261122T031500Z-3fa9c1`. */
export function newRunId(now = new Date()): string {
  return `${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`
}

/** True when `id` has the shape of a run id. */
export function isRunId(id: string): boolean {
  return RUN_ID.test(id)
}

/** Refuses what is not a run id (one sentence naming it): an id becomes a folder's name. */
export function assertRunId(id: string): void {
  if (!isRunId(id))
    throw new BadInputError(`Run id '${id}' is not valid; expected an id like 20261122T031500Z-3fa9c1 (see 'svcops runs list').`)
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

/** A new run's record: its id, who runs it and since when, `phase: 'running'`, and what the caller gives. */
export function newRunRecord<P extends RunParams>(
  fields: Pick<RunRecord<P>, 'kind' | 'system' | 'environment' | 'envFile' | 'params'> & Partial<RunRecord<P>>,
): RunRecord<P> {
  return {
    id: newRunId(),
    targetVersion: '',
    autoRollback: false,
    phase: 'running',
    startedAt: new Date().toISOString(),
    holder: holderName(),
    pid: process.pid,
    ...fields,
  }
}

/** True when a run's phase is final (nothing left to resume). */
export function isFinished(run: Pick<RunRecord, 'phase'>): boolean {
  return run.phase !== 'running' && run.phase !== 'rolling-back' && run.phase !== 'interrupted'
}

/** True when the run waits after its canary for `svcops runs promote|abort ID`. */
export function isPaused(run: Pick<RunRecord, 'phase' | 'pausedAt'>): boolean {
  return run.phase === 'running' && run.pausedAt !== undefined
}

/** The phase a run continues in: an interrupted run's phase before it stopped, else its own. */
export function phaseToContinue(run: Pick<RunRecord, 'phase' | 'interruptedIn'>): RunPhase {
  return run.phase === 'interrupted' ? (run.interruptedIn ?? 'running') : run.phase
}

/** Run folders are ours, but a person or a disk can damage them: every file read is checked and capped. */
const MAX_RECORD_BYTES = 1 << 20

/**
 * A record of the layout before the core (flat fields, no `params`) as core and params: the core's
 * fields stay, the rest are the system's, and a record without a system is the recording service's.
 */
export function migrateRecord(json: unknown): unknown {
  if (!json || typeof json !== 'object' || Array.isArray(json) || 'params' in json) return json
  const core: Record<string, unknown> = {}
  const params: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(json)) (CORE_FIELDS.has(key) ? core : params)[key] = value
  return { system: SYSTEM_BEFORE_NAMES, ...core, params }
}

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
  return parseRunRecord(json, file)
}

/** Checks a run record read from anywhere (`where` names it: a file, a store); one sentence naming the field when it is not one. */
export function parseRunRecord(json: unknown, where: string): RunRecord {
  const parsed = runRecordSchema.safeParse(migrateRecord(json))
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new BadInputError(
      `${where}: ${issue?.path.join('.') || '(record)'}: ${issue?.message ?? 'invalid'}; expected a run record written by svcops.`,
    )
  }
  return parsed.data
}

/**
 * The record's params checked by its system's `schema`: the typed record, or one sentence naming
 * the run and the field. `what` names the system for the sentence.
 */
export function withParams<P extends RunParams>(record: RunRecord, schema: z.ZodType<P>, what: string): RunRecord<P> {
  const parsed = schema.safeParse(record.params)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new BadInputError(
      `Run ${record.id}: params.${issue?.path.join('.') || ''}: ${issue?.message ?? 'invalid'}; expected the facts of a run of ${what}.`,
    )
  }
  return { ...record, params: parsed.data }
}
