/**
 * The checks of the live production system on Kubernetes, the same as on hosts
 * (src/live/live-checks.ts): the seed's endpoint of each instance by its UUID on the prefix of the
 * running release (`GET <prefix>/ingests/{uuid}?expand=true` with the release's ingest metric
 * names, `/pipelines/{uuid}?expand=true`, `/controlpanels/{uuid}`), then the site's declared checks
 * (`svcops:live.checks`). Only the way of reading differs: the controller through its Service (its
 * DNS name in the cluster, a port-forward from a workstation, or `live.controllerUrl`; with
 * `deploy.tls` the stack's CA from its ConfigMap is the only one trusted), a component's own port
 * through the API server's pod proxy on every pod (`deploy.live.metrics.port`). A command check has
 * no host to run on here: the loader refuses one on this platform (src/config/live-cluster.ts).
 */
import { errorMessage } from '../../core/errors.ts'
import { createHttpClient } from '../../core/http.ts'
import { describeCall, type PodFacts } from '../../drivers/kubernetes.ts'
import type { LiveComponentName, LiveProduct } from '../layout.ts'
import { declaredFor, describeUnitChecks, runDeclaredCheck, runUnitChecks, type CheckPlan, type CheckReader } from '../live-checks.ts'
import type { Answer, CheckResult } from '../live-judge.ts'
import type { LiveUnit } from '../live-placement.ts'
import type { LiveCluster } from './live-cluster-handle.ts'

/** Pods that count: not being deleted. */
export async function livePods(cluster: LiveCluster, c: LiveComponentName): Promise<PodFacts[]> {
  return (await cluster.kube(c).listPods()).filter((p) => !p.deleting)
}

/** The key of the CA certificate in the stack's CA ConfigMap (src/infra/tls.ts). */
const CA_KEY = 'ca.crt'

/**
 * `GET <path>` of the system controller through its Service: in the cluster by its DNS name, from a
 * workstation through a port-forward, or at `live.controllerUrl`. With `deploy.tls` the stack's CA
 * (its ConfigMap) is the only one trusted, for the Service's name. Never throws: a failure is the answer.
 */
export async function controllerGet(cluster: LiveCluster, path: string): Promise<Answer> {
  try {
    const base = await cluster.connect()
    const tls =
      cluster.tls && cluster.reach !== 'configured'
        ? {
            ca: (await cluster.kube('system-controller').readConfigMap(cluster.tls.caConfigMap))[CA_KEY] ?? '',
            serverName: cluster.tls.serverName,
          }
        : undefined
    if (tls && !tls.ca) return { error: `the ConfigMap ${cluster.tls?.caConfigMap} holds no ${CA_KEY}` }
    const client = createHttpClient(tls ?? {})
    try {
      const answer = await client.send({ peer: 'live-controller', method: 'GET', url: `${base.replace(/\/+$/, '')}${path}` })
      return { status: answer.status, body: answer.body }
    } finally {
      await client.close()
    }
  } catch (error) {
    return { error: errorMessage(error) }
  }
}

/** How the controller's Service is reached, for the dry run. */
export function describeService(cluster: LiveCluster): string {
  return cluster.reach === 'port-forward'
    ? 'http://127.0.0.1:PORT (port-forward to the Service)'
    : cluster.controllerUrl.replace(/\/+$/, '')
}

/** The API server's answer for a pod's own port that the pod itself gave: 404 means the path is not there. */
const POD_STATUS = /with HTTP (404)\.$/

/** `GET <path>` on one pod's own port through the API server's pod proxy; never throws. */
async function podGet(cluster: LiveCluster, c: LiveComponentName, pod: string | undefined, path: string): Promise<Answer> {
  const m = cluster.metrics
  if (!m) return { error: 'svcops:deploy.live.metrics is not set, so the pods declare no port of their own to read' }
  if (!pod) return { error: 'no pod' }
  try {
    return { status: 200, body: await cluster.kube(c).podProxyGet(pod, m.port, path) }
  } catch (error) {
    const message = errorMessage(error)
    const status = POD_STATUS.exec(message)?.[1]
    return status ? { status: Number(status), body: undefined } : { error: message }
  }
}

/** The reader of the checks on Kubernetes: the controller through its Service, `pod`'s own port through the pod proxy, no command. */
export function clusterCheckReader(cluster: LiveCluster, pod?: string): CheckReader {
  return {
    controllerGet: (path) => controllerGet(cluster, path),
    componentGet: (unit, path) => podGet(cluster, unit.component, pod, path),
    rootOf: () => '',
    describeController: () => describeService(cluster),
    // The pod proxy's path of each pod (POD), for the dry run's `GET <this><path>`.
    describeComponent: (unit) =>
      cluster.metrics
        ? describeCall.podProxy(cluster.targets[unit.component], cluster.metrics.port, '').replace(/^GET | \(every pod\)$/g, '')
        : '(no port of its own: svcops:deploy.live.metrics is not set) ',
  }
}

/** The checks the stack gives on Kubernetes: the site's and the UUIDs of the seed's endpoints. */
export function clusterCheckPlan(live: { checks: CheckPlan['checks']; uuids: CheckPlan['uuids'] }, product: LiveProduct): CheckPlan {
  return { checks: live.checks, uuids: live.uuids, product }
}

/** The unit of a component on Kubernetes: its Deployment. */
export function deploymentUnit(cluster: LiveCluster, c: LiveComponentName): LiveUnit {
  return { name: c, component: c, host: cluster.namespace }
}

/** Whether a declared check reads the component's own port (then it is asked of every pod). */
const readsPods = (c: CheckPlan['checks'][number]): boolean => !!c.metric || c.web?.target === 'component'

/**
 * The seed's check and every declared check of a component of `version`: those of the controller
 * once, those of the component's own port on every pod (a failure names the pod). `untilFailure`:
 * stop at the first failure (a wait only needs to know whether all pass).
 */
export async function clusterUnitChecks(
  cluster: LiveCluster,
  plan: CheckPlan,
  c: LiveComponentName,
  version: string,
  untilFailure = false,
): Promise<CheckResult[]> {
  const unit = deploymentUnit(cluster, c)
  const perPod = declaredFor(plan, c).filter(readsPods)
  const once = await runUnitChecks(
    clusterCheckReader(cluster),
    { ...plan, checks: plan.checks.filter((x) => !perPod.includes(x)) },
    unit,
    version,
    undefined,
    untilFailure,
  )
  if (!perPod.length || (untilFailure && once.some((r) => !r.ok))) return once
  const pods = await livePods(cluster, c)
  if (!pods.length) return [...once, ...perPod.map((x) => ({ check: x.name, ok: false, detail: 'no pod' }))]
  const byCheck = new Map<string, { failed: CheckResult[]; passed: CheckResult[] }>()
  for (const p of pods) {
    const reader = clusterCheckReader(cluster, p.name)
    for (const check of perPod) {
      const r = await runDeclaredCheck(reader, plan, check, unit, version)
      const seen = byCheck.get(r.check) ?? { failed: [], passed: [] }
      if (r.ok) seen.passed.push(r)
      else seen.failed.push({ ...r, detail: `${p.name}: ${r.detail ?? 'no'}` })
      byCheck.set(r.check, seen)
      if (untilFailure && !r.ok) break
    }
    if (untilFailure && [...byCheck.values()].some((x) => x.failed.length)) break
  }
  const podChecks = [...byCheck].flatMap(([check, { failed, passed }]) =>
    failed.length
      ? failed
      : [
          {
            check,
            ok: true,
            detail: [passed[0]?.detail, `${pods.length} pod(s): ${pods.map((p) => p.name).join(', ')}`].filter(Boolean).join('; '),
          },
        ],
  )
  return [...once, ...podChecks]
}

/** What `clusterUnitChecks` asks, for the dry run. */
export function describeClusterUnitChecks(cluster: LiveCluster, plan: CheckPlan, c: LiveComponentName, version: string): string[] {
  return describeUnitChecks(clusterCheckReader(cluster), plan, deploymentUnit(cluster, c), version)
}

/** The controller's declared checks through its Service, as one result (the seed names no endpoint of the controller alone). */
export async function controllerThroughService(cluster: LiveCluster, plan: CheckPlan, version: string): Promise<CheckResult> {
  const results = await clusterUnitChecks(cluster, plan, 'system-controller', version)
  const failed = results.filter((r) => !r.ok)
  return failed.length
    ? { check: 'the system controller', ok: false, detail: failed.map((r) => `${r.check}: ${r.detail ?? 'no'}`).join('; ') }
    : {
        check: 'the system controller',
        ok: true,
        detail: results.length ? results.map((r) => r.check).join(', ') : 'no check declared for it',
      }
}
