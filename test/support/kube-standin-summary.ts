/**
 * The in-memory summary the Kubernetes API stand-in started with (./kube-api-standin.ts): the
 * recording service's Deployment and further ones as a few fields each (image, version, replicas,
 * pods), rendered into the API's Deployment and Pod shapes, and the stand-in's own certificate.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Obj } from './kube-fields.ts'

export interface StandinPod {
  name: string
  version: string
  phase?: string
  ready?: boolean
  restarts?: number
  waiting?: string
  /** The kubelet's message with `waiting` (`state.waiting.message`). */
  waitingMessage?: string
  /** How the container's previous run ended (`lastState.terminated`): OOMKilled, Error, ... */
  lastState?: { reason: string; exitCode: number; finishedAt: string }
  /** The container's memory limit (`resources.limits.memory` of the pod's spec). */
  memoryLimit?: string
  log?: string[]
  /** The log of the container before its last restart (`?previous=true`; needs `lastState`). */
  previousLog?: string[]
  /** What the pod answers on its metrics port through the pod proxy (Prometheus text); none: the connection is refused. */
  metrics?: string
  /** The port the pod serves `metrics` on (the container's `metrics` port). */
  metricsPort?: number
  /** Where a port-forward to this pod connects, instead of the stand-in's `forwardTo`. */
  forwardTo?: { host: string; port: number }
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

/** The fields of the summary the Deployment answers are made from. */
export interface SummaryState {
  namespace: string
  deployment: string
  container: string
  image: string
  version: string
  replicas: number
  pods: StandinPod[]
  others: StandinDeployment[]
}

/** The primary Deployment (the recording service's) in the shape of the others. */
export function primaryOf(s: SummaryState): StandinDeployment {
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

export function deploymentOf(ns: string, s: StandinDeployment) {
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

/** Waiting reasons of a container whose image is not pulled (yet): its status has no imageID. */
const NOT_PULLED = new Set(['ContainerCreating', 'ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull'])

export function podOf(ns: string, s: StandinDeployment, p: StandinPod) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: p.name,
      namespace: ns,
      labels: { 'app.kubernetes.io/name': s.app, 'app.kubernetes.io/instance': s.deployment },
    },
    spec: {
      containers: [
        {
          name: s.container,
          image: `${s.image}:${p.version}`,
          ...(p.memoryLimit ? { resources: { limits: { memory: p.memoryLimit } } } : {}),
        },
      ],
    },
    status: {
      phase: p.phase ?? 'Running',
      conditions: [{ type: 'Ready', status: (p.ready ?? true) ? 'True' : 'False' }],
      containerStatuses: [
        {
          name: s.container,
          ready: p.ready ?? true,
          restartCount: p.restarts ?? 0,
          image: `${s.image}:${p.version}`,
          // The kubelet fills imageID once it pulled the image; a pod still waiting for its pull has none.
          imageID:
            p.waiting && NOT_PULLED.has(p.waiting)
              ? ''
              : `${s.image}@sha256:${createHash('sha256').update(`${s.image}:${p.version}`).digest('hex')}`,
          state: p.waiting
            ? { waiting: { reason: p.waiting, ...(p.waitingMessage ? { message: p.waitingMessage } : {}) } }
            : { running: { startedAt: '2026-11-25T02:30:00Z' } },
          ...(p.lastState ? { lastState: { terminated: { ...p.lastState, startedAt: '2026-11-25T02:20:00Z' } } } : {}),
        },
      ],
    },
  }
}

/** A self-signed certificate for 127.0.0.1 (openssl), the stand-in's and its kubeconfig's CA. */
export function standinCertificate(dir: string): { key: Buffer; cert: Buffer } {
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

/** The status a summary Deployment reports (its pods). */
export function summaryStatus(s: StandinDeployment, generation: number): Obj {
  const ready = s.pods.filter((p) => p.ready !== false).length
  return {
    observedGeneration: generation,
    replicas: s.pods.length,
    readyReplicas: ready,
    updatedReplicas: s.pods.length,
    availableReplicas: ready,
  }
}

/** The tag of `registry/repo:1.5.0[@sha256:...]`. */
function tagOf(image: string): string | undefined {
  const noDigest = image.split('@')[0] ?? image
  const colon = noDigest.lastIndexOf(':')
  return colon > noDigest.lastIndexOf('/') ? noDigest.slice(colon + 1) : undefined
}

/**
 * What a Deployment controller and the kubelet would make of a written Deployment, for the summary
 * it stands for: its replicas, its container's version, and that many ready pods of that version
 * (none at 0 replicas). Pods already there on the same version are kept.
 */
export function followDeployment(
  s: { replicas: number; version: string; pods: StandinPod[]; container: string; deployment: string },
  d: Obj,
): void {
  const spec = (d.spec ?? {}) as Obj
  const containers = (((spec.template as Obj | undefined)?.spec as Obj | undefined)?.containers ?? []) as Obj[]
  const image = containers.find((c) => c.name === s.container)?.image
  const replicas = typeof spec.replicas === 'number' ? spec.replicas : 1
  const version = typeof image === 'string' ? (tagOf(image) ?? s.version) : s.version
  s.replicas = replicas
  s.version = version
  const kept = s.pods.filter((p) => p.version === version).slice(0, replicas)
  for (let i = kept.length; i < replicas; i++)
    kept.push({ name: `${s.deployment}-${version.replace(/\./g, '')}-${i}`, version, log: ['INFO listening on :8080'] })
  s.pods = kept
}
