/**
 * Field ownership as the Kubernetes API server keeps it (server-side apply, structured-merge-diff
 * in k8s.io/apimachinery): the fields of an object as paths, `metadata.managedFields` entries in the
 * FieldsV1 encoding, and the three ways a write changes ownership:
 *
 * - **apply** (`PATCH` with `application/apply-patch+yaml`, a `fieldManager`): the applier's field
 *   set becomes exactly the fields it sent; a field another manager owns and the apply would
 *   change is a conflict (409, `Apply failed with N conflict(s): conflict with "<manager>"...`)
 *   unless `force=true`, which takes it over; equal values are shared, never a conflict; a field
 *   the applier sent before and no longer sends is removed when nobody else owns it;
 * - **update** (merge, strategic merge or JSON patch, `PUT`, `POST`, a subresource such as
 *   `deployments/scale`): every field the write changed moves to the updater, recorded as its own
 *   entry per manager, apiVersion and subresource (`operation: Update`);
 * - a write of `metadata.managedFields` itself (a JSON patch, as pulumi-kubernetes sends to take over
 *   client-side-apply managers) replaces the entries as given.
 *
 * The schema part of structured-merge-diff is reduced to what the platform's objects use: lists
 * merged by key (containers, env, ports, volumes, volumeMounts, ...) and every other list atomic.
 * Messages follow `k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go`.
 */
import { isDeepStrictEqual } from 'node:util'

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
export type Obj = { [key: string]: Json }

/** One step of a field path: a field of a map, or an item of a keyed list. */
export type Segment = { field: string } | { key: Obj }
export type FieldPath = Segment[]

/** A `metadata.managedFields` entry as the API returns it. */
export interface ManagedFieldsEntry {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion: string
  time: string
  fieldsType: 'FieldsV1'
  fieldsV1: Obj
  subresource?: string
}

/** A field both the applier and another manager set to different values. */
export interface Conflict {
  path: string
  manager: ManagedFieldsEntry
}

/** A JSON value as text: a string as it is, anything else as JSON (nothing for null or absent). */
export function textOf(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v)
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Fields never tracked: identity and server-set metadata, and the status. */
const UNTRACKED_TOP = new Set(['apiVersion', 'kind', 'status'])
const UNTRACKED_META = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
])

/** The merge keys of a list, by its field name (structured-merge-diff's list-map keys); undefined: atomic. */
export function listKeys(field: string | undefined, items: Json[]): string[] | undefined {
  switch (field) {
    case 'containers':
    case 'initContainers':
    case 'ephemeralContainers':
    case 'env':
    case 'volumes':
    case 'imagePullSecrets':
      return ['name']
    case 'ports':
      return items.some((i) => isObj(i) && 'containerPort' in i) ? ['containerPort', 'protocol'] : ['port', 'protocol']
    case 'volumeMounts':
      return ['mountPath']
    case 'topologySpreadConstraints':
      return ['topologyKey', 'whenUnsatisfiable']
    case 'ownerReferences':
      return ['uid']
    case 'conditions':
      return ['type']
    default:
      return undefined
  }
}

/** The key of a keyed-list item (a defaulted `protocol` counts as TCP, as the schema defaults it). */
function keyOf(item: Json, keys: string[]): Obj {
  const o = isObj(item) ? item : {}
  return Object.fromEntries(keys.map((k) => [k, o[k] ?? (k === 'protocol' ? 'TCP' : null)]))
}

function lastField(path: FieldPath): string | undefined {
  const last = path[path.length - 1]
  return last && 'field' in last ? last.field : undefined
}

/** A path as structured-merge-diff prints it: `.spec.template.spec.containers[name="app"].image`. */
export function showPath(path: FieldPath): string {
  return path
    .map((s) =>
      'field' in s
        ? `.${s.field}`
        : `[${Object.keys(s.key)
            .sort()
            .map((k) => `${k}=${JSON.stringify(s.key[k])}`)
            .join(',')}]`,
    )
    .join('')
}

/** A set of field paths, by their printed form. */
export class FieldSet {
  readonly paths = new Map<string, FieldPath>()
  add(path: FieldPath): void {
    this.paths.set(showPath(path), path)
  }
  has(path: FieldPath): boolean {
    return this.paths.has(showPath(path))
  }
  delete(path: FieldPath): void {
    this.paths.delete(showPath(path))
  }
  get size(): number {
    return this.paths.size
  }
  values(): FieldPath[] {
    return [...this.paths.values()]
  }
  /** Paths of this set at or under `prefix`. */
  under(prefix: FieldPath): FieldPath[] {
    const p = showPath(prefix)
    return [...this.paths.entries()].filter(([k]) => k === p || k.startsWith(`${p}.`) || k.startsWith(`${p}[`)).map(([, v]) => v)
  }
}

/**
 * Every field `object` sets: scalars, atomic lists and empty maps as leaves; keyed-list items as
 * members of their own (their key fields included), and their fields below them.
 */
export function fieldsOf(object: Obj): FieldSet {
  const out = new FieldSet()
  const walk = (value: Json, path: FieldPath): void => {
    if (isObj(value)) {
      const entries = Object.entries(value).filter(([k]) => {
        if (path.length === 0) return !UNTRACKED_TOP.has(k)
        if (path.length === 1 && lastField(path) === 'metadata') return !UNTRACKED_META.has(k)
        return true
      })
      if (Object.keys(value).length === 0 && path.length > 0) out.add(path)
      for (const [k, v] of entries) walk(v, [...path, { field: k }])
      return
    }
    if (Array.isArray(value)) {
      const keys = listKeys(lastField(path), value)
      if (!keys) {
        out.add(path)
        return
      }
      for (const item of value) {
        const itemPath = [...path, { key: keyOf(item, keys) }]
        out.add(itemPath)
        if (isObj(item)) for (const [k, v] of Object.entries(item)) walk(v, [...itemPath, { field: k }])
      }
      return
    }
    out.add(path)
  }
  walk(object, [])
  return out
}

/** The value at `path` (undefined when absent). */
export function valueAt(object: Json | undefined, path: FieldPath): Json | undefined {
  let v: Json | undefined = object
  for (const s of path) {
    if (v === undefined) return undefined
    if ('field' in s) {
      v = isObj(v) ? v[s.field] : undefined
      continue
    }
    const list: Json[] = Array.isArray(v) ? v : []
    const keys = Object.keys(s.key)
    v = list.find((item) => isDeepStrictEqual(keyOf(item, keys), s.key))
  }
  return v
}

/** Removes the value at `path` from `object` (in place). */
function removeAt(object: Obj, path: FieldPath): void {
  const parent = valueAt(object, path.slice(0, -1))
  const last = path[path.length - 1]
  if (!last || parent === undefined) return
  if ('field' in last) {
    if (isObj(parent)) delete parent[last.field]
    return
  }
  if (!Array.isArray(parent)) return
  const keys = Object.keys(last.key)
  const i = parent.findIndex((item) => isDeepStrictEqual(keyOf(item, keys), last.key))
  if (i >= 0) parent.splice(i, 1)
}

/** `applied` merged into `live` as an apply merges: maps by key, keyed lists by item key, the rest replaced. */
export function mergeApplied(live: Json | undefined, applied: Json, field?: string): Json {
  if (isObj(live) && isObj(applied)) {
    const out: Obj = { ...live }
    for (const [k, v] of Object.entries(applied)) out[k] = mergeApplied(live[k], v, k)
    return out
  }
  if (Array.isArray(live) && Array.isArray(applied)) {
    const keys = listKeys(field, applied)
    if (!keys) return structuredClone(applied)
    const out = live.map((item) => structuredClone(item))
    for (const item of applied) {
      const key = keyOf(item, keys)
      const i = out.findIndex((x) => isDeepStrictEqual(keyOf(x, keys), key))
      if (i >= 0) out[i] = mergeApplied(out[i], item, undefined)
      else out.push(structuredClone(item))
    }
    return out
  }
  return structuredClone(applied)
}

/** RFC 7386 merge patch; with `strategic`, keyed lists merge by key as a strategic merge patch does. */
export function mergePatch(target: Json | undefined, patch: Json, strategic: boolean, field?: string): Json {
  if (!isObj(patch)) {
    if (strategic && Array.isArray(patch) && Array.isArray(target) && listKeys(field, patch)) return mergeApplied(target, patch, field)
    return structuredClone(patch)
  }
  const out: Obj = isObj(target) ? { ...target } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v, strategic, k)
  }
  return out
}

/** RFC 6902 JSON patch (add, replace, remove, test) on a copy of `target`. */
export function jsonPatch(target: Obj, ops: { op: string; path: string; value?: Json }[]): Obj {
  const out = structuredClone(target)
  for (const op of ops) {
    const parts = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    const last = parts.pop() ?? ''
    let parent: Json | undefined = out
    for (const p of parts) parent = Array.isArray(parent) ? parent[Number(p)] : isObj(parent) ? parent[p] : undefined
    if (parent === undefined || parent === null || typeof parent !== 'object')
      throw new Error(`the server rejected our request due to an error in our request: path ${op.path} not found`)
    const container = parent
    const get = () => (Array.isArray(container) ? container[Number(last)] : container[last])
    if (op.op === 'test') {
      if (!isDeepStrictEqual(get(), op.value)) throw new Error(`the server rejected our request: test of ${op.path} failed`)
    } else if (op.op === 'remove') {
      if (Array.isArray(container)) container.splice(Number(last), 1)
      else delete container[last]
    } else if (op.op === 'add' || op.op === 'replace') {
      const value = structuredClone(op.value ?? null)
      if (Array.isArray(container)) {
        if (last === '-') container.push(value)
        else if (op.op === 'add') container.splice(Number(last), 0, value)
        else container[Number(last)] = value
      } else container[last] = value
    } else throw new Error(`the server rejected our request: unsupported JSON patch op ${op.op}`)
  }
  return out
}

// ---- FieldsV1 ----

function segmentKey(s: Segment): string {
  if ('field' in s) return `f:${s.field}`
  const sorted = Object.fromEntries(
    Object.keys(s.key)
      .sort()
      .map((k) => [k, s.key[k] ?? null]),
  )
  return `k:${JSON.stringify(sorted)}`
}

/** A field set in the FieldsV1 encoding: `{"f:spec":{"f:replicas":{}}}`, `"k:{...}": {".": {}, ...}`. */
export function encodeFields(set: FieldSet): Obj {
  const root: Obj = {}
  for (const path of set.values()) {
    let node = root
    for (const s of path) {
      const k = segmentKey(s)
      node[k] = isObj(node[k]) ? node[k] : {}
      node = node[k]
    }
    // A member that also has members below it says so with ".".
    if (Object.keys(node).length > 0) node['.'] = {}
  }
  // Nodes that got children after they were added as members need the "." marker too.
  const mark = (node: Obj, path: FieldPath): void => {
    for (const [k, child] of Object.entries(node)) {
      if (k === '.' || !isObj(child)) continue
      const seg: Segment = k.startsWith('f:') ? { field: k.slice(2) } : { key: JSON.parse(k.slice(2)) as Obj }
      const p = [...path, seg]
      if (set.has(p) && Object.keys(child).some((c) => c !== '.')) child['.'] = {}
      mark(child, p)
    }
  }
  mark(root, [])
  return root
}

/** The field set of a FieldsV1 document. */
export function decodeFields(fields: Json | undefined): FieldSet {
  const out = new FieldSet()
  const walk = (node: Json, path: FieldPath): void => {
    if (!isObj(node)) return
    const children = Object.keys(node).filter((k) => k !== '.')
    if (path.length > 0 && (children.length === 0 || '.' in node)) out.add(path)
    for (const k of children) {
      const seg: Segment = k.startsWith('f:') ? { field: k.slice(2) } : { key: JSON.parse(k.slice(2)) as Obj }
      walk(node[k] ?? null, [...path, seg])
    }
  }
  walk(fields ?? null, [])
  return out
}

// ---- ownership ----

/** Who an entry is: Apply managers by name alone; Update managers per apiVersion and subresource. */
function identityOf(e: Pick<ManagedFieldsEntry, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  return JSON.stringify([e.manager, e.operation, e.operation === 'Apply' ? '' : e.apiVersion, e.subresource ?? ''])
}

/** A manager as conflict messages print it (`printManager`). */
export function showManager(e: ManagedFieldsEntry): string {
  const name = `${JSON.stringify(e.manager)}${e.subresource ? ` with subresource ${JSON.stringify(e.subresource)}` : ''}`
  return e.operation === 'Update' ? `${name} using ${e.apiVersion}` : name
}

/** The API's message for a failed apply (`getConflictMessage`). */
export function conflictMessage(conflicts: Conflict[]): string {
  const [first] = conflicts
  if (conflicts.length === 1 && first) return `Apply failed with 1 conflict: conflict with ${showManager(first.manager)}: ${first.path}`
  const byManager = new Map<string, { entry: ManagedFieldsEntry; paths: string[] }>()
  for (const c of conflicts) {
    const id = identityOf(c.manager)
    const m = byManager.get(id) ?? { entry: c.manager, paths: [] }
    m.paths.push(c.path)
    byManager.set(id, m)
  }
  const lines = [...byManager.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .flatMap(([, m]) => [`conflicts with ${showManager(m.entry)}:`, ...m.paths.map((p) => `- ${p}`)])
  return `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`
}

interface Owner {
  entry: ManagedFieldsEntry
  set: FieldSet
}

function ownersOf(entries: ManagedFieldsEntry[]): Owner[] {
  return entries.map((entry) => ({ entry, set: decodeFields(entry.fieldsV1) }))
}

function entriesOf(owners: Owner[]): ManagedFieldsEntry[] {
  return owners.filter((o) => o.set.size > 0).map((o) => ({ ...o.entry, fieldsV1: encodeFields(o.set) }))
}

/**
 * A server-side apply of `applied` by `manager` onto `live` (undefined: the object is created).
 * Returns the new object and entries, or the conflicts when not forced.
 */
export function applyFields(
  live: Obj | undefined,
  applied: Obj,
  manager: string,
  force: boolean,
  now: string,
): { object: Obj; managedFields: ManagedFieldsEntry[]; conflicts: Conflict[] } {
  const current = live ?? {}
  const owners = ownersOf((((current.metadata as Obj | undefined)?.managedFields ?? []) as unknown as ManagedFieldsEntry[]) ?? [])
  const me = identityOf({ manager, operation: 'Apply', apiVersion: '' })
  const mine = owners.find((o) => identityOf(o.entry) === me)
  const others = owners.filter((o) => o !== mine)
  const sent = fieldsOf(applied)
  const conflicts: Conflict[] = []
  if (live) {
    for (const path of sent.values()) {
      const last = path[path.length - 1]
      if (last && 'key' in last) continue // an item's existence is never a conflict
      if (isDeepStrictEqual(valueAt(live, path), valueAt(applied, path))) continue
      for (const o of others) if (o.set.has(path)) conflicts.push({ path: showPath(path), manager: o.entry })
    }
  }
  if (conflicts.length > 0 && !force) return { object: current, managedFields: entriesOf(owners), conflicts }
  // Forced: the conflicting fields leave their other owners.
  for (const c of conflicts) for (const o of others) if (o.entry === c.manager) o.set.paths.delete(c.path)
  const object = mergeApplied(current, applied) as Obj
  // What this manager applied before and no longer does goes, unless another manager still owns it.
  for (const path of mine?.set.values() ?? []) {
    if (sent.has(path)) continue
    if (others.some((o) => o.set.under(path).length > 0)) continue
    removeAt(object, path)
  }
  const entry: ManagedFieldsEntry = {
    manager,
    operation: 'Apply',
    apiVersion: textOf(applied.apiVersion ?? current.apiVersion),
    time: now,
    fieldsType: 'FieldsV1',
    fieldsV1: {},
  }
  const next = [...others, { entry, set: sent }]
  return { object, managedFields: entriesOf(next), conflicts: [] }
}

/**
 * An update (any write but an apply) by `manager` from `before` to `after`: every field it changed
 * moves to the manager's Update entry for `apiVersion` (and `subresource`), removed fields leave
 * every owner.
 */
export function updateFields(
  before: Obj | undefined,
  after: Obj,
  manager: string,
  apiVersion: string,
  subresource: string | undefined,
  now: string,
): ManagedFieldsEntry[] {
  const owners = ownersOf(((before?.metadata as Obj | undefined)?.managedFields ?? []) as unknown as ManagedFieldsEntry[])
  const old = before ? fieldsOf(before) : new FieldSet()
  const next = fieldsOf(after)
  const changed = new FieldSet()
  for (const path of next.values()) if (!old.has(path) || !isDeepStrictEqual(valueAt(before, path), valueAt(after, path))) changed.add(path)
  const removed = old.values().filter((p) => !next.has(p))
  const me = identityOf({ manager, operation: 'Update', apiVersion, ...(subresource ? { subresource } : {}) })
  let mine = owners.find((o) => identityOf(o.entry) === me)
  if (!mine) {
    mine = {
      entry: {
        manager,
        operation: 'Update',
        apiVersion,
        time: now,
        fieldsType: 'FieldsV1',
        fieldsV1: {},
        ...(subresource ? { subresource } : {}),
      },
      set: new FieldSet(),
    }
    owners.push(mine)
  }
  for (const o of owners) {
    for (const p of removed) o.set.delete(p)
    if (o === mine) continue
    for (const p of changed.values()) {
      const last = p[p.length - 1]
      // Changing a field inside an item does not take the item itself away from its owner.
      if (last && 'key' in last && o.set.has(p) && old.has(p)) continue
      o.set.delete(p)
    }
  }
  for (const p of changed.values()) mine.set.add(p)
  if (changed.size > 0) mine.entry = { ...mine.entry, time: now }
  return entriesOf(owners)
}
