/**
 * A STAND-IN for the Kubernetes API server. It is not a cluster: a small HTTPS server inside the
 * test (its own certificate, made by openssl and named in the kubeconfig's
 * certificate-authority-data, as a real cluster's CA is: svcops refuses a cluster entry that skips
 * TLS verification) that answers in the shapes the Kubernetes API reference gives, records every
 * request, and fails the way the API server fails. Nothing here schedules pods or runs a
 * controller beyond what is said below.
 *
 * What it holds:
 * - **Objects** (`store`, ./kube-store.ts): whatever is created, applied or patched through the API,
 *   for the kinds in ./kube-kinds.ts, at their real URLs (`/api/v1/namespaces/NS/secrets/NAME`,
 *   `/apis/apps/v1/namespaces/NS/deployments/NAME`, `/api/v1/namespaces/NS` for the namespace
 *   itself, collections for `list`). Writes keep `metadata.managedFields` per field
 *   (./kube-fields.ts): `PATCH` with `application/apply-patch+yaml` and `?fieldManager=M` is a
 *   server-side apply (`&force=true` takes fields over, `&dryRun=All` answers without storing); a
 *   field another manager owns that the apply would change is a 409 `Status` with reason
 *   `Conflict`, `details.causes[{reason: FieldManagerConflict, field}]` and the message
 *   `Apply failed with 1 conflict: conflict with "<manager>"[ with subresource "scale"] using
 *   apps/v1: .spec.replicas` (Update managers show `using <apiVersion>`); merge, strategic merge and
 *   JSON patches and `POST` record their manager too (`?fieldManager`, else the User-Agent's product
 *   before the `/`: `kubernetes-client-javascript` for @kubernetes/client-node); a JSON patch of
 *   `/metadata/managedFields` replaces the entries as given; `deployments/NAME/scale` records its
 *   writer on the Deployment with `subresource: scale`. Missing objects are 404 `NotFound`, an
 *   existing one on `POST` 409 `AlreadyExists`.
 * - **A summary** (`state`, ./kube-standin-summary.ts) of the recording service's Deployment
 *   (`deployment`, `image`, `version`, `replicas`, `pods`) and further ones (`others`: the live
 *   system's components), answered as Deployments until an object of that name is written; after
 *   that the stored object is answered, its `status` made from the summary's pods, and every write
 *   to it moves the summary as a controller and kubelet would (`replicas`, `version` from the
 *   container's image tag, that many ready pods of that version, none at 0). Pods (`list` by label
 *   selector, with a container's waiting reason and message, last termination and memory limit), a
 *   pod's `log` (`tailLines`; `previous=true`: the log before its last restart, a 400 without one), `proxy` (its `metrics` on `metricsPort`, else the API
 *   server's 503) and `portforward` (WebSocket `v4.channel.k8s.io` to `forwardTo`) come from the
 *   summary; so do the recording service's Service and `configMaps` not written through the API.
 *   With `preexisting: false` the namespace starts empty instead (a first `pulumi up`): only what is
 *   written through the API exists, and the summary (its pods) follows the Deployments written.
 * - **Identities and rights** (./kube-rbac.ts): a bearer token names an identity (401 otherwise).
 *   `token` is an administrator that may do everything but what `state.denied` lists
 *   (`verb resource[/subresource]`); `serviceAccountToken(ns, name)` makes an identity
 *   `system:serviceaccount:NS:NAME` whose rights are the stored Roles its stored RoleBindings in
 *   the request's namespace give it, or `state.identities` entries with fixed `rules`. Every
 *   request is authorized (discovery paths and SelfSubjectAccessReviews are open, as the default
 *   ClusterRoles make them); a refused one is a 403 `Status` with reason `Forbidden` and the API's
 *   message (`deployments.apps "svc-recording" is forbidden: User "..." cannot get resource
 *   "deployments" in API group "apps" in the namespace "svc-prod"`). A SelfSubjectAccessReview is
 *   answered from the same rules for the identity that asks.
 *
 * - **Discovery** (`/api`, `/apis`, `/api/v1`, `/apis/GROUP/VERSION`, ./kube-kinds.ts): the legacy
 *   documents for the kinds above, so that the real `kubectl` (`get`, `apply`, `wait`) maps kinds to
 *   resources here as on a cluster.
 *
 * A test reads `requests` (method, path, query, content type, authorization, body) for the exact
 * calls made, `store` for the objects and their managers, and `kubeconfig` (contexts `context`:
 * the stand-in, `other`: nowhere) or `kubeconfigFor(token)` to point a client at it.
 *
 * How a test uses it:
 * - `const api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')`
 *   (any `StandinState` field may be given; the second argument names the kubeconfig's context),
 *   and `await api.close()` after the test;
 * - svcops' Kubernetes driver (`KubernetesDriver({ context, kubeconfig: api.kubeconfig, ... })`) or
 *   any client sends real HTTPS requests to it; `api.state` may be changed between requests (pods,
 *   `denied`, `identities`), and `beforeAnswer` keeps it in step with something else;
 * - the Pulumi program is applied to it by the in-test engine with `cluster: true` and
 *   `env: { KUBECONFIG: api.kubeconfig }` (test/infra/engine/engine.ts, whose Kubernetes provider is
 *   modelled on pulumi-kubernetes: server-side apply under its own field manager, its force and
 *   take-over rules, its conflict message), or, for svcops' own `pulumi preview|up|stack output`, by
 *   the `pulumi` argv recorder created with `engine` first on PATH and KUBECONFIG pointing here
 *   (test/support/pulumi-argv-recorder.ts); test/infra/field-ownership.test.ts does both;
 * - assertions read `api.store.get(kindOfResource('apps', 'v1', 'deployments')!, ns, name)` and
 *   `managedFieldsOf(object)` (./kube-store.ts) for who owns which field, and `api.requests`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer, type Server } from 'node:https'
import { connect } from 'node:net'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { WebSocketServer } from 'ws'
import { textOf as jsonText, type Obj } from './kube-fields.ts'
import { discoveryDocument, kindOfResource } from './kube-kinds.ts'
import {
  allowedBy,
  forbiddenStatus,
  requestAttributes,
  rulesOfServiceAccount,
  type PolicyRule,
  type RequestAttributes,
} from './kube-rbac.ts'
import { ObjectStore, statusOf } from './kube-store.ts'
import {
  deploymentOf,
  followDeployment,
  podOf,
  primaryOf,
  standinCertificate,
  summaryStatus,
  type StandinDeployment,
  type StandinPod,
} from './kube-standin-summary.ts'

export type { StandinDeployment, StandinPod } from './kube-standin-summary.ts'
export type { PolicyRule } from './kube-rbac.ts'

/** An identity the stand-in authenticates by its bearer token. */
export interface StandinIdentity {
  token: string
  /** The user name the API server knows (`system:serviceaccount:<ns>:<name>` for a ServiceAccount). */
  user: string
  /** Fixed rules; without them a ServiceAccount has what stored RoleBindings give it. */
  rules?: PolicyRule[]
}

export interface StandinState {
  namespace: string
  deployment: string
  container: string
  image: string
  version: string
  replicas: number
  pods: StandinPod[]
  /** Rights the administrator identity lacks: `verb resource[/subresource]` (requests refused, reviews denied). */
  denied: string[]
  /** Where a port-forward to any pod connects (`{ host, port }` of a local server), if anywhere (a pod's own `forwardTo` first). */
  forwardTo?: { host: string; port: number }
  /** Further Deployments in the namespace. */
  others: StandinDeployment[]
  /** ConfigMaps of the namespace by name: their data (besides those written through the API). */
  configMaps: Record<string, Record<string, string>>
  /** Identities besides the administrator. */
  identities: StandinIdentity[]
  /**
   * The summary's Deployments and Service exist before anything is written (default). False: a
   * fresh namespace, where only what is written through the API exists (a first `pulumi up`); the
   * summary then follows the Deployments written.
   */
  preexisting: boolean
  /** Called before each answer (a test keeps the state in step with something else, e.g. a recorded `pulumi up`). */
  beforeAnswer?: () => void
}

export interface RecordedRequest {
  method: string
  path: string
  query: Record<string, string>
  contentType?: string
  authorization?: string
  userAgent?: string
  body?: unknown
}

/** The running stand-in: its URL, a kubeconfig for it, the state it answers from, and the requests seen. */
export interface KubeApiStandin {
  url: string
  /** A kubeconfig file with contexts `context` (the stand-in) and `other` (nowhere), bearer token `token`. */
  kubeconfig: string
  /** The administrator's bearer token. */
  token: string
  /** The stand-in's CA certificate (PEM) and a file holding it. */
  caCertificate: string
  caFile: string
  state: StandinState
  /** Objects written through the API. */
  store: ObjectStore
  requests: RecordedRequest[]
  /** A token of ServiceAccount `name` in `namespace` (rights from the stored RoleBindings there). */
  serviceAccountToken(namespace: string, name: string): string
  /** A kubeconfig file for `token` with one context `context` (default: the stand-in's context name). */
  kubeconfigFor(token: string, context?: string): string
  close(): Promise<void>
}

function send(res: ServerResponse, code: number, body: unknown, type = 'application/json'): void {
  res.writeHead(code, { 'Content-Type': type })
  res.end(typeof body === 'string' ? body : JSON.stringify(body))
}

async function textOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function parsed(text: string): unknown {
  if (!text) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Starts the stand-in on a free loopback port. */
export async function startKubeApiStandin(initial: Partial<StandinState> = {}, context = 'test-cluster'): Promise<KubeApiStandin> {
  const state: StandinState = {
    namespace: 'svc-prod',
    deployment: 'svc-recording',
    container: 'recording-service',
    image: 'registry.example.internal/svc/recording',
    version: '1.5.0',
    replicas: 3,
    pods: [
      { name: 'svc-recording-7d4b9c-a1', version: '1.5.0', log: ['INFO listening on :8080'] },
      { name: 'svc-recording-7d4b9c-b2', version: '1.5.0', log: ['INFO listening on :8080'] },
    ],
    denied: [],
    others: [],
    configMaps: {},
    identities: [],
    preexisting: true,
    ...initial,
  }
  // A fresh namespace has no pods until a Deployment is written.
  if (!state.preexisting && !initial.pods) state.pods = []
  const store = new ObjectStore()
  const all = (): StandinDeployment[] => [primaryOf(state), ...state.others]
  const requests: RecordedRequest[] = []
  const token = 'standin-bearer-7f3a9c1e5b2d4086'
  const ADMIN = 'kubernetes-admin'
  const ns = () => `/namespaces/${state.namespace}`
  const dir = mkdtempSync(join(tmpdir(), 'svcops-kube-standin-'))
  const tls = standinCertificate(dir)
  const caFile = join(dir, 'ca.crt')
  writeFileSync(caFile, tls.cert)
  const deploymentsInfo = kindOfResource('apps', 'v1', 'deployments')

  const identityOf = (authorization: string | undefined): StandinIdentity | undefined => {
    const bearer = authorization?.startsWith('Bearer ') ? authorization.slice(7).trim() : undefined
    if (!bearer) return undefined
    if (bearer === token) return { token, user: ADMIN }
    return state.identities.find((i) => i.token === bearer)
  }
  /** Whether `who` may make a request with attributes `a`. */
  const authorize = (
    who: StandinIdentity,
    a: Pick<RequestAttributes, 'verb' | 'group' | 'resource' | 'subresource' | 'name' | 'namespace'>,
  ) => {
    if (who.user === ADMIN) return !state.denied.includes(`${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''}`)
    const rules = who.rules ?? rulesOfServiceAccount(who.user, a.namespace, store.all())
    return allowedBy(rules, a)
  }
  /** The summary Deployment a stored Deployment of this name stands for. */
  const summaryOf = (name: string) => (name === state.deployment ? state : state.others.find((d) => d.deployment === name))
  /** A stored Deployment as answered: its status from the summary's pods. */
  const decorate = (o: Obj): Obj => {
    if (o.kind !== 'Deployment') return o
    const m = o.metadata as Obj
    const s = summaryOf(jsonText(m.name))
    const generation = Number(m.generation ?? 1)
    const spec = (o.spec ?? {}) as Obj
    const replicas = typeof spec.replicas === 'number' ? spec.replicas : 1
    return {
      ...o,
      status: s
        ? summaryStatus(s === state ? primaryOf(state) : (s as StandinDeployment), generation)
        : { observedGeneration: generation, replicas, readyReplicas: replicas, updatedReplicas: replicas, availableReplicas: replicas },
    }
  }

  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://standin')
      const text = await textOf(req)
      const body = parsed(text)
      requests.push({
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        ...(req.headers['content-type'] ? { contentType: req.headers['content-type'] } : {}),
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        ...(req.headers['user-agent'] ? { userAgent: req.headers['user-agent'] } : {}),
        ...(body !== undefined ? { body } : {}),
      })
      const who = identityOf(req.headers.authorization)
      if (!who) return send(res, 401, statusOf(401, 'Unauthorized', 'Unauthorized'))
      state.beforeAnswer?.()
      const method = req.method ?? 'GET'
      const path = url.pathname
      const attrs = requestAttributes(method, url)
      const review = method === 'POST' && path === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'
      if (attrs.resourceRequest && !review && !authorize(who, attrs)) return send(res, 403, forbiddenStatus(who.user, attrs))

      const discovery = method === 'GET' ? discoveryDocument(path) : undefined
      if (discovery) return send(res, 200, discovery)
      if (method === 'GET' && path === '/version')
        return send(res, 200, {
          major: '1',
          minor: '31',
          gitVersion: 'v1.31.2',
          gitCommit: '',
          gitTreeState: 'clean',
          buildDate: '',
          goVersion: 'go1.22',
          compiler: 'gc',
          platform: 'linux/amd64',
        })
      if (review) {
        const a = (body as { spec?: { resourceAttributes?: Record<string, string> } }).spec?.resourceAttributes ?? {}
        const allowed = authorize(who, {
          verb: a.verb ?? '',
          group: a.group ?? '',
          resource: a.resource ?? '',
          subresource: a.subresource ?? '',
          name: a.name ?? '',
          namespace: a.namespace ?? '',
        })
        return send(res, 201, { ...(body as object), status: { allowed, ...(allowed ? {} : { reason: 'no RBAC policy matched' }) } })
      }

      // What the summary answers until an object of that name is written through the API.
      const stored = (resource: string, name: string): boolean => {
        if (!state.preexisting) return true
        const info = kindOfResource(resource === 'deployments' ? 'apps' : '', 'v1', resource)
        return !!info && store.get(info, state.namespace, name) !== undefined
      }
      const deployment = `/apis/apps/v1${ns()}/deployments/${state.deployment}`
      const other = state.others.find((d) => path === `/apis/apps/v1${ns()}/deployments/${d.deployment}`)
      if (method === 'GET' && path === deployment && !stored('deployments', state.deployment))
        return send(res, 200, deploymentOf(state.namespace, primaryOf(state)))
      if (method === 'GET' && other && !stored('deployments', other.deployment)) return send(res, 200, deploymentOf(state.namespace, other))
      if (method === 'PATCH' && path === `${deployment}/scale` && !stored('deployments', state.deployment)) {
        const replicas = (body as { spec?: { replicas?: number } } | undefined)?.spec?.replicas
        if (typeof replicas !== 'number') return send(res, 422, statusOf(422, 'Invalid', 'spec.replicas: Required value'))
        state.replicas = replicas
        if (replicas === 0) state.pods = []
        return send(res, 200, {
          apiVersion: 'autoscaling/v1',
          kind: 'Scale',
          metadata: { name: state.deployment, namespace: state.namespace },
          spec: { replicas },
          status: {
            replicas: state.pods.length,
            selector: `app.kubernetes.io/name=recording-service,app.kubernetes.io/instance=${state.deployment}`,
          },
        })
      }
      if (method === 'GET' && path === `/api/v1${ns()}/services/${state.deployment}` && !stored('services', state.deployment))
        return send(res, 200, {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: state.deployment, namespace: state.namespace },
          spec: {
            type: 'ClusterIP',
            selector: { 'app.kubernetes.io/name': 'recording-service', 'app.kubernetes.io/instance': state.deployment },
            ports: [{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }],
          },
        })
      if (method === 'GET' && path === `/api/v1${ns()}/pods`) {
        // The selector's instance picks the Deployment (the program labels every pod with it).
        const instance = /app\.kubernetes\.io\/instance=([^,]+)/.exec(url.searchParams.get('labelSelector') ?? '')?.[1]
        const owners = all().filter((d) => !instance || d.deployment === instance)
        return send(res, 200, {
          apiVersion: 'v1',
          kind: 'PodList',
          metadata: { resourceVersion: '1' },
          items: owners.flatMap((d) => d.pods.map((p) => podOf(state.namespace, d, p))),
        })
      }
      const map = new RegExp(`^/api/v1${ns()}/configmaps/([^/]+)$`).exec(path)
      if (method === 'GET' && map && !stored('configmaps', map[1] ?? '')) {
        const data = state.configMaps[map[1] ?? '']
        if (!data) return send(res, 404, statusOf(404, 'NotFound', `configmaps "${map[1]}" not found`))
        return send(res, 200, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: map[1], namespace: state.namespace }, data })
      }
      // pods/proxy: the API server passes the request to the pod's port and answers with what the pod said.
      const proxy = new RegExp(`^/api/v1${ns()}/pods/([^/]+)/proxy(/.*)?$`).exec(path)
      if (method === 'GET' && proxy) {
        const [podName, port] = decodeURIComponent(proxy[1] ?? '').split(':')
        const pod = all()
          .flatMap((d) => d.pods)
          .find((p) => p.name === podName)
        if (!pod) return send(res, 404, statusOf(404, 'NotFound', `pods "${podName}" not found`))
        if (pod.metrics === undefined || String(pod.metricsPort) !== port || decodeURIComponent(proxy[2] ?? '/') !== '/metrics')
          return send(
            res,
            503,
            statusOf(503, 'ServiceUnavailable', `error trying to reach service: dial tcp 10.244.0.7:${port}: connect: connection refused`),
          )
        return send(res, 200, pod.metrics, 'text/plain; version=0.0.4; charset=utf-8')
      }
      const log = new RegExp(`^/api/v1${ns()}/pods/([^/]+)/log$`).exec(path)
      if (method === 'GET' && log) {
        const pod = all()
          .flatMap((d) => d.pods)
          .find((p) => p.name === log[1])
        if (!pod) return send(res, 404, statusOf(404, 'NotFound', `pods "${log[1]}" not found`))
        const tail = Number(url.searchParams.get('tailLines') ?? '0')
        // `previous`: the container before its last restart, which a pod that never restarted has not.
        const previous = url.searchParams.get('previous') === 'true'
        if (previous && !pod.lastState)
          return send(
            res,
            400,
            statusOf(
              400,
              'BadRequest',
              `previous terminated container "${url.searchParams.get('container') ?? ''}" in pod "${pod.name}" not found`,
            ),
          )
        const lines = (previous ? pod.previousLog : pod.log) ?? []
        return send(res, 200, `${(tail ? lines.slice(-tail) : lines).join('\n')}\n`, 'text/plain')
      }

      // Objects written through the API.
      const info = attrs.resourceRequest ? kindOfResource(attrs.group, attrs.version, attrs.resource) : undefined
      if (!info) return send(res, 404, statusOf(404, 'NotFound', `the server could not find the requested resource (${method} ${path})`))
      const namespace = attrs.namespace
      const manager = url.searchParams.get('fieldManager') ?? req.headers['user-agent']?.split('/')[0] ?? undefined
      const options = { manager, force: url.searchParams.get('force') === 'true', dryRun: url.searchParams.get('dryRun') === 'All' }
      let answer: { code: number; body: Obj }
      if (method === 'GET' && attrs.verb === 'get' && !attrs.subresource) answer = store.read(info, namespace, attrs.name)
      else if (method === 'GET' && attrs.verb === 'list')
        answer = {
          code: 200,
          body: { apiVersion: 'v1', kind: `${info.kind}List`, metadata: { resourceVersion: '1' }, items: store.list(info, namespace) },
        }
      else if (method === 'PATCH')
        answer = store.patch(info, namespace, attrs.name, attrs.subresource, req.headers['content-type'] ?? '', text, options)
      else if (method === 'POST' && !attrs.name) answer = store.create(info, namespace, (body ?? {}) as Obj, options)
      else if (method === 'DELETE' && attrs.name) answer = store.remove(info, namespace, attrs.name)
      else return send(res, 405, statusOf(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`))
      // A written Deployment moves the summary it stands for, as a controller would.
      if ((answer.code === 200 || answer.code === 201) && method !== 'GET' && !options.dryRun && info === deploymentsInfo) {
        // A create (POST) names its object in the body, not the URL.
        const name = attrs.name || jsonText((answer.body.metadata as Obj | undefined)?.name)
        const s = summaryOf(name)
        const now = store.get(info, namespace, name)
        if (s && now) followDeployment(s, now)
      }
      if ((answer.code === 200 || answer.code === 201) && answer.body.kind === 'Deployment')
        answer = { ...answer, body: decorate(answer.body) }
      return send(res, answer.code, answer.body)
    })()
  })
  // pods/portforward: one WebSocket per forwarded connection, channel 0 data, channel 1 errors.
  const sockets = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => (protocols.has('v4.channel.k8s.io') ? 'v4.channel.k8s.io' : false),
  })
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://standin')
    const pod = new RegExp(`^/api/v1${ns()}/pods/([^/]+)/portforward$`).exec(url.pathname)
    requests.push({
      method: 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    })
    // Any pod of the summary: its own `forwardTo` (a Job's pod, say), else the state's.
    const found = all()
      .flatMap((d) => d.pods)
      .find((p) => p.name === pod?.[1])
    const to = found?.forwardTo ?? state.forwardTo
    if (!pod || req.headers.authorization !== `Bearer ${token}` || !to || !found) {
      socket.end('HTTP/1.1 404 Not Found\r\n\r\n')
      return
    }
    sockets.handleUpgrade(req, socket, head, (ws) => {
      const port = Number(url.searchParams.get('ports'))
      const portBytes = Buffer.from([port & 0xff, port >> 8])
      ws.send(Buffer.concat([Buffer.from([0]), portBytes]))
      ws.send(Buffer.concat([Buffer.from([1]), portBytes]))
      const tcp = connect(to.port, to.host)
      tcp.on('data', (d: Buffer) => ws.send(Buffer.concat([Buffer.from([0]), d])))
      tcp.on('close', () => ws.close())
      tcp.on('error', () => ws.close())
      ws.on('message', (m: Buffer) => {
        if (m[0] === 0 && m.length > 1) tcp.write(m.subarray(1))
      })
      ws.on('close', () => tcp.destroy())
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const address = server.address()
  const url = `https://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  const kubeconfig = join(dir, 'kubeconfig')
  const clusters = [
    `- name: standin`,
    // TLS verified against the stand-in's own certificate, as against a cluster's CA.
    `  cluster: { server: '${url}', certificate-authority-data: ${tls.cert.toString('base64')} }`,
  ]
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      `current-context: other`,
      'clusters:',
      ...clusters,
      `- name: nowhere`,
      `  cluster: { server: 'http://127.0.0.1:9' }`,
      'users:',
      `- name: svcops`,
      `  user: { token: ${token} }`,
      'contexts:',
      `- name: ${context}`,
      `  context: { cluster: standin, user: svcops, namespace: ${state.namespace} }`,
      `- name: other`,
      `  context: { cluster: nowhere, user: svcops }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  )
  let files = 0
  return {
    url,
    kubeconfig,
    token,
    caCertificate: tls.cert.toString('utf8'),
    caFile,
    state,
    store,
    requests,
    serviceAccountToken(namespace: string, name: string): string {
      const user = `system:serviceaccount:${namespace}:${name}`
      const found = state.identities.find((i) => i.user === user)
      if (found) return found.token
      const t = `standin-sa-${randomBytes(12).toString('hex')}`
      state.identities.push({ token: t, user })
      return t
    },
    kubeconfigFor(t: string, name = context): string {
      const file = join(dir, `kubeconfig-${++files}`)
      writeFileSync(
        file,
        [
          'apiVersion: v1',
          'kind: Config',
          `current-context: ${name}`,
          'clusters:',
          ...clusters,
          'users:',
          `- name: user`,
          `  user: { token: ${t} }`,
          'contexts:',
          `- name: ${name}`,
          `  context: { cluster: standin, user: user, namespace: ${state.namespace} }`,
          '',
        ].join('\n'),
        { mode: 0o600 },
      )
      return file
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of sockets.clients) c.terminate()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
