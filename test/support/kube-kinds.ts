/**
 * The object kinds the platform's program renders, as the API serves them: group, version,
 * resource (the URL's plural), and whether they live in a namespace. Used by the Kubernetes API
 * stand-in to route requests and by the in-test Pulumi to build the URLs pulumi-kubernetes calls.
 */

export interface KindInfo {
  group: string
  version: string
  kind: string
  resource: string
  namespaced: boolean
}

const KINDS: KindInfo[] = [
  { group: '', version: 'v1', kind: 'Namespace', resource: 'namespaces', namespaced: false },
  { group: '', version: 'v1', kind: 'Secret', resource: 'secrets', namespaced: true },
  { group: '', version: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true },
  { group: '', version: 'v1', kind: 'Service', resource: 'services', namespaced: true },
  { group: '', version: 'v1', kind: 'ServiceAccount', resource: 'serviceaccounts', namespaced: true },
  { group: '', version: 'v1', kind: 'PersistentVolumeClaim', resource: 'persistentvolumeclaims', namespaced: true },
  { group: '', version: 'v1', kind: 'Pod', resource: 'pods', namespaced: true },
  { group: '', version: 'v1', kind: 'Event', resource: 'events', namespaced: true },
  { group: '', version: 'v1', kind: 'Endpoints', resource: 'endpoints', namespaced: true },
  { group: 'apps', version: 'v1', kind: 'Deployment', resource: 'deployments', namespaced: true },
  { group: 'apps', version: 'v1', kind: 'ReplicaSet', resource: 'replicasets', namespaced: true },
  { group: 'policy', version: 'v1', kind: 'PodDisruptionBudget', resource: 'poddisruptionbudgets', namespaced: true },
  { group: 'networking.k8s.io', version: 'v1', kind: 'NetworkPolicy', resource: 'networkpolicies', namespaced: true },
  { group: 'batch', version: 'v1', kind: 'CronJob', resource: 'cronjobs', namespaced: true },
  { group: 'batch', version: 'v1', kind: 'Job', resource: 'jobs', namespaced: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role', resource: 'roles', namespaced: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding', resource: 'rolebindings', namespaced: true },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole', resource: 'clusterroles', namespaced: false },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding', resource: 'clusterrolebindings', namespaced: false },
]

/** The kind of `apiVersion` + `kind` (`apps/v1`, `Deployment`). */
export function kindInfo(apiVersion: string, kind: string): KindInfo | undefined {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion]
  return KINDS.find((k) => k.group === group && k.version === version && k.kind === kind)
}

/** The kind served at `group`/`version`/`resource`. */
export function kindOfResource(group: string, version: string, resource: string): KindInfo | undefined {
  return KINDS.find((k) => k.group === group && k.version === version && k.resource === resource)
}

/** The URL of an object (or, without `name`, of its collection). */
export function objectPath(info: KindInfo, namespace: string | undefined, name?: string): string {
  const base = info.group ? `/apis/${info.group}/${info.version}` : `/api/${info.version}`
  const ns = info.namespaced ? `/namespaces/${namespace ?? 'default'}` : ''
  return `${base}${ns}/${info.resource}${name ? `/${name}` : ''}`
}

/** `apiVersion` of a kind. */
export function apiVersionOf(info: KindInfo): string {
  return info.group ? `${info.group}/${info.version}` : info.version
}
