/**
 * `svcops probe` on the Kubernetes platform: the same interfaces as on hosts, read the way the runs
 * read them there. The recording service: its Deployment through the Kubernetes API, then the
 * seed's `GET /` and content list through its Service. The live system: each Deployment, then the
 * checks an upgrade makes (src/live/kubernetes/controller-service.ts) on the release it runs — the
 * seed's endpoint of each instance by its UUID through the controller's Service, the declared
 * checks through the Service and the pod proxy. Only GET requests and a port-forward: no lock, no
 * `pulumi`, nothing written.
 */
import type { LiveClusterConfig } from '../config/live-cluster.ts'
import type { Environment } from '../config/schema.ts'
import { errorMessage } from '../core/errors.ts'
import { clusterCheckPlan, clusterUnitChecks } from '../live/kubernetes/controller-service.ts'
import { clusterLiveConfig, openLiveCluster } from '../live/kubernetes/live-cluster-handle.ts'
import { LIVE_COMPONENTS, productOf } from '../live/layout.ts'
import { declaredFor, seedEndpointOf } from '../live/live-checks.ts'
import { openRecordingCluster } from '../recording/kubernetes/recording-deployment.ts'
import { row, type ProbeRow } from './probe-row.ts'
import { probeRecordingService } from './probe-recording.ts'

/** What to set when the cluster does not answer: where the stack points, and the rights. */
const CLUSTER_KEY = 'kubernetes:context, kubernetes:kubeconfig, svcops:deploy.namespace (the rights: docs/deploy.md)'

/** The recording service on Kubernetes: its Deployment, then `GET /` and the content list through its Service. */
export async function probeRecordingCluster(env: Environment): Promise<ProbeRow[]> {
  const c = openRecordingCluster(env)
  const where = c.target.deployment
  try {
    try {
      const d = await c.kube().readDeployment()
      const rows = [
        row({
          part: 'cluster',
          where,
          interface: `the Deployment ${c.target.namespace}/${where}`,
          source: 'assumed',
          holds: true,
          evidence: `${d.readyReplicas}/${d.replicas} ready on ${d.version ?? '?'}`,
        }),
      ]
      await c.connect()
      return [...rows, ...(await probeRecordingService(env, where, c.url, 'svcops:deploy.recording.port'))]
    } catch (error) {
      return [
        row({
          part: 'cluster',
          where,
          interface: `the Deployment ${c.target.namespace}/${where} and its Service`,
          source: 'assumed',
          holds: false,
          evidence: errorMessage(error),
          key: CLUSTER_KEY,
        }),
      ]
    }
  } finally {
    await c.close()
  }
}

/** The live system on Kubernetes: each Deployment, then the seed's and the declared checks of its instance on the release it runs. */
export async function probeLiveCluster(env: Environment, section: LiveClusterConfig): Promise<ProbeRow[]> {
  const cluster = openLiveCluster(env, section)
  const live = clusterLiveConfig(env, section, cluster)
  const plan = clusterCheckPlan(live, productOf(live))
  const rows: ProbeRow[] = []
  try {
    for (const c of LIVE_COMPONENTS) {
      const deployment = cluster.targets[c].deployment
      let version: string
      try {
        const d = await cluster.kube(c).readDeployment()
        version = d.version ?? live.version
        rows.push(
          row({
            part: 'cluster',
            where: c,
            interface: `the Deployment ${cluster.namespace}/${deployment}`,
            source: 'assumed',
            holds: true,
            evidence: `${d.readyReplicas}/${d.replicas} ready on ${d.version ?? '?'}`,
          }),
        )
      } catch (error) {
        rows.push(
          row({
            part: 'cluster',
            where: c,
            interface: `the Deployment ${cluster.namespace}/${deployment}`,
            source: 'assumed',
            holds: false,
            evidence: errorMessage(error),
            key: CLUSTER_KEY,
          }),
        )
        continue
      }
      const declared = declaredFor(plan, c)
      if (!seedEndpointOf(c) && !declared.length)
        rows.push(
          row({
            part: 'live',
            where: c,
            interface: 'a check of the controller itself',
            source: 'assumed',
            holds: undefined,
            evidence: 'none: the seed names no endpoint of the controller alone, and the stack declares none',
            key: 'live.checks',
          }),
        )
      for (const r of await clusterUnitChecks(cluster, plan, c, version)) {
        const check = declared.find((d) => d.name === r.check)
        if (!check) {
          // The seed's endpoint by UUID; without one, said as not tried.
          const untried = r.ok && r.detail?.startsWith('not checked')
          rows.push(
            row({
              part: 'live',
              where: c,
              interface: r.check.replace(/ answers \(seed\)$/, ''),
              source: 'seed',
              holds: untried ? undefined : r.ok,
              evidence: untried ? `not tried: no UUID for ${c}` : (r.detail ?? 'answers'),
              key: `live.uuids.${c}`,
            }),
          )
        } else
          rows.push(
            row({
              part: 'live',
              where: c,
              interface: check.name,
              source: 'assumed',
              holds: r.ok,
              evidence: r.detail ?? 'passes',
              key: `live.checks[${plan.checks.indexOf(check)}] (${check.name})`,
            }),
          )
      }
    }
  } finally {
    await cluster.close()
  }
  return rows
}
