/**
 * What a live upgrade on Kubernetes checks before it changes anything, and what it lets `pulumi up`
 * apply: the rights it needs in the namespace (one SelfSubjectAccessReview each), the Pulumi CLI,
 * the stack and the API, and the preview rule — only the live components' changes (and the PSK's
 * when the run rotates it) are targets; anything else in the preview is somebody else's change and
 * stops the run, listed.
 */
import type { Environment } from '../../config/schema.ts'
import { events } from '../../core/events.ts'
import { checkClusterAccess } from '../../drivers/cluster-access.ts'
import { describeCall, showRight, type NeededRight } from '../../drivers/kubernetes.ts'
import {
  pulumiArgv,
  readStackVersion,
  refuseForeignChanges,
  sayUnready,
  unreadyObject,
  urnParts,
  type PreviewDigest,
  type PreviewSplit,
} from '../../drivers/pulumi.ts'
import { outsideEdits, refuseOutsideEdits, showOutsideEdit } from '../../drivers/pulumi-drift.ts'
import { LIVE_RUN_STORE_RIGHTS, liveWriteNames } from '../../infra/jobRights.ts'
import { LIVE_COMPONENTS } from '../layout.ts'
import { LIVE_VERSION_KEY, shownPulumi, type LiveCluster } from './live-cluster-handle.ts'

/** Pulumi operations that change nothing; and those a version change of a component may make. */
const NO_CHANGE = new Set(['same', 'read', 'refresh'])
const COMPONENT_OPS = new Set(['update', 'replace', 'create-replacement', 'delete-replaced'])

/**
 * The preview's changes split into the live components' (the targets of `pulumi up`) and
 * everything else (the refusal lists each): any update or replacement inside the system
 * controller's or a media component's ComponentResource, the jobs' stack copy's data, and — only
 * when the run changed `pskRotation` — the PSK's random password and Secret. A component created or
 * deleted, or anything of the manager, the recording service or the namespace, is foreign.
 */
export function liveComponentChanges(
  digest: PreviewDigest,
  cluster: Pick<LiveCluster, 'prefix' | 'stackMap'>,
  options: { rotation: boolean },
): PreviewSplit {
  const targets: string[] = []
  const other: string[] = []
  const unready: string[] = []
  const components = LIVE_COMPONENTS.map((c) => `${cluster.prefix}-${c}`)
  // A field somebody changed outside svcops (drivers/pulumi-drift.ts) is never a target: named instead.
  const outside = outsideEdits(digest)
  other.push(...new Set(outside.map(showOutsideEdit)))
  for (const step of digest.steps) {
    if (NO_CHANGE.has(step.op) || outside.some((e) => e.urn === step.urn)) continue
    // An object the refresh found not ready is no change (drivers/pulumi.ts `unreadyObject`): named, never a target.
    const notReady = unreadyObject(step)
    if (notReady) {
      unready.push(notReady)
      continue
    }
    const { type, name } = urnParts(step.urn)
    const chain = (step.urn.split('::')[2] ?? '').split('$')
    const paths = Object.keys(step.detailedDiff ?? {})
    const shown = `${step.op} ${type} ${name}${paths.length ? ` (${paths.join(', ')})` : step.diffReasons?.length ? ` (${step.diffReasons.join(', ')})` : ''}`
    const inComponent =
      (chain.includes('svcops:infra:SystemController') || chain.includes('svcops:infra:MediaComponent')) &&
      components.some((c) => name === c || name.startsWith(`${c}-`))
    const inPsk = chain.includes('svcops:infra:Psk') && name.startsWith(`${cluster.prefix}-psk`)
    const stackCopy =
      type === 'kubernetes:core/v1:ConfigMap' &&
      name === cluster.stackMap &&
      step.op === 'update' &&
      paths.every((p) => /^data(\.|\[|$)/.test(p))
    if ((inComponent || (inPsk && options.rotation)) && COMPONENT_OPS.has(step.op)) targets.push(step.urn)
    else if (stackCopy) targets.push(step.urn)
    else other.push(shown)
  }
  for (const d of digest.diagnostics ?? []) if (d.severity === 'error') other.push(`error: ${d.message.trim()}`)
  return { targets, other, unready, outside }
}

/** `pulumi preview` under the rule; a foreign change refused, listing every one. */
export async function previewLiveChange(cluster: LiveCluster, env: Environment, rotation: boolean): Promise<string[]> {
  const preview = liveComponentChanges(await cluster.pulumi().preview(), cluster, { rotation })
  refuseOutsideEdits(env.name, preview.outside)
  refuseForeignChanges(
    env.name,
    preview.other,
    'pulumi preview: only the live components change',
    "the live production system's components, which a live upgrade does not apply",
  )
  sayUnready(env.name, preview.unready, "the live components'")
  return [...new Set(preview.targets)]
}

// ---- rights ----

/**
 * The rights a live run uses in the namespace (docs/live.md lists them), asked as the scheduled
 * live upgrade's Role grants them (src/infra/jobRights.ts, `jobRights`): reads and writes of the
 * stack's objects by name (the components' Deployments, the PSK and settings Secrets, the jobs'
 * stack copy), Pulumi's rollout wait and svcops' own reads for any name, and the run store's
 * ConfigMaps. A right asked for any name where the Role grants it by name is denied by the API
 * server's review, and the scheduled run stopped at its preflight.
 */
export function liveRights(cluster: LiveCluster): NeededRight[] {
  const sc = cluster.targets['system-controller'].deployment
  const deployments = LIVE_COMPONENTS.map((c) => cluster.targets[c].deployment)
  return [
    ...deployments.map((name) => ({ group: 'apps', resource: 'deployments', verb: 'get', name, why: 'read the version of the component' })),
    ...deployments.map((name) => ({ group: 'apps', resource: 'deployments', verb: 'patch', name, why: '`pulumi up` of the new version' })),
    { group: 'apps', resource: 'deployments', verb: 'watch', why: "Pulumi's wait for the rollout" },
    { group: 'apps', resource: 'replicasets', verb: 'list', why: "Pulumi's wait for the rollout" },
    { group: '', resource: 'events', verb: 'list', why: "Pulumi's wait for the rollout" },
    ...liveWriteNames(cluster.prefix).secrets.map((name) => ({
      group: '',
      resource: 'secrets',
      verb: 'patch',
      name,
      why: 'the settings file and the PSK Secret (`pulumi up`)',
    })),
    { group: '', resource: 'pods', verb: 'list', why: 'the status of every pod' },
    { group: '', resource: 'pods', subresource: 'log', verb: 'get', why: 'the last log lines of every pod' },
    { group: '', resource: 'services', verb: 'get', name: sc, why: "the controller's Service" },
    ...(cluster.tls && cluster.reach !== 'configured'
      ? [
          {
            group: '',
            resource: 'configmaps',
            verb: 'get',
            name: cluster.tls.caConfigMap,
            why: "the stack's CA, to trust the controller's certificate",
          },
        ]
      : []),
    ...(cluster.stackMap
      ? [{ group: '', resource: 'configmaps', verb: 'patch', name: cluster.stackMap, why: "the jobs' copy of the stack file" }]
      : []),
    ...LIVE_RUN_STORE_RIGHTS,
    ...(cluster.metrics
      ? [{ group: '', resource: 'pods', subresource: 'proxy', verb: 'get', why: "the media components' metrics (pod proxy)" }]
      : []),
    ...(cluster.reach === 'port-forward'
      ? [
          {
            group: '',
            resource: 'pods',
            subresource: 'portforward',
            verb: 'create',
            why: 'the controller from this machine (port-forward)',
          },
        ]
      : []),
  ]
}

/** The preflight's Kubernetes part for the dry run. */
export function describeLiveClusterPreflight(cluster: LiveCluster, env: Environment): string[] {
  const rights = liveRights(cluster)
  const sc = cluster.targets['system-controller']
  return [
    `the Pulumi CLI and its version: ${shownPulumi(cluster, pulumiArgv.version())}`,
    `the stack '${env.name}' exists and no update of it runs: ${shownPulumi(cluster, pulumiArgv.stacks())}`,
    `the Kubernetes API with context ${sc.context ?? '(the kubeconfig’s current one)'}: ${describeCall.version()}; ${LIVE_COMPONENTS.map((c) => describeCall.deployment(cluster.targets[c])).join('; ')}`,
    `this identity's rights in namespace ${cluster.namespace}: ${rights.map(showRight).join('; ')} — one ${describeCall.access(rights[0] as NeededRight).replace(/ \(.*$/, '')} each`,
    `no change but the live components': ${shownPulumi(cluster, pulumiArgv.preview(cluster.stack()))}; refused, listing every other change`,
    `the stack file's ${LIVE_VERSION_KEY} agrees with the Deployments (said in the report when not)`,
  ]
}

/** The preflight's Kubernetes part: CLI, stack, API, rights, a preview without foreign change, file and cluster agreeing. */
export async function liveClusterPreflight(
  cluster: LiveCluster,
  env: Environment,
  installed: string | undefined,
): Promise<Record<string, unknown>> {
  const { pulumiVersion, kubernetes } = await checkClusterAccess(cluster.pulumi(), cluster.kube('system-controller'), {
    stack: env.name,
    rights: liveRights(cluster),
    grant: 'Grant them (docs/live.md, "Live on Kubernetes") and run again.',
  })
  await previewLiveChange(cluster, env, false)
  const recorded = readStackVersion(cluster.stack().stackFile, LIVE_VERSION_KEY)
  const agree = recorded === installed
  events.emit({
    kind: 'check',
    check: `the stack file's ${LIVE_VERSION_KEY} agrees with the cluster`,
    ok: agree,
    detail: agree ? (recorded ?? '') : `the stack file holds ${recorded ?? 'nothing'}, the Deployments run ${installed ?? 'nothing'}`,
  })
  return { pulumiVersion, kubernetes, stackFile: recorded ?? null, ...(agree ? {} : { disagrees: true }) }
}
