/**
 * Saved system controller calls and the small tools the request migrator's rules share:
 * a call under translation, field renames in bodies, and read paths (`outputs[0].status.state`).
 */
import { changeById } from './live.ts'

/** One saved call: what a client sends and, optionally, which response fields it reads. */
export interface SavedCall {
  name?: string
  method: string
  path: string
  body?: unknown
  /** Dot paths of response fields the client reads, e.g. `status.state` or `sources[0].id`. */
  reads?: string[]
}

/** Identifiers the release notes make callers look up once (old connection id -> new stream UUID). */
export interface IdMap {
  streams?: Record<string, string>
}

/** Thrown by a rule when a call cannot be translated without guessing. */
export class Untranslatable extends Error {
  readonly rule: string
  readonly reason: string
  constructor(rule: string, reason: string) {
    super(reason)
    this.rule = rule
    this.reason = reason
  }
}

/** A call being translated: path without prefix and query, plus what has been applied. */
export class WorkingCall {
  method: string
  /** Path below the API prefix, without the query string. */
  rel: string
  query: string
  body: unknown
  reads: string[]
  readonly rules: string[] = []
  readonly review: string[] = []

  readonly ids: IdMap

  constructor(call: SavedCall, rel: string, query: string, ids: IdMap) {
    this.ids = ids
    this.method = call.method.toUpperCase()
    this.rel = rel
    this.query = query
    this.body = call.body === undefined ? undefined : structuredClone(call.body)
    this.reads = [...(call.reads ?? [])]
  }

  /** Records that a catalog change was applied (ids are checked against the catalog). */
  apply(rule: string): void {
    changeById(rule)
    if (!this.rules.includes(rule)) this.rules.push(rule)
  }

  /** Adds a note a person must check, naming the rule it comes from. */
  flag(rule: string, note: string): void {
    this.apply(rule)
    this.review.push(`${rule}: ${note}`)
  }

  /** Refuses the call: the rule that cannot be applied and why. */
  refuse(rule: string, reason: string): never {
    changeById(rule)
    throw new Untranslatable(rule, reason)
  }

  /** The body as an object, or undefined when there is none (an array or scalar is refused). */
  objectBody(rule: string): Record<string, unknown> | undefined {
    if (this.body === undefined || this.body === null) return undefined
    if (typeof this.body !== 'object' || Array.isArray(this.body))
      this.refuse(rule, 'the body is not a JSON object, so its fields cannot be rewritten')
    return this.body as Record<string, unknown>
  }

  /** Path segments of `rel` (without the leading empty one). */
  segments(): string[] {
    return this.rel.split('/').slice(1)
  }

  /** The stream UUID for an old connection id, or a refusal naming what to add to the id map. */
  streamUuid(connectionId: string, rule: string): string {
    const uuid = this.ids.streams?.[connectionId]
    if (!uuid)
      this.refuse(
        rule,
        `3.0 addresses streams by stream_uuid, and connection_id '${connectionId}' has no entry under streams in the id map (--ids FILE)`,
      )
    return uuid
  }
}

/**
 * Renames `from` to `to` in every object of `value` (recursively). Returns how many were renamed;
 * a target that already exists next to the source is refused rather than overwritten.
 */
export function renameKeys(value: unknown, from: string, to: string, call: WorkingCall, rule: string): number {
  if (Array.isArray(value)) return value.reduce<number>((n, v) => n + renameKeys(v, from, to, call, rule), 0)
  if (!value || typeof value !== 'object') return 0
  const obj = value as Record<string, unknown>
  let n = 0
  for (const key of Object.keys(obj)) n += renameKeys(obj[key], from, to, call, rule)
  if (Object.hasOwn(obj, from)) {
    if (Object.hasOwn(obj, to)) call.refuse(rule, `the body has both '${from}' and '${to}'`)
    // Keep the key's position so the translated body reads like the original.
    const entries = Object.entries(obj).map(([k, v]) => [k === from ? to : k, v] as const)
    for (const k of Object.keys(obj)) delete obj[k]
    for (const [k, v] of entries) obj[k] = v
    n++
  }
  return n
}

/** One segment of a read path: a field name and any `[n]` suffix. */
export interface ReadSegment {
  name: string
  index: string
}

/** Splits `outputs[0].status.state` into segments. */
export function parseRead(read: string): ReadSegment[] {
  return read.split('.').map((part) => {
    const m = /^([^[]*)((?:\[[^\]]*\])*)$/.exec(part)
    return { name: m?.[1] ?? part, index: m?.[2] ?? '' }
  })
}

/** Joins segments back into a read path. */
export function formatRead(segments: ReadSegment[]): string {
  return segments.map((s) => s.name + s.index).join('.')
}

/** Rewrites every read with `fn` (which returns the new segments, or the same array unchanged). */
export function mapReads(call: WorkingCall, fn: (segments: ReadSegment[], read: string) => ReadSegment[] | ReadSegment[][]): void {
  const out: string[] = []
  for (const read of call.reads) {
    const result = fn(parseRead(read), read)
    const many = Array.isArray(result[0]) ? (result as ReadSegment[][]) : [result as ReadSegment[]]
    for (const segments of many) out.push(formatRead(segments))
  }
  call.reads = out
}
