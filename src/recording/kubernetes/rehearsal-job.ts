/**
 * The rehearsal's Job on Kubernetes: release V of the recording service's image run once in the
 * namespace against the scratch database, where nothing of production can reach it or be reached
 * by it. Its pod is the Deployment's pod template (read through the API: the same Secret for the
 * database connection, the same probes, security context and resources) with four changes:
 *
 *   image       `svcops:deploy.recording.image`:V
 *   database    `<PREFIX>_DB_NAME` set to the scratch database (`env` wins over the Secret's `envFrom`)
 *   recordings  the claim `recording.rehearsal.claim` (a copy of the recordings storage the site
 *               keeps), else an empty directory; never production's claim (a test recording is written)
 *   labels      `app.kubernetes.io/name: recording-rehearsal`: the program's Service, NetworkPolicy and
 *               PodDisruptionBudget select `recording-service`, so none of them selects this pod
 *
 * The Job never restarts its pod (`backoffLimit: 0`, `restartPolicy: Never`): a migration that
 * fails shows as a failed pod with its log. `activeDeadlineSeconds` and `ttlSecondsAfterFinished`
 * make the cluster remove a Job a killed rehearsal could not delete; the next rehearsal deletes a
 * leftover of the same name before it creates its own.
 */
import type { V1Container, V1Deployment, V1Job, V1PodSpec, V1Volume } from '@kubernetes/client-node'
import { createServer, type Server, type Socket } from 'node:net'
import type { Environment } from '../../config/schema.ts'
import { OperationError, errorMessage } from '../../core/errors.ts'
import { events } from '../../core/events.ts'
import {
  callKubernetes,
  kubernetesClient,
  loadKubeConfig,
  type ClusterTarget,
  type NeededRight,
  type PodFacts,
} from '../../drivers/kubernetes.ts'
import { deploymentName } from './recording-deployment.ts'

/** The `app.kubernetes.io/name` of the rehearsal's pod: not the recording service's, so no Service selects it. */
export const REHEARSAL_APP = 'recording-rehearsal'

/** Where the program mounts the recordings in the service's container (src/infra/recordingService.ts). */
const RECORDINGS_VOLUME = 'recordings'

/** How long the cluster lets a rehearsal's Job run at most, and keeps it once finished (seconds). */
export const JOB_DEADLINE_SECONDS = 3 * 3600
export const JOB_TTL_SECONDS = 600

/** The Job's name in the namespace: one rehearsal of an environment at a time (the environment's lock). */
export function rehearsalJobName(env: Environment): string {
  return `${deploymentName(env)}-rehearsal`
}

/** The Job's pods as the Kubernetes driver reads them: its name is their `app.kubernetes.io/instance`. */
export function rehearsalTarget(env: Environment, production: ClusterTarget): ClusterTarget {
  return { ...production, deployment: rehearsalJobName(env), app: REHEARSAL_APP }
}

/** The rights the rehearsal uses besides reading production's Deployment. */
export function rehearsalRights(job: ClusterTarget, production: ClusterTarget): NeededRight[] {
  return [
    {
      group: 'apps',
      resource: 'deployments',
      verb: 'get',
      name: production.deployment,
      why: "the pod template the rehearsal's Job copies",
    },
    { group: 'batch', resource: 'jobs', verb: 'create', why: "the rehearsal's Job of the target release" },
    { group: 'batch', resource: 'jobs', verb: 'delete', name: job.deployment, why: "removing the rehearsal's Job (and its pod)" },
    { group: '', resource: 'pods', verb: 'list', why: "the status of the rehearsal's pod" },
    { group: '', resource: 'pods', subresource: 'log', verb: 'get', why: "the log lines of the rehearsal's pod" },
    {
      group: '',
      resource: 'pods',
      subresource: 'portforward',
      verb: 'create',
      why: "the content checks on the rehearsal's pod (port-forward)",
    },
  ]
}

/** What the Job is made of besides the Deployment's template. */
export interface JobSpecInput {
  name: string
  namespace: string
  /** The container of the service in the template. */
  container: string
  image: string
  /** `<PREFIX>_DB_NAME` and the scratch database's name. */
  databaseVariable: string
  database: string
  /** The claim holding a copy of the recordings storage, if the stack names one. */
  claim?: string
  runId: string
  version: string
}

/** The labels of the rehearsal's Job and pod. */
export function rehearsalLabels(name: string): Record<string, string> {
  return { 'app.kubernetes.io/name': REHEARSAL_APP, 'app.kubernetes.io/instance': name, 'app.kubernetes.io/managed-by': 'svcops' }
}

/** The service's container of the template as the Job runs it: V's image, the scratch database. */
function jobContainer(c: V1Container, input: JobSpecInput): V1Container {
  const env = (c.env ?? []).filter((e) => e.name !== input.databaseVariable)
  return { ...c, image: input.image, env: [...env, { name: input.databaseVariable, value: input.database }] }
}

/** The template's volumes with the recordings' claim replaced by the rehearsal's copy (or an empty directory). */
function jobVolumes(volumes: V1Volume[], input: JobSpecInput): V1Volume[] {
  return volumes.map((v) =>
    v.name !== RECORDINGS_VOLUME && !v.persistentVolumeClaim
      ? v
      : input.claim && v.name === RECORDINGS_VOLUME
        ? { name: v.name, persistentVolumeClaim: { claimName: input.claim } }
        : { name: v.name, emptyDir: {} },
  )
}

/** The Job of `input` from production's Deployment `d`; refused when the template has no such container. */
export function rehearsalJob(d: V1Deployment, input: JobSpecInput): V1Job {
  const template = d.spec?.template.spec
  const container = template?.containers.find((c) => c.name === input.container)
  if (!template || !container)
    throw new OperationError(
      `The Deployment ${d.metadata?.name ?? '?'} has no container ${input.container} in its pod template, so the rehearsal cannot copy it.`,
    )
  const labels = rehearsalLabels(input.name)
  const spec: V1PodSpec = {
    ...(template.securityContext ? { securityContext: template.securityContext } : {}),
    ...(template.imagePullSecrets ? { imagePullSecrets: template.imagePullSecrets } : {}),
    ...(template.nodeSelector ? { nodeSelector: template.nodeSelector } : {}),
    ...(template.tolerations ? { tolerations: template.tolerations } : {}),
    ...(template.serviceAccountName ? { serviceAccountName: template.serviceAccountName } : {}),
    restartPolicy: 'Never',
    containers: [jobContainer(container, input)],
    volumes: jobVolumes(template.volumes ?? [], input),
  }
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels,
      annotations: { 'svcops.io/run': input.runId, 'svcops.io/version': input.version },
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: JOB_DEADLINE_SECONDS,
      ttlSecondsAfterFinished: JOB_TTL_SECONDS,
      template: { metadata: { labels }, spec },
    },
  }
}

/** The requests the Job's calls send, for the dry run. */
export const describeJobCall = {
  create: (t: ClusterTarget) => `POST /apis/batch/v1/namespaces/${t.namespace}/jobs (${t.deployment})`,
  remove: (t: ClusterTarget) => `DELETE /apis/batch/v1/namespaces/${t.namespace}/jobs/${t.deployment}?propagationPolicy=Background`,
  forward: (t: ClusterTarget, port: number) =>
    `GET /api/v1/namespaces/${t.namespace}/pods/POD/portforward?ports=${port} (WebSocket) for each connection to a local port`,
}

/** Creating, deleting and reaching the rehearsal's Job through the API. */
export class RehearsalJobApi {
  private readonly kc
  private readonly target: ClusterTarget
  constructor(target: ClusterTarget) {
    this.target = target
    this.kc = loadKubeConfig(target)
  }

  private call<T>(request: string, fn: Parameters<typeof callKubernetes<T>>[1]): Promise<T> {
    const server = this.kc.getCurrentCluster()?.server ?? 'the cluster'
    return callKubernetes(
      { request, what: request, server, timeoutMs: this.target.timeoutMs, rights: 'docs/upgrade.md (Rehearse first)' },
      fn,
    )
  }

  async create(job: V1Job): Promise<void> {
    const batch = this.kc.makeApiClient(kubernetesClient().BatchV1Api)
    await this.call(describeJobCall.create(this.target), (options) =>
      batch.createNamespacedJob({ namespace: this.target.namespace, body: job }, options),
    )
  }

  /** Deletes the Job and, in the background, its pods; false when there was none. */
  async remove(): Promise<boolean> {
    const batch = this.kc.makeApiClient(kubernetesClient().BatchV1Api)
    try {
      await this.call(describeJobCall.remove(this.target), (options) =>
        batch.deleteNamespacedJob(
          { name: this.target.deployment, namespace: this.target.namespace, propagationPolicy: 'Background' },
          options,
        ),
      )
      return true
    } catch (error) {
      if (/HTTP 404/.test(errorMessage(error))) return false
      throw error
    }
  }

  /**
   * A local port forwarded to `port` of the pod `pick` chooses at each connection (the Job's pod
   * changes with each start); none chosen, the connection is closed.
   */
  async forward(port: number, pick: () => Promise<PodFacts | undefined>): Promise<{ url: string; reset(): void; close(): Promise<void> }> {
    const forward = new (kubernetesClient().PortForward)(this.kc)
    const sockets = new Set<Socket>()
    const server: Server = createServer((socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      pick()
        .then((pod) => {
          // No ready pod yet: the connection is refused at once, as a Service without endpoints refuses it.
          if (!pod) return void socket.destroy()
          return forward.portForward(this.target.namespace, pod.name, [port], socket, null, socket).then((ws) => {
            // The pod gone (the Job deleted), its connection ends: a client keeping it alive must not wait on it.
            if (typeof ws !== 'function') ws.on('close', () => socket.destroy())
          })
        })
        .catch((error: unknown) => {
          events.emit({ kind: 'check', check: "port-forward to the rehearsal's pod", ok: false, detail: errorMessage(error) })
          socket.destroy()
        })
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    const address = server.address()
    return {
      url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
      reset: () => {
        for (const s of sockets) s.destroy()
      },
      close: () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy()
          server.close(() => resolve())
        }),
    }
  }
}
