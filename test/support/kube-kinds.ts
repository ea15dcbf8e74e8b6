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

/**
 * The discovery documents the API server serves for these kinds, as kubectl reads them before a
 * `get`, an `apply` or a `wait` (k8s.io/apimachinery pkg/apis/meta/v1 types.go: APIVersions,
 * APIGroupList, APIResourceList; the legacy, unaggregated form, which client-go's discovery client
 * falls back to when the answer is plain JSON): `/api`, `/apis`, `/api/v1` and `/apis/GROUP/VERSION`.
 * Undefined for any other path.
 */
export function discoveryDocument(path: string): Record<string, unknown> | undefined {
  if (path === '/api') return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] }
  const groups = [...new Set(KINDS.filter((k) => k.group).map((k) => `${k.group}/${k.version}`))]
  if (path === '/apis')
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: groups.map((gv) => {
        const [name = '', version = ''] = gv.split('/')
        const v = { groupVersion: gv, version }
        return { name, versions: [v], preferredVersion: v }
      }),
    }
  const groupVersion = path === '/api/v1' ? 'v1' : path.startsWith('/apis/') ? path.slice('/apis/'.length) : ''
  const kinds = KINDS.filter((k) => apiVersionOf(k) === groupVersion)
  if (kinds.length === 0) return undefined
  const verbs = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: kinds.flatMap((k) => [
      { name: k.resource, singularName: k.kind.toLowerCase(), namespaced: k.namespaced, kind: k.kind, verbs },
      ...(k.kind === 'Deployment'
        ? [
            {
              name: `${k.resource}/scale`,
              singularName: '',
              namespaced: true,
              group: 'autoscaling',
              version: 'v1',
              kind: 'Scale',
              verbs: ['get', 'patch', 'update'],
            },
          ]
        : []),
    ]),
  }
}
