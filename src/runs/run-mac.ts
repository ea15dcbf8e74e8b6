/**
 * Authenticated run records. Whoever can write an environment's run store (the database role, the
 * live host's SSH user, the namespace's ConfigMaps) could otherwise write a run that steers the next
 * resume or rollback. Every record and journal entry written there carries a MAC (HMAC-SHA256) made
 * with the environment's run key, which operators hold and the store's writers do not, over the
 * canonical JSON (sorted keys) of `{ environment, runId, seq?, prev?, content }`: a record or entry
 * read back is accepted only for the environment of the stack in use and for the run it was asked as.
 *
 * The journal is a chain, so that a writer of the store cannot drop what was done (a rollback undoes
 * only what the journal shows): entry `seq`'s MAC also covers entry `seq - 1`'s MAC (`prev`; entry 0
 * has none and is bound to its run and environment like every entry), and the indexes must run 0, 1,
 * 2... without a gap. A signed record also binds how many entries its journal held when it was
 * written (`journalEntries`): a journal read back shorter than that is refused. What a store's writer
 * can still do, and what stands against it, is in docs/operations.md ("The run key").
 *
 * The run key: `svcops:runs.key` (a secret reference, at least 32 bytes), else derived with
 * HKDF-SHA256 (info "svcops run records") from the backup private key the stack names
 * (`backup.signingKey` ?? `backup.identity`). Only the MAC is stored; the key is registered with the
 * redaction layer the moment it is read. Without either key, records are written unsigned and
 * svcops says so once per run.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'
import { readSecret } from '../config/secrets.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { redactDeep } from '../core/redact.ts'
import { parseJournalLines, type JournalEntry } from './journal.ts'
import { parseRunRecord, type RunRecord, type RunTrust } from './run-record.ts'
import type { StoredRun } from './run-store.ts'

/** The field of a stored record or entry that holds its MAC. */
export const MAC_FIELD = 'mac'
/** The field of a signed record that holds how many journal entries it was written with (covered by its MAC). */
const ENTRIES_FIELD = 'journalEntries'
const MAC_PREFIX = 'hmac-sha256:'
/** A run key shorter than this is refused: a MAC is only as strong as its key. */
export const MIN_RUN_KEY_BYTES = 32
const HKDF_INFO = 'svcops run records'

/** The flag that lets an unsigned record drive a resume or rollback. */
export const TRUST_UNSIGNED_FLAG = '--trust-unsigned-run'

/** How an environment's runs are sealed on write and checked on read: its name and its run key. */
export interface RunSeal {
  /** The environment of the stack in use: every record read must name it. */
  readonly environment: string
  /** True when records are signed (a run key is set or derived). */
  readonly signed: boolean
  /**
   * The record as stored: redacted, without its read-time trust, with its MAC when signed; `entries`,
   * how many entries its journal holds when the record is written, is bound with it (a reader refuses
   * a journal shorter than that).
   */
  sealRecord(record: RunRecord, entries?: number): Record<string, unknown>
  /** The journal `entries` of run `runId` as stored, by index: each redacted, with its MAC (chained to the one before) when signed. */
  sealJournal(runId: string, entries: readonly JournalEntry[]): Array<Record<string, unknown>>
  /**
   * A record read from `where`: checked for its run id (`id`, when asked by id), its environment
   * (the store's own column `filedUnder`, when it keeps one, and the record's field) and its MAC.
   * Returns the record with its trust; throws (one sentence) only when it is not a run record at all.
   */
  openRecord(raw: unknown, where: string, expect: { id?: string; filedUnder?: string }): RunRecord
  /** The entries of run `record` read from `where`, by index; a refusal of any makes the record refused. */
  openEntries(record: RunRecord, raws: Array<{ seq: number; raw: unknown }>, where: string): { record: RunRecord; entries: JournalEntry[] }
}

/** JSON with every object's keys sorted, undefined members left out (as JSON.stringify does): one text per value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`
  const members = Object.keys(value)
    .sort()
    .flatMap((k) => {
      const v = (value as Record<string, unknown>)[k]
      return v === undefined ? [] : [`${JSON.stringify(k)}:${canonicalJson(v)}`]
    })
  return `{${members.join(',')}}`
}

/** The MAC of `content` bound to its environment, its run and (for an entry) its index and the MAC of the entry before it. */
export function runMac(
  key: Buffer,
  binding: { environment: string; runId: string; seq?: number; prev?: string | null; content: unknown },
): string {
  return MAC_PREFIX + createHmac('sha256', key).update(canonicalJson(binding)).digest('hex')
}

/**
 * The run key of `env`: `runs.key`, else derived from the backup private key; undefined when the
 * stack names neither. A key file that cannot be read, is not private, or is too short is refused.
 */
export function runKeyOf(env: Pick<Environment, 'runs' | 'backup'>): Buffer | undefined {
  if (env.runs?.key) {
    const key = Buffer.from(readSecret(env.runs.key, 'runs.key'), 'utf8')
    if (key.length < MIN_RUN_KEY_BYTES)
      throw new BadInputError(
        `runs.key: holds ${key.length} bytes; expected at least ${MIN_RUN_KEY_BYTES}.`,
        'Create one: openssl rand -base64 48 > /etc/svcops/run.key; chmod 600 /etc/svcops/run.key',
      )
    return key
  }
  const backupKey = env.backup?.signingKey ?? env.backup?.identity
  if (!backupKey) return undefined
  const field = env.backup?.signingKey ? 'backup.signingKey' : 'backup.identity'
  const material = Buffer.from(readSecret(backupKey, field), 'utf8')
  return Buffer.from(hkdfSync('sha256', material, Buffer.alloc(0), HKDF_INFO, 32))
}

// Environments told this process that their runs are not authenticated (once per run).
const warnedUnsigned = new Set<string>()

/** The seal of `env`'s runs: its name, and its run key read at the first record sealed or opened. */
export function runSealOf(env: Pick<Environment, 'runs' | 'backup' | 'name'>): RunSeal {
  return runSeal(env.name, () => runKeyOf(env))
}

/**
 * The seal of environment `environment`'s runs with `given` (none: unsigned), or the key that
 * function reads, at the first use: a listing that reads no record of an environment needs none of
 * its key files on this machine.
 */
export function runSeal(environment: string, given: Buffer | undefined | (() => Buffer | undefined)): RunSeal {
  let read: { key: Buffer | undefined } | undefined
  const keyNow = (): Buffer | undefined => (read ??= { key: typeof given === 'function' ? given() : given }).key
  const refused = (record: RunRecord, sentence: string): RunRecord => ({ ...record, trust: { state: 'refused', sentence } })
  // Whether the stack names a run key; one it names that cannot be read still says its runs are signed.
  const keyed = (): boolean => {
    try {
      return keyNow() !== undefined
    } catch {
      return true
    }
  }
  const macOk = (stored: string, binding: Parameters<typeof runMac>[1]): boolean => {
    const key = keyNow()
    if (!key) return false
    const expected = Buffer.from(runMac(key, binding))
    const given = Buffer.from(stored)
    return expected.length === given.length && timingSafeEqual(expected, given)
  }
  return {
    environment,
    get signed() {
      return keyNow() !== undefined
    },
    sealRecord(record, entries) {
      const key = keyNow()
      const { trust: _trust, ...rest } = record
      const content = redactDeep(rest) as Record<string, unknown>
      if (!key) {
        warnUnsigned(environment)
        return content
      }
      const bound = entries === undefined ? content : { ...content, [ENTRIES_FIELD]: entries }
      return { ...bound, [MAC_FIELD]: runMac(key, { environment, runId: record.id, content: bound }) }
    },
    sealJournal(runId, entries) {
      const key = keyNow()
      let prev: string | null = null
      return entries.map((entry, seq) => {
        const { [MAC_FIELD]: _old, ...rest } = entry as JournalEntry & { [MAC_FIELD]?: unknown }
        const content = redactDeep(rest) as Record<string, unknown>
        if (!key) return content
        const mac = runMac(key, { environment, runId, seq, prev, content })
        prev = mac
        return { ...content, [MAC_FIELD]: mac }
      })
    },
    openRecord(raw, where, expect) {
      const { mac, content } = splitMac(raw)
      const record = parseRunRecord(content, where)
      const id = expect.id ?? record.id
      const label = `Run ${id} in ${where}`
      if (expect.filedUnder !== undefined && expect.filedUnder !== environment)
        return refused(
          record,
          `${label} is filed under environment '${expect.filedUnder}', not '${environment}' (the stack in use); it is refused.`,
        )
      if (record.environment !== environment)
        return refused(
          record,
          `${label} names environment '${record.environment}', not '${environment}' (the stack in use); it is refused.`,
        )
      if (record.id !== id) return refused(record, `${label} holds the record of run ${record.id}; it is refused.`)
      if (mac === undefined)
        return {
          ...record,
          trust: {
            state: 'unsigned',
            sentence: keyed()
              ? // A habitual --trust-unsigned-run must be a visible choice where runs are signed.
                `${label} carries no MAC, and this environment's runs are signed (its stack names a run key): an unsigned run here was stripped or predates the key; it is shown read-only and drives a resume or rollback only with ${TRUST_UNSIGNED_FLAG}, given only knowing where it comes from.`
              : `${label} carries no MAC (written before runs were signed, or with no run key); it is shown read-only and drives a resume or rollback only with ${TRUST_UNSIGNED_FLAG}.`,
          },
        }
      if (!keyNow())
        return {
          ...record,
          trust: {
            state: 'unsigned',
            sentence: `${label} is signed, but the stack names no run key (svcops:runs.key or backup.signingKey) to check it with; it drives a resume or rollback only with ${TRUST_UNSIGNED_FLAG}.`,
          },
        }
      if (!macOk(mac, { environment, runId: id, content }))
        return refused(
          record,
          `${label} fails its MAC check (changed after it was written, or written for another environment, run or run key); it is refused.`,
        )
      const entries = (content as Record<string, unknown>)[ENTRIES_FIELD]
      return { ...record, trust: { state: 'signed', ...(typeof entries === 'number' ? { entries } : {}) } }
    },
    openEntries(record, raws, where) {
      const trust: RunTrust = record.trust ?? { state: 'unsigned', sentence: '' }
      if (trust.state === 'refused') return { record, entries: [] }
      const contents: unknown[] = []
      const refuse = (sentence: string) => ({ record: refused(record, sentence), entries: [] })
      let prev: string | null = null
      for (const [index, { seq, raw }] of raws.entries()) {
        // The chain binds each entry to the one before: an index that skips one is an entry removed.
        if (seq !== index)
          return refuse(
            `Entry ${index} of run ${record.id}'s journal in ${where} is missing (the next is entry ${seq}): entries were removed after they were written; the run is refused.`,
          )
        const { mac, content } = splitMac(raw)
        const label = `Entry ${seq} of run ${record.id}'s journal in ${where}`
        const fails = (given: string | undefined) =>
          given === undefined || !macOk(given, { environment, runId: record.id, seq, prev, content })
        if ((trust.state === 'signed' || (mac !== undefined && keyNow())) && fails(mac))
          return refuse(
            `${label} fails its MAC check (added, changed, moved, or the entry before it removed, after it was written); the run is refused.`,
          )
        prev = mac ?? null
        contents.push(content)
      }
      if (trust.state === 'signed' && trust.entries !== undefined && raws.length < trust.entries)
        return refuse(
          `Run ${record.id}'s journal in ${where} holds ${raws.length} entries, but its record was signed with ${trust.entries}: entries were removed after they were written; the run is refused.`,
        )
      return { record, entries: contents as JournalEntry[] }
    },
  }
}

/**
 * A run read from `where`: its record (opened by `seal.openRecord`), its entries checked by their
 * MACs, then by the journal's schema. A refusal of either makes the record refused, with its
 * sentence and no entries: a view shows it so, and nothing follows it.
 */
export function openedRun(seal: RunSeal, record: RunRecord, raws: Array<{ seq: number; raw: unknown }>, where: string): StoredRun {
  const opened = seal.openEntries(record, raws, where)
  if (opened.record.trust?.state === 'refused') return { record: opened.record, entries: [] }
  try {
    const text = opened.entries.map((e) => JSON.stringify(e)).join('\n')
    return { record: opened.record, entries: parseJournalLines(text, `${where}: journal of run ${record.id}`) }
  } catch (error) {
    return { record: { ...record, trust: { state: 'refused', sentence: `${errorMessage(error)} The run is refused.` } }, entries: [] }
  }
}

/**
 * The lines of a journal file as stored values by index: a last line torn by a kill is left out, and
 * a line that is not JSON is kept as nothing (its check then refuses the run).
 */
export function journalLines(text: string, where: string): Array<{ seq: number; raw: unknown }> {
  const lines = text.split('\n')
  while (lines.length && !lines.at(-1)?.trim()) lines.pop()
  return lines.flatMap((line, seq) => {
    try {
      return [{ seq, raw: JSON.parse(line) as unknown }]
    } catch {
      if (seq === lines.length - 1) return []
      events.warn(`${where}:${seq + 1}: is not JSON.`)
      return [{ seq, raw: undefined }]
    }
  })
}

/** The stored value's MAC (when it has a string one) and the rest of it. */
function splitMac(raw: unknown): { mac?: string; content: unknown } {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw) || !(MAC_FIELD in raw)) return { content: raw }
  const { [MAC_FIELD]: mac, ...content } = raw as Record<string, unknown>
  return typeof mac === 'string' ? { mac, content } : { mac: '', content }
}

function warnUnsigned(environment: string): void {
  if (warnedUnsigned.has(environment)) return
  warnedUnsigned.add(environment)
  events.warn(
    `The runs of environment '${environment}' are not authenticated: whoever can write its run store could forge one; set svcops:runs.key (a 0600 file: openssl rand -base64 48) or backup.signingKey in its stack file.`,
  )
}

/**
 * Refuses a record read from an environment to drive a resume or rollback unless it is signed, or
 * unsigned and the operator passed `--trust-unsigned-run`; a refused record never does.
 */
export function assertRunTrusted(record: RunRecord, trustUnsigned: boolean): void {
  const trust = record.trust
  if (!trust || trust.state === 'signed') return
  if (trust.state === 'refused')
    // The hint names no environment: a refused record's own is not to be believed.
    throw new BadInputError(trust.sentence, `See it with: svcops runs show ${record.id} and the same --env or --stack-file`)
  if (!trustUnsigned) throw new BadInputError(trust.sentence, `If you know where it comes from: add ${TRUST_UNSIGNED_FLAG}`)
}
