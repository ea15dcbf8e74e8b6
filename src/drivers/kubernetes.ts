/**
 * The Kubernetes API as the recording service's playbooks use it, through `@kubernetes/client-node`
 * with the kubeconfig and context Pulumi's provider uses (`kubernetes:kubeconfig`, else KUBECONFIG
 * or ~/.kube/config; `kubernetes:context`): the Deployment (its version, replicas and rollout), its
 * pods (status) and their logs (the last lines), the rights of this identity
 * (SelfSubjectAccessReview), and a port-forward to the Service for a run outside the cluster. It
 * only reads: what the Pulumi program manages, only the program writes (the stop and the start
 * are `pulumi up` of the stack's `heldReplicas`, src/recording/kubernetes).
 *
 * Every call is also written as the request it sends (`describe*`), for the dry run and the tests:
 *
 *   const kube = openKubernetes(target)
 *   await kube.readDeployment()          // GET /apis/apps/v1/namespaces/svc-prod/deployments/svc-recording
 */
import { createRequire } from 'node:module'
import { createServer, type Server, type Socket } from 'node:net'
import type { AppsV1Api, ConfigurationOptions, CoreV1Api, KubeConfig, V1Deployment } from '@kubernetes/client-node'
import { BadInputError, HttpError, OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { LOG_LIMIT_BYTES } from '../core/http.ts'
import { sanitizeLine } from '../core/sanitize.ts'
import { checkKubeconfigTrust } from './kubeconfig-trust.ts'
import { deploymentFacts, podFacts, type ClaimFacts, type DeploymentFacts, type PodFacts } from './kubernetes-facts.ts'
import { callLimits, type KubernetesPeer } from './kubernetes-limits.ts'

export { deploymentFacts, imageTag, type ClaimFacts, type DeploymentFacts, type PodFacts } from './kubernetes-facts.ts'

/** The recording service's objects, named as the Pulumi program names them (src/infra/recordingService.ts). */
export interface ClusterTarget {
  namespace: string
  /** Deployment, Service and `app.kubernetes.io/instance` label: `<prefix>-recording`. */
  deployment: string
  /** The container of the service in the pod template. */
  container: string
  /** The Service's port (`svcops:deploy.recording.port`). */
  port: number
  /** The pods' `app.kubernetes.io/name` (default: the recording service's); the live components name theirs by component. */
  app?: string
  /** `kubernetes:context` of the stack, when set; else the kubeconfig's current context. */
  context?: string
  /** `kubernetes:kubeconfig` of the stack: a path or the kubeconfig itself, as Pulumi's provider reads it. */
  kubeconfig?: string
  /** A shorter deadline for every API call than svcops' own (src/core/http.ts, `kubernetes-*`). */
  timeoutMs?: number
}

/** The `app.kubernetes.io/name` of the recording service's pods (src/infra/recordingService.ts). */
export const RECORDING_APP = 'recording-service'

/** The label selector of the service's pods, as the program's `selectorOf` writes it. */
export function podSelector(t: ClusterTarget): string {
  return `app.kubernetes.io/name=${t.app ?? RECORDING_APP},app.kubernetes.io/instance=${t.deployment}`
}

/** A right the run needs, as a SelfSubjectAccessReview asks for it. */
export interface NeededRight {
  group: string
  resource: string
  subresource?: string
  verb: string
  name?: string
  /** What the run uses it for. */
  why: string
}

/** The rights a run on the Kubernetes platform uses: the scheduled upgrade's Role (src/infra/scheduledJobs.ts) is their least set. */
export function neededRights(t: ClusterTarget, options: { portForward: boolean; stackMap?: string }): NeededRight[] {
  return [
    { group: 'apps', resource: 'deployments', verb: 'get', name: t.deployment, why: 'read the version and the rollout' },
    {
      group: 'apps',
      resource: 'deployments',
      verb: 'patch',
      name: t.deployment,
      why: '`pulumi up` of the stop, the new version and the start',
    },
    { group: 'apps', resource: 'deployments', verb: 'watch', why: "Pulumi's wait for the rollout" },
    { group: 'apps', resource: 'replicasets', verb: 'list', why: "Pulumi's wait for the rollout" },
    { group: '', resource: 'pods', verb: 'list', why: 'the status of every pod' },
    { group: '', resource: 'persistentvolumeclaims', verb: 'list', why: "Pulumi's wait for the rollout" },
    { group: '', resource: 'events', verb: 'list', why: "Pulumi's wait for the rollout" },
    { group: '', resource: 'pods', subresource: 'log', verb: 'get', why: 'the last log lines of every pod' },
    { group: '', resource: 'services', verb: 'get', name: t.deployment, why: 'verification through the Service' },
    ...(options.stackMap
      ? [{ group: '', resource: 'configmaps', verb: 'patch', name: options.stackMap, why: "the jobs' copy of the stack file" }]
      : []),
    ...(options.portForward
      ? [{ group: '', resource: 'pods', subresource: 'portforward', verb: 'create', why: 'verification from this machine (port-forward)' }]
      : []),
  ]
}

/** A right as one phrase: `get pods/log`, `patch apps/deployments svc-recording`. */
export function showRight(r: NeededRight): string {
  return `${r.verb} ${r.group ? `${r.group}/` : ''}${r.resource}${r.subresource ? `/${r.subresource}` : ''}${r.name ? ` ${r.name}` : ''}`
}

/** The requests each call sends, for the dry run (the in-test API server checks the real ones). */
export const describeCall = {
  version: () => 'GET /version',
  deployment: (t: ClusterTarget) => `GET /apis/apps/v1/namespaces/${t.namespace}/deployments/${t.deployment}`,
  pods: (t: ClusterTarget) => `GET /api/v1/namespaces/${t.namespace}/pods?labelSelector=${podSelector(t)}`,
  log: (t: ClusterTarget, lines: number) =>
    `GET /api/v1/namespaces/${t.namespace}/pods/POD/log?container=${t.container}&tailLines=${lines}&limitBytes=${LOG_LIMIT_BYTES} (every pod)`,
  configMap: (t: Pick<ClusterTarget, 'namespace'>, name: string) => `GET /api/v1/namespaces/${t.namespace}/configmaps/${name}`,
  secret: (t: Pick<ClusterTarget, 'namespace'>, name: string) => `GET /api/v1/namespaces/${t.namespace}/secrets/${name}`,
  claim: (t: Pick<ClusterTarget, 'namespace'>, name: string) => `GET /api/v1/namespaces/${t.namespace}/persistentvolumeclaims/${name}`,
  podProxy: (t: Pick<ClusterTarget, 'namespace'>, port: number, path: string) =>
    `GET /api/v1/namespaces/${t.namespace}/pods/POD:${port}/proxy${path} (every pod)`,
  access: (r: NeededRight) => `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews (${showRight(r)})`,
  portForward: (t: ClusterTarget) =>
    `GET /api/v1/namespaces/${t.namespace}/services/${t.deployment}, a ready pod of its selector, then ` +
    `/api/v1/namespaces/${t.namespace}/pods/POD/portforward?ports=${t.port} (WebSocket) for each connection to a local port`,
}

let library: typeof import('@kubernetes/client-node') | undefined

/**
 * The client library, loaded when a driver is first made: it is the largest module svcops has
 * (seconds to load on a busy machine), and a run on hosts never needs it. Loaded synchronously
 * (`require` of an ES module, Node >= 22.12), so making a driver still refuses a bad kubeconfig at once.
 */
export function kubernetesClient(): typeof import('@kubernetes/client-node') {
  return (library ??= createRequire(import.meta.url)('@kubernetes/client-node') as typeof import('@kubernetes/client-node'))
}

/** Loads the kubeconfig Pulumi's provider would use and selects the stack's context. */
export function loadKubeConfig(t: Pick<ClusterTarget, 'context' | 'kubeconfig'>): KubeConfig {
  const kc = new (kubernetesClient().KubeConfig)()
  try {
    if (t.kubeconfig && /\n|^\s*apiVersion:/.test(t.kubeconfig)) kc.loadFromString(t.kubeconfig)
    else if (t.kubeconfig) kc.loadFromFile(t.kubeconfig)
    else kc.loadFromDefault()
  } catch (error) {
    throw new BadInputError(`The kubeconfig ${t.kubeconfig ? `'${t.kubeconfig}' ` : ''}cannot be read: ${errorMessage(error)}`)
  }
  if (t.context) {
    if (!kc.getContextObject(t.context))
      throw new BadInputError(
        `kubernetes:context: "${t.context}" is not a context of the kubeconfig; expected one of ${kc.contexts.map((c) => c.name).join(', ') || 'none (the kubeconfig is empty)'}.`,
        'Point KUBECONFIG (or kubernetes:kubeconfig) at the kubeconfig Pulumi uses for this stack.',
      )
    kc.setCurrentContext(t.context)
  }
  checkKubeconfigTrust(kc, t) // insecure-skip-tls-verify only with the stack's opt-in (kubeconfig-trust.ts)
  reuseConnections(kc)
  return kc
}

type Dispatcher = NonNullable<ReturnType<Parameters<KubeConfig['applySecurityAuthentication']>[0]['getDispatcher']>>

/**
 * One connection pool per kubeconfig identity, as kubectl keeps one per run: the client makes a new
 * undici Agent for every call (`applySecurityAuthentication`), so every call opened its own TCP and
 * TLS connection to the API server (a handshake each: CPU on both sides and a round trip or two
 * more; test/live/kubernetes took 52 s of CPU with it, 40 s without). The first Agent made for the
 * context's cluster and user serves the calls after it, on kept-alive connections; the Agents the
 * client makes afterwards are dropped unused (an Agent connects on its first request only). A user
 * whose credentials a plugin supplies (`exec`, `auth-provider`) may get a new client certificate
 * during a run: its calls keep the client's own Agent each, as before. Headers (the bearer token)
 * are still set per call by the client.
 */
function reuseConnections(kc: KubeConfig): void {
  const apply = kc.applySecurityAuthentication.bind(kc)
  const pools = new Map<string, Dispatcher>()
  kc.applySecurityAuthentication = async (context) => {
    await apply(context)
    const made = context.getDispatcher()
    const cluster = kc.getCurrentCluster()
    const user = kc.getCurrentUser()
    if (!made || !cluster || (user && (user.exec || user.authProvider))) return
    const key = JSON.stringify([cluster.name, cluster.server, user?.name ?? ''])
    const pool = pools.get(key)
    if (pool) context.setDispatcher(pool)
    else pools.set(key, made)
  }
}

/** The Kubernetes API of one stack's recording service. */
export class KubernetesDriver {
  readonly target: ClusterTarget
  private readonly kc: KubeConfig
  private readonly apps: AppsV1Api
  private readonly core: CoreV1Api

  constructor(target: ClusterTarget, kc = loadKubeConfig(target)) {
    this.target = target
    this.kc = kc
    this.apps = kc.makeApiClient(kubernetesClient().AppsV1Api)
    this.core = kc.makeApiClient(kubernetesClient().CoreV1Api)
  }

  /** The API server's address (for messages). */
  server(): string {
    return this.kc.getCurrentCluster()?.server ?? 'the cluster'
  }

  /** `GET /version`: the API is reachable with this kubeconfig; its version. */
  async serverVersion(): Promise<string> {
    const v = await this.call('GET /version', (options) => this.kc.makeApiClient(kubernetesClient().VersionApi).getCode(options))
    return v.gitVersion
  }

  /** The Deployment's version (image tag), replicas and rollout. */
  async readDeployment(): Promise<DeploymentFacts> {
    return deploymentFacts(await this.readDeploymentObject(), this.target.container)
  }

  /** The Deployment as the API answers it (its pod template: arguments, variables, mounts). */
  readDeploymentObject(): Promise<V1Deployment> {
    const t = this.target
    return this.call(describeCall.deployment(t), (options) =>
      this.apps.readNamespacedDeployment({ name: t.deployment, namespace: t.namespace }, options),
    )
  }

  /** The data of a ConfigMap of the namespace (a CA certificate: nothing secret is kept in one). */
  async readConfigMap(name: string): Promise<Record<string, string>> {
    const t = this.target
    const map = await this.call(describeCall.configMap(t, name), (options) =>
      this.core.readNamespacedConfigMap({ name, namespace: t.namespace }, options),
    )
    return map.data ?? {}
  }

  /**
   * The decoded data of a Secret of the namespace: the doctor reads the credentials the pods read
   * (the caller registers the secret values before anything shows them).
   */
  async readSecretData(name: string): Promise<Record<string, string>> {
    const t = this.target
    const secret = await this.call(describeCall.secret(t, name), (options) =>
      this.core.readNamespacedSecret({ name, namespace: t.namespace }, options),
    )
    return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]))
  }

  /** A PersistentVolumeClaim of the namespace: its phase, the size asked and the size provisioned. */
  async readClaim(name: string): Promise<ClaimFacts> {
    const t = this.target
    const c = await this.call(describeCall.claim(t, name), (options) =>
      this.core.readNamespacedPersistentVolumeClaim({ name, namespace: t.namespace }, options),
    )
    return {
      name,
      phase: c.status?.phase ?? 'Unknown',
      requested: c.spec?.resources?.requests?.storage,
      capacity: c.status?.capacity?.storage,
      storageClass: c.spec?.storageClassName,
      accessModes: c.spec?.accessModes ?? [],
    }
  }

  /** Every pod of the service (by the program's selector). */
  async listPods(): Promise<PodFacts[]> {
    const t = this.target
    const list = await this.call(describeCall.pods(t), (options) =>
      this.core.listNamespacedPod({ namespace: t.namespace, labelSelector: podSelector(t) }, options),
    )
    return list.items.map((p) => podFacts(p, t.container))
  }

  /**
   * The last `lines` lines of the service's container in `pod`: at most LOG_LIMIT_BYTES asked for
   * (`limitBytes`), and the answer capped a little above it whatever the server sends.
   */
  async podLog(pod: string, lines: number, options: { previous?: boolean } = {}): Promise<string[]> {
    const t = this.target
    const previous = options.previous ? { previous: true } : {}
    const text = await this.call(
      `${describeCall.log(t, lines).replace('POD', pod).replace(' (every pod)', '')}${options.previous ? '&previous=true' : ''}`,
      (how) =>
        this.core.readNamespacedPodLog(
          { name: pod, namespace: t.namespace, container: t.container, tailLines: lines, limitBytes: LOG_LIMIT_BYTES, ...previous },
          how,
        ),
      { peer: 'kubernetes-log' },
    )
    return String(text).split('\n').filter(Boolean).slice(-lines)
  }

  /**
   * GET `path` on `port` of `pod` through the API server's pod proxy (`get pods/proxy`): a pod's own
   * endpoint, such as its metrics, from inside or outside the cluster without a port-forward.
   * `path` is one segment, as the client library encodes it (`/metrics`). The answer is capped
   * (src/core/http.ts, `kubernetes-proxy`): a pod's endpoint is not trusted to end.
   */
  async podProxyGet(pod: string, port: number, path: string): Promise<string> {
    const t = this.target
    const text = await this.call(
      describeCall.podProxy(t, port, path).replace('POD', pod).replace(' (every pod)', ''),
      (options) =>
        this.core.connectGetNamespacedPodProxyWithPath(
          { name: `${pod}:${port}`, namespace: t.namespace, path: path.replace(/^\//, '') },
          options,
        ),
      { peer: 'kubernetes-proxy' },
    )
    return String(text)
  }

  /** Asks the API server whether this identity holds each right; returns the missing ones. */
  async missingRights(rights: NeededRight[]): Promise<NeededRight[]> {
    const auth = this.kc.makeApiClient(kubernetesClient().AuthorizationV1Api)
    const missing: NeededRight[] = []
    for (const r of rights) {
      const review = await this.call(describeCall.access(r), (options) =>
        auth.createSelfSubjectAccessReview(
          {
            body: {
              apiVersion: 'authorization.k8s.io/v1',
              kind: 'SelfSubjectAccessReview',
              spec: {
                resourceAttributes: {
                  namespace: this.target.namespace,
                  group: r.group,
                  resource: r.resource,
                  verb: r.verb,
                  ...(r.subresource ? { subresource: r.subresource } : {}),
                  ...(r.name ? { name: r.name } : {}),
                },
              },
            },
          },
          options,
        ),
      )
      if (!review.status?.allowed) missing.push(r)
    }
    return missing
  }

  /**
   * A local port forwarded to the Service: each connection goes to a ready pod of the Service's
   * selector, looked up again per connection (Recreate replaces every pod during the run).
   */
  async forwardService(): Promise<{ url: string; close(): Promise<void> }> {
    const t = this.target
    const forward = new (kubernetesClient().PortForward)(this.kc)
    const sockets = new Set<Socket>()
    const server: Server = createServer((socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      forward.portForwardService(t.namespace, t.deployment, [t.port], socket, null, socket).catch((error: unknown) => {
        events.emit({ kind: 'check', check: 'port-forward to the Service', ok: false, detail: errorMessage(error) })
        socket.destroy()
      })
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    const address = server.address()
    const port = typeof address === 'object' && address ? address.port : 0
    return {
      url: `http://127.0.0.1:${port}`,
      close: () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy()
          server.close(() => resolve())
        }),
    }
  }

  /**
   * One API call with its deadline and body cap (kubernetes-limits.ts, from `peer`, by default a
   * plain API call): its failure names the request and the server, never a token; a deadline or a
   * cap passed names it.
   */
  private call<T>(
    request: string,
    fn: (options: ConfigurationOptions) => Promise<T>,
    how: { peer?: KubernetesPeer; headers?: Record<string, string> } = {},
  ): Promise<T> {
    return callKubernetes(
      {
        request,
        what: request.replace(/ \{.*$/, ''),
        server: this.server(),
        timeoutMs: this.target.timeoutMs,
        rights: 'docs/deploy.md (RBAC)',
        ...how,
      },
      fn,
    )
  }
}

/**
 * One call of the Kubernetes API with its deadline and body cap (kubernetes-limits.ts, from `peer`,
 * by default a plain API call); its failure names the request (`what` in a deadline's or a cap's
 * sentence) and the server, never a token, and a 403 the document listing the rights.
 */
export async function callKubernetes<T>(
  call: {
    request: string
    what: string
    server: string
    timeoutMs: number | undefined
    rights: string
    peer?: KubernetesPeer
    headers?: Record<string, string>
  },
  fn: (options: ConfigurationOptions) => Promise<T>,
): Promise<T> {
  const { request, server } = call
  const limited = callLimits(
    call.peer ?? 'kubernetes-api',
    `${call.what} at ${server}`,
    call.timeoutMs,
    call.headers ?? {},
    kubernetesClient().Observable,
  )
  try {
    return await fn(limited.options)
  } catch (caught) {
    const error = limited.translate(caught)
    if (error instanceof HttpError) throw new OperationError(`The Kubernetes API: ${error.message.replace(/\.$/, '')}.`)
    const code = (error as { code?: number }).code
    const status = statusMessageOf((error as { body?: unknown }).body)
    throw new OperationError(
      typeof code === 'number'
        ? `The Kubernetes API at ${server} answered ${request} with HTTP ${code}${status ? ` (${status})` : ''}.`
        : `The Kubernetes API at ${server} could not be reached for ${request}: ${errorMessage(error).replace(/\.$/, '')}.`,
      code === 403 ? `Grant the rights listed in ${call.rights} to this identity.` : undefined,
    )
  }
}

/**
 * The `reason` and `message` of the API's `Status` answer (what it refused and why: `Forbidden:
 * configmaps "x" is forbidden: User ...`), one line, control characters escaped, at most 300
 * characters; undefined when the body is no Status.
 */
export function statusMessageOf(body: unknown): string | undefined {
  let doc: unknown = body
  if (typeof body === 'string') {
    try {
      doc = JSON.parse(body.slice(0, 64_000))
    } catch {
      return undefined
    }
  }
  const s = doc as { kind?: unknown; reason?: unknown; message?: unknown } | undefined
  if (!s || s.kind !== 'Status' || typeof s.message !== 'string') return undefined
  const text = `${typeof s.reason === 'string' && s.reason ? `${s.reason}: ` : ''}${s.message}`
  const line = sanitizeLine(text)
  return line.length > 300 ? `${line.slice(0, 299)}…` : line
}

/** True inside a pod (the scheduled job): the Service is reached by its cluster DNS name, without a port-forward. */
export function insideCluster(): boolean {
  return !!process.env.KUBERNETES_SERVICE_HOST
}

/** The Service's in-cluster URL. */
export function serviceUrlOf(t: ClusterTarget): string {
  return `http://${t.deployment}.${t.namespace}.svc.cluster.local:${t.port}`
}
