/**
 * Fields of the stack's Kubernetes objects that somebody changed outside svcops (an operator's
 * `kubectl edit`, a `kubectl scale`, an autoscaler), read from `pulumi preview --refresh --json`.
 *
 * How pulumi-kubernetes shows them (pulumi/pulumi-kubernetes, provider/pkg/provider/provider.go):
 * the refresh's `Read` returns the live object as the step's old state and, pruned to the shape of
 * the program's inputs, as its old inputs; `Diff` compares the program's inputs with that pruned
 * live state, so an edited field is a path of the step's `detailedDiff`. The old state's outputs
 * are the live object (Pulumi's JSON keeps them, pulumi/pulumi pkg/backend/display/json.go), with
 * its `metadata.managedFields` and the provider's own manager (`__fieldManager`, provider.go
 * `checkpointObject`): a diffed field owned by another manager was changed outside svcops.
 *
 * What `pulumi up` would then do (provider/pkg/await/await.go): `ssaUpdate` first hands every field
 * of a manager named `kubectl*` or `before-first-apply` without a subresource to the program's own
 * (`fixCSAFieldManagers`), so the apply silently puts the program's value back; any other
 * manager's field conflicts and the update fails. The preview skips that take-over, so its dry-run
 * apply reports the conflict instead (`handleSSAErr`): a failed preview's conflict names the manager
 * and the field when the old state carries no managedFields.
 */
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { sanitizeLine } from '../core/sanitize.ts'

/** What is read here of a `pulumi preview --json` step (./pulumi.ts `PreviewStep`, which imports this file). */
interface PreviewStep {
  op: string
  urn: string
  detailedDiff?: Record<string, unknown>
  oldState?: { id?: string; outputs?: Record<string, unknown> }
}

/** What is read here of the preview's document (./pulumi.ts `PreviewDigest`). */
interface PreviewDigest {
  steps: PreviewStep[]
  diagnostics?: Array<{ message: string; severity: string; urn?: string }>
}

/** One managedFields entry of a live object (the fields read here). */
interface ManagedFields {
  manager?: string
  operation?: string
  subresource?: string
  fieldsV1?: Record<string, unknown>
}

/** A field of an object that another manager than Pulumi's changed. */
export interface OutsideEdit {
  /** The step's resource. */
  urn: string
  /** `Deployment svc-prod/svc-recording` (the object's kind and id), or the Pulumi name. */
  object: string
  /** The field, as Pulumi's detailed diff names it (`spec.replicas`) or as the API's conflict does. */
  field: string
  manager: string
  subresource?: string
  /** Whether `pulumi up` takes the manager's fields over and puts the program's value back (else it conflicts). */
  reverted: boolean
}

/** The provider's client-side managers (await.go `patchForce`): Pulumi's own, as its SSA manager is. */
const PULUMI_CSA = new Set(['pulumi-kubernetes', 'pulumi-kubernetes.exe', 'pulumi-resource-kubernetes'])

/** await.go `fixCSAFieldManagers`: the managers whose fields `pulumi up` takes over (prefix, operation, no subresource). */
function takenOver(manager: string, operation: string | undefined, subresource: string | undefined): boolean {
  if (subresource) return false
  if (manager.startsWith('kubectl')) return operation === 'Apply' || operation === 'Update'
  return operation === 'Update' && (manager.startsWith('before-first-apply') || [...PULUMI_CSA].some((m) => manager.startsWith(m)))
}

/** A Pulumi property path (`spec.template.spec.containers[0].image`, `metadata.labels["a/b"]`) as segments. */
function segments(path: string): (string | number)[] {
  const out: (string | number)[] = []
  for (const m of path.matchAll(/([A-Za-z_$][\w$-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g))
    out.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : (JSON.parse(m[3] ?? '""') as string)))
  return out
}

const isMap = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)

/**
 * Whether a managedFields entry's `fieldsV1` owns the field at `path` of `live`: `f:<name>` for a
 * map's field, `k:{...}` (the item's keys), `v:<value>` or `i:<index>` for a list's item, as the API
 * server's structured-merge-diff writes them; an owned leaf above the path owns what is below it.
 */
function owns(fields: unknown, live: unknown, path: (string | number)[]): boolean {
  let node = fields
  let value = live
  for (const seg of path) {
    if (!isMap(node)) return false
    if (Object.keys(node).filter((k) => k !== '.').length === 0) return true
    if (typeof seg === 'number') {
      const item: unknown = Array.isArray(value) ? value[seg] : undefined
      const key = Object.keys(node).find((k) => {
        if (k === `i:${seg}` || k === `v:${JSON.stringify(item)}`) return true
        if (!k.startsWith('k:') || !isMap(item)) return false
        const keys = JSON.parse(k.slice(2)) as Record<string, unknown>
        return Object.entries(keys).every(([name, v]) => JSON.stringify(item[name]) === JSON.stringify(v))
      })
      if (!key) return false
      node = node[key]
      value = item
    } else {
      if (!(`f:${seg}` in node)) return false
      node = node[`f:${seg}`]
      value = isMap(value) ? value[seg] : undefined
    }
  }
  return true
}

/** The object a step is about: its kind and id from the old state, else its Pulumi name. */
function objectOf(step: Pick<PreviewStep, 'urn' | 'oldState'>): string {
  const kind = step.oldState?.outputs?.kind
  const id = step.oldState?.id
  return typeof kind === 'string' && id ? `${kind} ${id}` : (step.urn.split('::').at(-1) ?? step.urn)
}

/** The fields of one update step owned by a manager other than Pulumi's, read from its old state's managedFields. */
function editsOfStep(step: PreviewStep): OutsideEdit[] | undefined {
  const outputs = step.oldState?.outputs
  const metadata = isMap(outputs?.metadata) ? outputs.metadata : undefined
  if (!outputs || !Array.isArray(metadata?.managedFields)) return undefined
  const own = typeof outputs.__fieldManager === 'string' ? outputs.__fieldManager : ''
  const others = (metadata.managedFields as ManagedFields[]).filter(
    (e) => e.manager !== own && !(e.operation === 'Update' && PULUMI_CSA.has(e.manager ?? '')),
  )
  const edits: OutsideEdit[] = []
  for (const field of Object.keys(step.detailedDiff ?? {}))
    for (const e of others)
      if (owns(e.fieldsV1, outputs, segments(field)))
        edits.push({
          urn: step.urn,
          object: objectOf(step),
          field,
          manager: e.manager ?? '(no manager)',
          ...(e.subresource ? { subresource: e.subresource } : {}),
          reverted: takenOver(e.manager ?? '', e.operation, e.subresource),
        })
  return edits
}

/**
 * The conflicts of a failed preview's dry-run apply (handleSSAErr around the API's message, as
 * k8s.io/apimachinery managedfields' conflict.go prints it: `conflict with "m" [with subresource
 * "s"] [using v]: .path`, or `conflicts with "m" ...:` and one `- .path` line per field).
 */
function editsOfConflict(urn: string, object: string, message: string): OutsideEdit[] {
  const edits: OutsideEdit[] = []
  for (const m of message.matchAll(
    /conflicts? with "([^"]+)"(?: with subresource "([^"]+)")?( using [^:\n]+)?:((?:\n- [^\n]+)+| [^\n]+)/g,
  )) {
    const [, manager = '', subresource, using, rest = ''] = m
    const fields = rest.startsWith('\n') ? rest.split('\n- ').slice(1) : [rest]
    for (const f of fields)
      edits.push({
        urn,
        object,
        field: f.trim().replace(/^\./, ''),
        manager,
        ...(subresource ? { subresource } : {}),
        reverted: takenOver(manager, using ? 'Update' : 'Apply', subresource),
      })
  }
  return edits
}

/** Every field the preview shows changed outside svcops: from the steps' managedFields, else from the preview's conflicts. */
export function outsideEdits(digest: PreviewDigest): OutsideEdit[] {
  const edits: OutsideEdit[] = []
  const read = new Set<string>()
  for (const step of digest.steps) {
    if (step.op !== 'update') continue
    const found = editsOfStep(step)
    if (found === undefined) continue
    read.add(step.urn)
    edits.push(...found)
  }
  for (const d of digest.diagnostics ?? []) {
    if (d.severity !== 'error' || (d.urn && read.has(d.urn))) continue
    const step = digest.steps.find((s) => s.urn === d.urn)
    const urn = d.urn ?? ''
    edits.push(...editsOfConflict(urn, step ? objectOf(step) : urn.split('::').at(-1) || 'an object of the stack', d.message))
  }
  return edits
}

/** One sentence per edit: the field, the object, the manager, and what the run would do to it. */
export function showOutsideEdit(e: OutsideEdit): string {
  const by = `by manager ${e.manager}${e.subresource ? ` through its ${e.subresource} subresource` : ''}`
  const then = e.reverted ? 'the run would revert it' : 'the run’s pulumi up would stop on a conflict with it'
  return sanitizeLine(`field ${e.field} of ${e.object} was changed outside svcops (${by}); ${then}`)
}

/**
 * Stops a run before it starts when the preview shows a field changed outside svcops: the change
 * may be deliberate (an emergency scale-up, a resource bump), and the run's `pulumi up` would undo
 * it silently (or fail on it halfway). Emits the check either way.
 */
export function refuseOutsideEdits(stack: string, edits: OutsideEdit[]): void {
  const shown = [...new Set(edits.map(showOutsideEdit))]
  events.emit({ kind: 'check', check: 'pulumi preview: no field changed outside svcops', ok: shown.length === 0, detail: shown.join('; ') })
  if (shown.length)
    throw new OperationError(
      `pulumi preview of stack '${stack}': ${shown.join('; ')}. Nothing was changed.`,
      `Keep the change by declaring it in the stack file, or put the program's value back (pulumi up -s ${stack}), then run again.`,
    )
}
