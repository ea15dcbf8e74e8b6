/**
 * The rights a run on the Kubernetes platform uses in the stack's namespace, derived from what the
 * stack renders, and the Role of a scheduled upgrade made of exactly those rights. One table for
 * the scheduled jobs' Roles (scheduledJobs.ts) and for the platforms' preflight, which asks the API
 * server for the same list (`jobRights`, one SelfSubjectAccessReview each):
 *
 * - what `pulumi preview --refresh` / `pulumi up --refresh` reads: a `get` of every object the
 *   stack renders, by name (the namespace itself included: a Role in a namespace may grant `get`
 *   on its own Namespace object, which is in that namespace);
 * - what Pulumi's wait for a rollout watches (Deployments, ReplicaSets, pods, their claims, events);
 * - what svcops reads besides (pod logs; the live components' metrics through the pod proxy);
 * - the writes the playbooks make (`JOB_WRITES`): `pulumi up --target` of the objects a version
 *   change touches (the recording service's stop and start too: its `heldReplicas` in the stack).
 *
 * No module here imports Pulumi: svcops' preflight uses it without loading the SDK.
 */
import type { NeededRight } from '../drivers/kubernetes.ts'

/** The system a scheduled upgrade (or a run) acts on. */
export type JobSystem = 'recording' | 'live'

/** One object the stack renders, as `pulumi preview --refresh` reads it back. */
export interface StackObject {
  apiVersion: string
  kind: string
  name: string
}

/** An RBAC rule of a Role, as the program declares it. */
export interface RoleRule {
  apiGroups: string[]
  resources: string[]
  resourceNames?: string[]
  verbs: string[]
}

/** Which objects of the stack a write names. */
type Target = 'recording' | 'liveComponents' | 'liveSecrets' | 'stackMap'

/** A write the playbooks make, by system. */
interface WriteRow {
  group: string
  resource: string
  subresource?: string
  verb: string
  target: Target
  why: string
}

/**
 * The writes each system's playbook makes. A version change touches the objects that carry the
 * version (the version label is on Deployments and their pod templates only: kube.ts), the jobs'
 * copy of the stack file, and for the live system the PSK and settings Secrets (a rotation).
 */
export const JOB_WRITES: Record<JobSystem, WriteRow[]> = {
  recording: [
    {
      group: 'apps',
      resource: 'deployments',
      verb: 'patch',
      target: 'recording',
      why: '`pulumi up` of the stop, the new version and the start (the Deployment)',
    },
    { group: '', resource: 'configmaps', verb: 'patch', target: 'stackMap', why: "`pulumi up` of the jobs' copy of the stack file" },
  ],
  live: [
    { group: 'apps', resource: 'deployments', verb: 'patch', target: 'liveComponents', why: '`pulumi up` of the new release' },
    { group: '', resource: 'secrets', verb: 'patch', target: 'liveSecrets', why: '`pulumi up` of the PSK and the settings file' },
    { group: '', resource: 'configmaps', verb: 'patch', target: 'stackMap', why: "`pulumi up` of the jobs' copy of the stack file" },
  ],
}

/** Reads besides the refresh: Pulumi's wait for a rollout and svcops' own status, logs and metrics. */
const JOB_READS: (Omit<NeededRight, 'name'> & { system?: JobSystem; metricsOnly?: boolean })[] = [
  { group: 'apps', resource: 'deployments', verb: 'list', why: "Pulumi's wait for the rollout" },
  { group: 'apps', resource: 'deployments', verb: 'watch', why: "Pulumi's wait for the rollout" },
  { group: 'apps', resource: 'replicasets', verb: 'get', why: "Pulumi's wait for the rollout" },
  { group: 'apps', resource: 'replicasets', verb: 'list', why: "Pulumi's wait for the rollout" },
  { group: 'apps', resource: 'replicasets', verb: 'watch', why: "Pulumi's wait for the rollout" },
  { group: '', resource: 'pods', verb: 'get', why: 'the status of every pod' },
  { group: '', resource: 'pods', verb: 'list', why: 'the status of every pod' },
  { group: '', resource: 'pods', verb: 'watch', why: "Pulumi's wait for the rollout" },
  { group: '', resource: 'persistentvolumeclaims', verb: 'list', why: "Pulumi's wait for the rollout" },
  { group: '', resource: 'persistentvolumeclaims', verb: 'watch', why: "Pulumi's wait for the rollout" },
  { group: '', resource: 'events', verb: 'list', why: "Pulumi's wait for the rollout" },
  { group: '', resource: 'events', verb: 'watch', why: "Pulumi's wait for the rollout" },
  { group: '', resource: 'pods', subresource: 'log', verb: 'get', why: 'the last log lines of every pod' },
  {
    group: '',
    resource: 'pods',
    subresource: 'proxy',
    verb: 'get',
    system: 'live',
    metricsOnly: true,
    why: "the media components' metrics (pod proxy)",
  },
]

/**
 * The live system's run store in the cluster (src/live/kubernetes/live-cluster-run-store.ts): two
 * ConfigMaps per run, named by the run, so granted by no name (RBAC cannot restrict `create` or
 * `list` by name). Without them the scheduled live upgrade's record never reaches the cluster.
 */
export const LIVE_RUN_STORE_RIGHTS: NeededRight[] = [
  { group: '', resource: 'configmaps', verb: 'list', why: 'the run store: runs list, resume, rollback' },
  { group: '', resource: 'configmaps', verb: 'get', why: 'the run store: a run read back' },
  { group: '', resource: 'configmaps', verb: 'create', why: "the run store: a run's record and journal" },
  { group: '', resource: 'configmaps', verb: 'patch', why: "the run store: a run's record and journal" },
  { group: '', resource: 'configmaps', verb: 'delete', why: 'the run store: a run refused before it began is forgotten' },
]

/**
 * The ConfigMap holding the jobs' copy of the stack file, when the program declares it: whenever the
 * stack has jobs and any schedule (src/infra/index.ts makes ScheduledJobs for an upgrade, a live
 * upgrade or a backup schedule). A run of either system updates its data with the version, so each
 * run's preview rule and rights must know it; a stack with a live upgrade schedule alone has it too.
 */
export function stackCopyName(
  deploy: { jobs?: unknown; upgradeSchedule?: unknown; liveUpgradeSchedule?: unknown; backupSchedule?: unknown },
  prefix: string,
): string | undefined {
  const scheduled = !!deploy.jobs && !!(deploy.upgradeSchedule ?? deploy.liveUpgradeSchedule ?? deploy.backupSchedule)
  return scheduled ? targetNames({ prefix }, 'stackMap')[0] : undefined
}

/** The names of the objects a live run writes (`pulumi up` of a release, a PSK rotation), by the stack's product prefix. */
export function liveWriteNames(prefix: string): { deployments: string[]; secrets: string[] } {
  return { deployments: targetNames({ prefix }, 'liveComponents'), secrets: targetNames({ prefix }, 'liveSecrets') }
}

/** The API group and resource of a kind (`apps/v1` `Deployment` -> apps, deployments). */
export function resourceOf(apiVersion: string, kind: string): { group: string; resource: string } {
  const group = apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : ''
  const lower = kind.toLowerCase()
  return { group, resource: lower.endsWith('y') ? `${lower.slice(0, -1)}ies` : `${lower}s` }
}

/** What a scheduled upgrade (or a preflight) of one system of one stack needs to know. */
export interface JobScope {
  system: JobSystem
  /** Product prefix (`svc`): the objects' names. */
  prefix: string
  /** Every object the stack renders (the inventory the program keeps, or `svcops render`'s objects). */
  objects: StackObject[]
  /** The media components serve metrics (`live.metrics`): the live checks read them through the pod proxy. */
  metrics?: boolean
}

function targetNames(scope: Pick<JobScope, 'prefix'>, target: Target): string[] {
  const p = scope.prefix
  return {
    recording: [`${p}-recording`],
    liveComponents: [`${p}-system-controller`, `${p}-ingest`, `${p}-pipeline`, `${p}-control-panel`],
    liveSecrets: [`${p}-psk`, `${p}-system-controller-settings`],
    stackMap: [`${p}-svcops-stack`],
  }[target]
}

/**
 * Every right a run of `scope.system` uses in the namespace, one per verb, resource and name: the
 * list the preflight checks and the Role grants.
 */
export function jobRights(scope: JobScope): NeededRight[] {
  const rights: NeededRight[] = []
  const seen = new Set<string>()
  const add = (r: NeededRight) => {
    const key = `${r.verb} ${r.group}/${r.resource}/${r.subresource ?? ''} ${r.name ?? ''}`
    if (seen.has(key)) return
    seen.add(key)
    rights.push(r)
  }
  for (const o of scope.objects) {
    const { group, resource } = resourceOf(o.apiVersion, o.kind)
    add({
      group,
      resource,
      verb: 'get',
      name: o.name,
      why: o.kind === 'Namespace' ? 'the refresh reads the namespace' : 'the refresh reads it',
    })
  }
  for (const r of JOB_READS) {
    if (r.system && r.system !== scope.system) continue
    if (r.metricsOnly && !scope.metrics) continue
    const { system: _s, metricsOnly: _m, ...right } = r
    add(right)
  }
  if (scope.system === 'live') for (const r of LIVE_RUN_STORE_RIGHTS) add(r)
  const present = new Set(scope.objects.map((o) => `${resourceOf(o.apiVersion, o.kind).resource}/${o.name}`))
  for (const w of JOB_WRITES[scope.system])
    for (const name of targetNames(scope, w.target))
      if (present.has(`${w.resource}/${name}`))
        add({
          group: w.group,
          resource: w.resource,
          ...(w.subresource ? { subresource: w.subresource } : {}),
          verb: w.verb,
          name,
          why: w.why,
        })
  return rights
}

/**
 * The Role's rules for `rights`: one rule per API group, resource, verbs and names, resources that
 * share verbs and names together; in a fixed order so that a diff of the Role shows what changed.
 */
export function roleRules(rights: NeededRight[]): RoleRule[] {
  const byResource = new Map<string, { group: string; resource: string; verbs: Set<string>; names: Set<string> | undefined }>()
  // Rights by name and rights on any name of the same resource and verbs stay separate rules.
  for (const r of rights) {
    const resource = r.subresource ? `${r.resource}/${r.subresource}` : r.resource
    const key = `${r.group}|${resource}|${r.name ? 'named' : 'any'}|${r.name ? r.verb : ''}`
    const entry = byResource.get(key) ?? {
      group: r.group,
      resource,
      verbs: new Set<string>(),
      names: r.name ? new Set<string>() : undefined,
    }
    entry.verbs.add(r.verb)
    if (r.name) entry.names?.add(r.name)
    byResource.set(key, entry)
  }
  const rules = new Map<string, RoleRule>()
  for (const e of byResource.values()) {
    const verbs = [...e.verbs].sort()
    const names = e.names ? [...e.names].sort() : undefined
    const key = `${e.group}|${verbs.join(',')}|${names?.join(',') ?? '*'}`
    const rule = rules.get(key) ?? { apiGroups: [e.group], resources: [], ...(names ? { resourceNames: names } : {}), verbs }
    rule.resources.push(e.resource)
    rules.set(key, rule)
  }
  const order = (r: RoleRule) => `${r.apiGroups[0]}|${r.resources[0]}|${r.verbs.join(',')}`
  return [...rules.values()].map((r) => ({ ...r, resources: r.resources.sort() })).sort((a, b) => (order(a) < order(b) ? -1 : 1))
}

/** The inventory a stack's objects form, from declared resources (`svcops render`'s `objects`, the program's inventory). */
export function stackObjectsOf(resources: { unwrapped: Record<string, unknown> }[]): StackObject[] {
  return resources.map((r) => ({
    apiVersion: String(r.unwrapped.apiVersion),
    kind: String(r.unwrapped.kind),
    name: String((r.unwrapped.metadata as { name?: unknown } | undefined)?.name),
  }))
}
