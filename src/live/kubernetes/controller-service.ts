/**
 * The system controller through its Service, and the media components' metrics through the API
 * server's pod proxy: what the checks of a live upgrade on Kubernetes read, each answer judged by
 * live-judge.ts as on a host. The controller is reached by its DNS name in the cluster, through a
 * port-forward from a workstation, or at `live.controllerUrl`; with `deploy.tls` the stack's CA (its
 * ConfigMap) is the only one trusted, through the one HTTP client (src/core/http.ts).
 */
import { errorMessage } from '../../core/errors.ts'
import { createHttpClient } from '../../core/http.ts'
import type { PodFacts } from '../../drivers/kubernetes.ts'
import { apiPrefix } from '../../releases/versions.ts'
import type { LiveComponentName, LiveProduct } from '../layout.ts'
import { judgeConnection, judgeControllerStatus, judgeMetrics, metricsCheckName, type Answer, type CheckResult } from '../live-judge.ts'
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

/** The system controller answering `GET <prefix>/status` with its version, through its Service. */
export async function controllerThroughService(cluster: LiveCluster, version: string): Promise<CheckResult> {
  const prefix = apiPrefix(version)
  return judgeControllerStatus(
    `the system controller answers on ${prefix} through its Service`,
    version,
    await controllerGet(cluster, `${prefix}/status`),
  )
}

/** The controller, through its Service, listing `component` connected at `version` (`GET <prefix>/components`). */
export async function connectionThroughService(cluster: LiveCluster, component: LiveComponentName, version: string): Promise<CheckResult> {
  return judgeConnection(component, version, await controllerGet(cluster, `${apiPrefix(version)}/components`))
}

/**
 * The metric names of the release on every pod of a media component, read through the API
 * server's pod proxy at `deploy.live.metrics`; without that section the program declares no
 * metrics port, and the check says it was not made.
 */
export async function metricsThroughProxy(
  cluster: LiveCluster,
  product: LiveProduct,
  component: LiveComponentName,
  version: string,
): Promise<CheckResult[]> {
  const check = metricsCheckName(product, component, version)
  const m = cluster.metrics
  if (!m) return [{ check, ok: true, detail: 'not checked: svcops:deploy.live.metrics is not set, so the pods declare no metrics port' }]
  const pods = await livePods(cluster, component)
  if (!pods.length) return [{ check, ok: false, detail: 'no pod' }]
  const results: CheckResult[] = []
  for (const p of pods) {
    let answer: Answer
    try {
      answer = { status: 200, body: await cluster.kube(component).podProxyGet(p.name, m.port, m.path) }
    } catch (error) {
      answer = { error: errorMessage(error) }
    }
    results.push(judgeMetrics(product, component, version, answer, p.name))
  }
  const failed = results.filter((r) => !r.ok)
  return failed.length ? failed : [{ check, ok: true, detail: `${pods.length} pod(s): ${pods.map((p) => p.name).join(', ')}` }]
}
