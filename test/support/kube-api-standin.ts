/**
 * A STAND-IN for the Kubernetes API server, for the few endpoints svcops' Kubernetes driver calls.
 * It is not a cluster: a small HTTPS server inside the test (its own certificate, made by openssl
 * and named in the kubeconfig's certificate-authority-data, as a real cluster's CA is: svcops
 * refuses a cluster entry that skips TLS verification) that answers with the shapes the
 * Kubernetes API reference gives (Deployment, Scale, PodList, pod log as text, VersionInfo,
 * SelfSubjectAccessReview, Service, Status for errors), holds one Deployment and its pods in memory
 * (and optionally more, `others`: the live production system's components), and records every
 * request, so a test can check the exact calls the driver made and what it read.
 * A pod's `portforward` subresource speaks the WebSocket channel protocol the client library uses
 * (`v4.channel.k8s.io`: a channel byte before each frame, the port first on each channel) and
 * connects to `forwardTo`, a local TCP address standing for the pod's port. A pod's `proxy`
 * subresource answers what the pod would on its metrics port (`metrics`), or the API server's 503
 * when nothing listens there. Nothing here schedules
 * pods, runs a controller or enforces RBAC beyond the `denied` list.
 */
import { execFileSync } from 'node:child_process'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer, type Server } from 'node:https'
import { connect } from 'node:net'
import { WebSocketServer } from 'ws'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface StandinPod {
  name: string
  version: string
  phase?: string
  ready?: boolean
  restarts?: number
  waiting?: string
  log?: string[]
  /** What the pod answers on its metrics port through the pod proxy (Prometheus text); none: the connection is refused. */
  metrics?: string
  /** The port the pod serves `metrics` on (the container's `metrics` port). */
  metricsPort?: number
}

/** A further Deployment (`others`): its pods' `app.kubernetes.io/name`, and the container fields a test checks. */
export interface StandinDeployment {
  deployment: string
  app: string
  container: string
  image: string
  version: string
  replicas: number
  pods: StandinPod[]
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }>
  args?: string[]
  mountPaths?: string[]
}

export interface StandinState {
  namespace: string
  deployment: string
  container: string
  image: string
  version: string
  replicas: number
  pods: StandinPod[]
  /** Rights the SelfSubjectAccessReview answers `allowed: false` for: `verb resource[/subresource]`. */
  denied: string[]
  /** Where a port-forward to any pod connects (`{ host, port }` of a local server), if anywhere. */
  forwardTo?: { host: string; port: number }
  /** Further Deployments in the namespace. */
  others: StandinDeployment[]
  /** ConfigMaps of the namespace by name: their data. */
  configMaps: Record<string, Record<string, string>>
  /** Called before each answer (a test keeps the state in step with something else, e.g. a recorded `pulumi up`). */
  beforeAnswer?: () => void
}

export interface RecordedRequest {
  method: string
  path: string
  query: Record<string, string>
  contentType?: string
  authorization?: string
  body?: unknown
}

/** The running stand-in: its URL, a kubeconfig for it, the state it answers from, and the requests seen. */
export interface KubeApiStandin {
  url: string
  /** A kubeconfig file with contexts `context` (the stand-in) and `other` (nowhere), bearer token `token`. */
  kubeconfig: string
  token: string
  state: StandinState
  requests: RecordedRequest[]
  close(): Promise<void>
}

function send(res: ServerResponse, code: number, body: unknown, type = 'application/json'): void {
  res.writeHead(code, { 'Content-Type': type })
  res.end(typeof body === 'string' ? body : JSON.stringify(body))
}

/** The API reference's `Status` for an error. */
function status(code: number, reason: string, message: string) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }
}

/** The primary Deployment (the recording service's) in the shape of the others. */
function primaryOf(s: StandinState): StandinDeployment {
  return {
    deployment: s.deployment,
    app: 'recording-service',
    container: s.container,
    image: s.image,
    version: s.version,
    replicas: s.replicas,
    pods: s.pods,
  }
}

function deploymentOf(ns: string, s: StandinDeployment) {
  const labels = { 'app.kubernetes.io/name': s.app, 'app.kubernetes.io/instance': s.deployment }
  const ready = s.pods.filter((p) => p.ready !== false).length
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: s.deployment, namespace: ns, generation: 4, labels: { ...labels, 'app.kubernetes.io/version': s.version } },
    spec: {
      replicas: s.replicas,
      selector: { matchLabels: labels },
      strategy: { type: 'Recreate' },
      template: {
        metadata: { labels: { ...labels, 'app.kubernetes.io/version': s.version } },
        spec: {
          containers: [
            {
              name: s.container,
              image: `${s.image}:${s.version}`,
              ...(s.args ? { args: s.args } : {}),
              ...(s.env ? { env: s.env } : {}),
              ...(s.mountPaths ? { volumeMounts: s.mountPaths.map((mountPath, i) => ({ name: `v${i}`, mountPath, readOnly: true })) } : {}),
            },
          ],
        },
      },
    },
    status: {
      observedGeneration: 4,
      replicas: s.pods.length,
      readyReplicas: ready,
      updatedReplicas: s.pods.length,
      availableReplicas: ready,
    },
  }
}

function podOf(ns: string, s: StandinDeployment, p: StandinPod) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: p.name,
      namespace: ns,
      labels: { 'app.kubernetes.io/name': s.app, 'app.kubernetes.io/instance': s.deployment },
    },
    spec: { containers: [{ name: s.container, image: `${s.image}:${p.version}` }] },
    status: {
      phase: p.phase ?? 'Running',
      conditions: [{ type: 'Ready', status: (p.ready ?? true) ? 'True' : 'False' }],
      containerStatuses: [
        {
          name: s.container,
          ready: p.ready ?? true,
          restartCount: p.restarts ?? 0,
          image: `${s.image}:${p.version}`,
          imageID: '',
          state: p.waiting ? { waiting: { reason: p.waiting } } : { running: { startedAt: '2026-11-25T02:30:00Z' } },
        },
      ],
    },
  }
}

async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
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
    ...initial,
  }
  const all = (): StandinDeployment[] => [primaryOf(state), ...state.others]
  const requests: RecordedRequest[] = []
  const token = 'standin-bearer-7f3a9c1e5b2d4086'
  const ns = () => `/namespaces/${state.namespace}`
  const dir = mkdtempSync(join(tmpdir(), 'svcops-kube-standin-'))
  const tls = standinCertificate(dir)
  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://standin')
      const body = await bodyOf(req)
      requests.push({
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        ...(req.headers['content-type'] ? { contentType: req.headers['content-type'] } : {}),
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        ...(body !== undefined ? { body } : {}),
      })
      if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, status(401, 'Unauthorized', 'Unauthorized'))
      state.beforeAnswer?.()
      const path = url.pathname
      const deployment = `/apis/apps/v1${ns()}/deployments/${state.deployment}`
      const other = state.others.find((d) => path === `/apis/apps/v1${ns()}/deployments/${d.deployment}`)
      if (req.method === 'GET' && path === '/version')
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
      if (req.method === 'GET' && path === deployment) return send(res, 200, deploymentOf(state.namespace, primaryOf(state)))
      if (req.method === 'GET' && other) return send(res, 200, deploymentOf(state.namespace, other))
      if (req.method === 'PATCH' && path === `${deployment}/scale`) {
        const replicas = (body as { spec?: { replicas?: number } } | undefined)?.spec?.replicas
        if (typeof replicas !== 'number') return send(res, 422, status(422, 'Invalid', 'spec.replicas: Required value'))
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
      if (req.method === 'GET' && path === `/api/v1${ns()}/services/${state.deployment}`)
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
      if (req.method === 'GET' && path === `/api/v1${ns()}/pods`) {
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
      if (req.method === 'GET' && map) {
        const data = state.configMaps[map[1] ?? '']
        if (!data) return send(res, 404, status(404, 'NotFound', `configmaps "${map[1]}" not found`))
        return send(res, 200, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: map[1], namespace: state.namespace }, data })
      }
      // pods/proxy: the API server passes the request to the pod's port and answers with what the pod said.
      const proxy = new RegExp(`^/api/v1${ns()}/pods/([^/]+)/proxy(/.*)?$`).exec(path)
      if (req.method === 'GET' && proxy) {
        const [podName, port] = decodeURIComponent(proxy[1] ?? '').split(':')
        const pod = all()
          .flatMap((d) => d.pods)
          .find((p) => p.name === podName)
        if (!pod) return send(res, 404, status(404, 'NotFound', `pods "${podName}" not found`))
        if (pod.metrics === undefined || String(pod.metricsPort) !== port || decodeURIComponent(proxy[2] ?? '/') !== '/metrics')
          return send(
            res,
            503,
            status(503, 'ServiceUnavailable', `error trying to reach service: dial tcp 10.244.0.7:${port}: connect: connection refused`),
          )
        return send(res, 200, pod.metrics, 'text/plain; version=0.0.4; charset=utf-8')
      }
      const log = new RegExp(`^/api/v1${ns()}/pods/([^/]+)/log$`).exec(path)
      if (req.method === 'GET' && log) {
        const pod = all()
          .flatMap((d) => d.pods)
          .find((p) => p.name === log[1])
        if (!pod) return send(res, 404, status(404, 'NotFound', `pods "${log[1]}" not found`))
        const tail = Number(url.searchParams.get('tailLines') ?? '0')
        const lines = pod.log ?? []
        return send(res, 200, `${(tail ? lines.slice(-tail) : lines).join('\n')}\n`, 'text/plain')
      }
      if (req.method === 'POST' && path === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews') {
        const attrs =
          (body as { spec?: { resourceAttributes?: { verb?: string; resource?: string; subresource?: string } } }).spec
            ?.resourceAttributes ?? {}
        const right = `${attrs.verb ?? ''} ${attrs.resource ?? ''}${attrs.subresource ? `/${attrs.subresource}` : ''}`
        const allowed = !state.denied.includes(right)
        return send(res, 201, { ...(body as object), status: { allowed, ...(allowed ? {} : { reason: 'no RBAC policy matched' }) } })
      }
      return send(res, 404, status(404, 'NotFound', `the server could not find the requested resource (${req.method} ${path})`))
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
    if (!pod || req.headers.authorization !== `Bearer ${token}` || !state.forwardTo || !state.pods.some((p) => p.name === pod[1])) {
      socket.end('HTTP/1.1 404 Not Found\r\n\r\n')
      return
    }
    const to = state.forwardTo
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
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      `current-context: other`,
      'clusters:',
      `- name: standin`,
      // TLS verified against the stand-in's own certificate, as against a cluster's CA.
      `  cluster: { server: '${url}', certificate-authority-data: ${tls.cert.toString('base64')} }`,
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
  return {
    url,
    kubeconfig,
    token,
    state,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of sockets.clients) c.terminate()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** A self-signed certificate for 127.0.0.1 (openssl), the stand-in's and its kubeconfig's CA. */
function standinCertificate(dir: string): { key: Buffer; cert: Buffer } {
  const key = join(dir, 'tls.key')
  const cert = join(dir, 'tls.crt')
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=kube-api-standin',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'pipe' },
    )
  } catch (error) {
    throw new Error(
      `openssl could not make the stand-in's certificate (install it with: apt-get install -y openssl): ${(error as Error).message}`,
    )
  }
  return { key: readFileSync(key), cert: readFileSync(cert) }
}
