/**
 * Who may do what, as the API server decides it: the request's attributes (verb, API group,
 * resource, subresource, namespace, name: k8s.io/apiserver's RequestInfoFactory), RBAC rules
 * (PolicyRule: apiGroups, resources, resourceNames, verbs; a rule with resourceNames never matches
 * a request without a name, such as a list or a create), Roles bound by RoleBindings to a
 * ServiceAccount in their namespace, and the refusal (403, `NewForbidden` with `forbiddenMessage`
 * from k8s.io/apiserver's responsewriters). Discovery (`/version`, `/api`, `/apis`, `/openapi/*`)
 * and a SelfSubjectAccessReview are open to every authenticated user, as the default
 * `system:discovery` and `system:basic-user` ClusterRoles make them.
 */
import type { Obj } from './kube-fields.ts'

/** What a request asks to do. */
export interface RequestAttributes {
  /** `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`; a non-resource request: the HTTP verb in lower case. */
  verb: string
  resourceRequest: boolean
  group: string
  version: string
  resource: string
  subresource: string
  namespace: string
  name: string
  path: string
}

/** An RBAC rule. */
export interface PolicyRule {
  apiGroups?: string[]
  resources?: string[]
  resourceNames?: string[]
  verbs: string[]
}

/** The attributes of `method path?query` (RequestInfoFactory's reading of the URL). */
export function requestAttributes(method: string, url: URL): RequestAttributes {
  const parts = url.pathname.split('/').filter(Boolean)
  const base = {
    resourceRequest: false,
    group: '',
    version: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
    path: url.pathname,
  }
  let rest: string[]
  let group = ''
  let version = ''
  if (parts[0] === 'api' && parts.length >= 2) {
    version = parts[1] ?? ''
    rest = parts.slice(2)
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    group = parts[1] ?? ''
    version = parts[2] ?? ''
    rest = parts.slice(3)
  } else return { ...base, verb: method.toLowerCase() }
  if (rest.length === 0) return { ...base, verb: method.toLowerCase() }
  let namespace = ''
  if (rest[0] === 'namespaces' && rest.length > 1) {
    namespace = rest[1] ?? ''
    // A namespace's own object: `/api/v1/namespaces/<ns>` (and its subresources) is in that namespace.
    if (rest.length > 2 && !['status', 'finalize'].includes(rest[2] ?? '')) rest = rest.slice(2)
  }
  const [resource = '', name = '', subresource = ''] = rest
  let verb = { GET: 'get', HEAD: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[method] ?? method.toLowerCase()
  if (!name && verb === 'get') verb = url.searchParams.get('watch') === 'true' ? 'watch' : 'list'
  if (!name && verb === 'delete') verb = 'deletecollection'
  return { verb, resourceRequest: true, group, version, resource, subresource, namespace, name, path: url.pathname }
}

const matches = (list: string[] | undefined, value: string) => !!list && (list.includes('*') || list.includes(value))

/** Whether `rules` allow `a` (resource requests only). */
export function allowedBy(
  rules: PolicyRule[],
  a: Pick<RequestAttributes, 'verb' | 'group' | 'resource' | 'subresource' | 'name'>,
): boolean {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource
  return rules.some(
    (r) =>
      matches(r.verbs, a.verb) &&
      matches(r.apiGroups, a.group) &&
      matches(r.resources, resource) &&
      (!r.resourceNames || r.resourceNames.length === 0 || (a.name !== '' && r.resourceNames.includes(a.name))),
  )
}

/** The rules RoleBindings of `namespace` give ServiceAccount `user` (`system:serviceaccount:<ns>:<name>`), from the objects stored there. */
export function rulesOfServiceAccount(user: string, namespace: string, objects: Obj[]): PolicyRule[] {
  const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(user)
  if (!m) return []
  const [, saNamespace, saName] = m
  const inNamespace = (o: Obj) => (o.metadata as Obj | undefined)?.namespace === namespace
  const bindings = objects.filter((o) => o.kind === 'RoleBinding' && inNamespace(o))
  const rules: PolicyRule[] = []
  for (const b of bindings) {
    const subjects = (b.subjects ?? []) as Obj[]
    const bound = subjects.some(
      (s) => s.kind === 'ServiceAccount' && s.name === saName && (s.namespace ?? (b.metadata as Obj).namespace) === saNamespace,
    )
    if (!bound) continue
    const ref = b.roleRef as Obj | undefined
    const role = objects.find((o) => o.kind === ref?.kind && (o.metadata as Obj).name === ref?.name && inNamespace(o))
    rules.push(...((role?.rules ?? []) as unknown as PolicyRule[]))
  }
  return rules
}

/** The API's 403 for a request `user` may not make. */
export function forbiddenStatus(user: string, a: RequestAttributes): Obj {
  let reason: string
  if (!a.resourceRequest) reason = `User ${JSON.stringify(user)} cannot ${a.verb} path ${JSON.stringify(a.path)}`
  else {
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource
    reason = a.namespace
      ? `User ${JSON.stringify(user)} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.group)} in the namespace ${JSON.stringify(a.namespace)}`
      : `User ${JSON.stringify(user)} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.group)} at the cluster scope`
  }
  const qualified = a.group ? `${a.resource}.${a.group}` : a.resource
  const message = !a.resource
    ? `forbidden: ${reason}`
    : a.name
      ? `${qualified} ${JSON.stringify(a.name)} is forbidden: ${reason}`
      : `${qualified} is forbidden: ${reason}`
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Forbidden',
    details: { ...(a.name ? { name: a.name } : {}), group: a.group, kind: a.resource },
    code: 403,
  }
}
