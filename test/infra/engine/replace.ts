/**
 * What `pulumi up` would do to each Kubernetes object between two runs, computed the way
 * pulumi-kubernetes 4.x computes it, from the rules below written as data.
 *
 * Source of the rules: pulumi-kubernetes v4, provider/pkg/provider/forcenew.go (`forceNew`,
 * `forceNewProperties`) and its Diff: a change of a listed path is a replacement; a Secret's
 * `data`/`stringData`/`type` and a ConfigMap's `data`/`binaryData` are added to the list unless the
 * provider enables enableSecretMutable / enableConfigMapMutable (or the object is immutable); and
 * a replacement of an object with an explicit `metadata.name` is delete-before-replace, since the
 * new object must have the same name (provider docs, "Resource replacement" and the
 * deleteBeforeReplace resource option). The engine adds the resource options: a changed
 * `replaceOnChanges` path replaces, `deleteBeforeReplace: true` deletes first, and a protected
 * resource cannot be replaced or deleted at all.
 */
import { isDeepStrictEqual } from 'node:util'
import type { EngineRun, Registration } from './engine.ts'
import { at, hasUnknown, plain, type Value } from './wire.ts'

type Obj = Record<string, Value>

const METADATA = ['metadata.name', 'metadata.namespace']
const SELECTOR = (p: string) => [p, `${p}.matchExpressions`, `${p}.matchLabels`]

/** Paths whose change forces a replacement, by `apiVersion/kind` (pulumi-kubernetes v4 forcenew.go). */
export const FORCE_NEW: Record<string, string[]> = {
  'v1/PersistentVolumeClaim': ['spec.accessModes', 'spec.storageClassName', 'spec.volumeName', ...SELECTOR('spec.selector')],
  'v1/Secret': ['type'],
  'v1/Service': ['spec.clusterIP'],
  'v1/ResourceQuota': ['spec.scopes'],
  'apps/v1/Deployment': SELECTOR('spec.selector'),
  'apps/v1/DaemonSet': SELECTOR('spec.selector'),
  'apps/v1/StatefulSet': [
    'spec.podManagementPolicy',
    'spec.revisionHistoryLimit',
    'spec.serviceName',
    'spec.volumeClaimTemplates',
    ...SELECTOR('spec.selector'),
  ],
  'batch/v1/Job': ['spec.completions', 'spec.parallelism', 'spec.template', ...SELECTOR('spec.selector')],
  'policy/v1beta1/PodDisruptionBudget': ['spec'],
  'storage.k8s.io/v1/StorageClass': ['parameters', 'provisioner'],
  'rbac.authorization.k8s.io/v1/RoleBinding': ['roleRef'],
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ['roleRef'],
}
/** Added unless the provider makes the kind mutable (and the object is not `immutable: true`). */
const UNLESS_MUTABLE: Record<string, { flag: string; paths: string[] }> = {
  'v1/Secret': { flag: 'enableSecretMutable', paths: ['type', 'stringData', 'data'] },
  'v1/ConfigMap': { flag: 'enableConfigMapMutable', paths: ['binaryData', 'data'] },
}

export type Action = 'create' | 'same' | 'update' | 'replace' | 'delete'

export interface Change {
  urn: string
  /** `Kind/name` of the object. */
  object: string
  action: Action
  /** For a replacement: whether the old object is deleted before the new one exists. */
  deleteFirst: boolean
  /** Paths that forced the replacement. */
  because: string[]
  /** The engine refuses this step: the resource is protected. */
  refused: boolean
}

function text(v: Value | undefined): string {
  return typeof v === 'string' ? v : JSON.stringify(v)
}

function kindKey(o: Obj): string {
  return `${text(o.apiVersion)}/${text(o.kind)}`
}

/** `Kind/name` of a Kubernetes registration. */
export function objectName(reg: Registration): string {
  const o = plain(reg.inputs) as Obj
  return `${text(o.kind)}/${text(at(o, 'metadata.name') ?? reg.name)}`
}

function flagOn(run: EngineRun, reg: Registration, flag: string): boolean {
  if (!reg.provider) return false // the default provider: flags off unless set in config
  const urn = reg.provider.split('::').slice(0, -1).join('::')
  const provider = run.registrations.find((r) => r.urn === urn)
  const value = provider ? (plain(provider.inputs) as Obj)[flag] : undefined
  return value === true || value === 'true'
}

/** The paths that force a replacement of this object under `run`'s provider. */
export function forceNewPaths(run: EngineRun, reg: Registration): string[] {
  const o = plain(reg.inputs) as Obj
  const key = kindKey(o)
  const mutable = UNLESS_MUTABLE[key]
  const immutable = o.immutable === true
  const extra = mutable && (immutable || !flagOn(run, reg, mutable.flag)) ? mutable.paths : []
  return [...new Set([...METADATA, ...(FORCE_NEW[key] ?? []), ...extra, ...reg.replaceOnChanges])]
}

function differs(a: Value | undefined, b: Value | undefined): boolean {
  if (a !== undefined && hasUnknown(a)) return true
  if (b !== undefined && hasUnknown(b)) return true
  return !isDeepStrictEqual(a, b)
}

/** What the engine would do to every Kubernetes object going from `before`'s state to `after`'s program. */
export function planChanges(before: EngineRun, after: EngineRun): Change[] {
  const kube = (run: EngineRun) => run.registrations.filter((r) => r.custom && r.type.startsWith('kubernetes:'))
  const old = new Map(kube(before).map((r) => [r.urn, r]))
  const changes: Change[] = []
  for (const reg of kube(after)) {
    const prev = old.get(reg.urn)
    old.delete(reg.urn)
    const base = { urn: reg.urn, object: objectName(reg), deleteFirst: false, because: [] as string[], refused: false }
    if (!prev) {
      changes.push({ ...base, action: 'create' })
      continue
    }
    const [a, b] = [plain(prev.inputs), plain(reg.inputs)]
    if (!differs(a, b)) {
      changes.push({ ...base, action: 'same' })
      continue
    }
    const because = forceNewPaths(after, reg).filter((path) => differs(at(a, path), at(b, path)))
    if (because.length === 0) {
      changes.push({ ...base, action: 'update' })
      continue
    }
    const named = typeof at(b, 'metadata.name') === 'string'
    changes.push({
      ...base,
      action: 'replace',
      because,
      deleteFirst: named || reg.deleteBeforeReplace,
      refused: prev.protect === true,
    })
  }
  for (const prev of old.values()) {
    changes.push({
      urn: prev.urn,
      object: objectName(prev),
      action: 'delete',
      deleteFirst: false,
      because: [],
      refused: prev.protect === true,
    })
  }
  return changes
}

/** `Kind/name` of every object a pod template of the run refers to by name. */
export function referencedByPods(run: EngineRun): Set<string> {
  const refs = new Set<string>()
  for (const reg of run.registrations.filter((r) => r.custom && r.type.startsWith('kubernetes:'))) {
    const o = plain(reg.inputs) as Obj
    const pod = (at(o, 'spec.template.spec') ?? at(o, 'spec.jobTemplate.spec.template.spec')) as Obj | undefined
    if (!pod) continue
    const add = (kind: string, name: Value | undefined) => typeof name === 'string' && refs.add(`${kind}/${name}`)
    add('ServiceAccount', pod.serviceAccountName)
    for (const v of (pod.volumes ?? []) as Obj[]) {
      add('Secret', at(v, 'secret.secretName'))
      add('ConfigMap', at(v, 'configMap.name'))
      add('PersistentVolumeClaim', at(v, 'persistentVolumeClaim.claimName'))
    }
    for (const c of [...((pod.containers ?? []) as Obj[]), ...((pod.initContainers ?? []) as Obj[])]) {
      for (const e of (c.env ?? []) as Obj[]) {
        add('Secret', at(e, 'valueFrom.secretKeyRef.name'))
        add('ConfigMap', at(e, 'valueFrom.configMapKeyRef.name'))
      }
      for (const e of (c.envFrom ?? []) as Obj[]) {
        add('Secret', at(e, 'secretRef.name'))
        add('ConfigMap', at(e, 'configMapRef.name'))
      }
    }
  }
  return refs
}
