/**
 * The namespace's NetworkPolicies as the rehearsal's Job meets them: the program's default deny
 * selects every pod, and its rehearsal policy (src/infra/recordingService.ts) lets the Job's pod
 * reach what the recording service reaches. Without such a policy (a namespace of the site's, a
 * program before it), a policy that selects the Job's pod and limits egress may keep the Job from
 * the database server. Such a policy is named, as a warning of the run, before the
 * first Job starts, so a rehearsal that then fails to reach its copy shows why beside its failure.
 */
import type { V1LabelSelector, V1NetworkPolicy } from '@kubernetes/client-node'
import { errorMessage } from '../../core/errors.ts'
import { callKubernetes, kubernetesClient, loadKubeConfig, type ClusterTarget } from '../../drivers/kubernetes.ts'

/** Whether `selector` selects a pod labelled `labels` (matchLabels and matchExpressions, as the API defines them). */
export function selects(selector: V1LabelSelector | undefined, labels: Record<string, string>): boolean {
  const exact = Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v)
  const expressions = (selector?.matchExpressions ?? []).every((e) => {
    const value = labels[e.key]
    if (e.operator === 'In') return value !== undefined && (e.values ?? []).includes(value)
    if (e.operator === 'NotIn') return value === undefined || !(e.values ?? []).includes(value)
    if (e.operator === 'Exists') return value !== undefined
    if (e.operator === 'DoesNotExist') return value === undefined
    return false
  })
  return exact && expressions
}

/**
 * The policies that select a pod labelled `labels` and limit its egress, as sentences naming each;
 * none when one of them is written for that pod (its `podSelector` names the pod's
 * `app.kubernetes.io/name`, as the program's rehearsal policy does): policies add up, so that one
 * lets it out as it says.
 */
export function egressLimits(policies: V1NetworkPolicy[], labels: Record<string, string>): string[] {
  const limiting = policies
    .filter((p) => selects(p.spec?.podSelector, labels))
    .filter((p) => (p.spec?.policyTypes ?? []).includes('Egress') || p.spec?.egress !== undefined)
  const app = labels['app.kubernetes.io/name']
  if (limiting.some((p) => app !== undefined && p.spec?.podSelector?.matchLabels?.['app.kubernetes.io/name'] === app)) return []
  return limiting.map(
    (p) =>
      `NetworkPolicy ${p.metadata?.name ?? '?'} selects the rehearsal's pod and limits its egress, and no policy names that pod (app.kubernetes.io/name=${app ?? '?'}): it reaches the scratch database only if a rule lets it reach the database server`,
  )
}

/** The namespace's NetworkPolicies that limit the egress of a pod labelled `labels`; a refused or failed read is said, not thrown. */
export async function readEgressLimits(target: ClusterTarget, labels: Record<string, string>): Promise<string[]> {
  const kc = loadKubeConfig(target)
  const request = `GET /apis/networking.k8s.io/v1/namespaces/${target.namespace}/networkpolicies`
  try {
    const list = await callKubernetes(
      {
        request,
        what: request,
        server: kc.getCurrentCluster()?.server ?? 'the cluster',
        timeoutMs: target.timeoutMs,
        rights: 'docs/upgrade.md',
      },
      (options) =>
        kc.makeApiClient(kubernetesClient().NetworkingV1Api).listNamespacedNetworkPolicy({ namespace: target.namespace }, options),
    )
    return egressLimits(list.items, labels)
  } catch (error) {
    return [
      `the namespace's NetworkPolicies could not be read (${errorMessage(error).replace(/\.$/, '')}), so whether one keeps the rehearsal's pod from its database is not known`,
    ]
  }
}
