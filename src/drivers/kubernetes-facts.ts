/**
 * What svcops reads of the API's answers (the API reference's Deployment, Pod and
 * PersistentVolumeClaim), as plain facts: the rollout, each pod's state and why it waits or ended,
 * a claim's binding and sizes. No call here: the driver (kubernetes.ts) makes them.
 */
import type { V1Deployment, V1Pod } from '@kubernetes/client-node'

/** What a Deployment says about the rollout. */
export interface DeploymentFacts {
  /** The image tag of the service's container (the version the program sets). */
  version: string | undefined
  image: string | undefined
  replicas: number
  readyReplicas: number
  updatedReplicas: number
  generation: number
  observedGeneration: number
}

/** One pod: its phase, readiness, restarts and why a container waits (CrashLoopBackOff, ...). */
export interface PodFacts {
  name: string
  phase: string
  ready: boolean
  restarts: number
  version: string | undefined
  waiting?: string
  /** The kubelet's words for why the container waits (an image pull's error). */
  waitingMessage?: string
  /** How the container's run ended, now or before its last restart: `OOMKilled`, `Error`, with its exit code. */
  terminated?: { reason: string; exitCode: number; finishedAt?: string }
  /** The container's memory limit in the pod's spec. */
  memoryLimit?: string
  deleting: boolean
  /** The container's image as its pod spec names it (`repository:tag[@digest]`). */
  image?: string
  /** The content the kubelet runs (`containerStatuses[].imageID`): empty until the image was pulled. */
  imageID?: string
}

/** A PersistentVolumeClaim as the doctor reads it: bound or not, asked and provisioned sizes. */
export interface ClaimFacts {
  name: string
  phase: string
  requested: string | undefined
  capacity: string | undefined
  storageClass: string | undefined
  accessModes: string[]
}

/** The facts of a Deployment answer (the API reference's `Deployment`). */
export function deploymentFacts(d: V1Deployment, container: string): DeploymentFacts {
  const c = d.spec?.template.spec?.containers.find((x) => x.name === container)
  return {
    version: c?.image ? imageTag(c.image) : undefined,
    image: c?.image,
    replicas: d.spec?.replicas ?? 1,
    readyReplicas: d.status?.readyReplicas ?? 0,
    updatedReplicas: d.status?.updatedReplicas ?? 0,
    generation: d.metadata?.generation ?? 0,
    observedGeneration: d.status?.observedGeneration ?? 0,
  }
}

/** The facts of a Pod answer for the service's `container`. */
export function podFacts(p: V1Pod, container: string): PodFacts {
  const status = p.status?.containerStatuses?.find((s) => s.name === container)
  const spec = p.spec?.containers.find((c) => c.name === container)
  const image = spec?.image
  const ended = status?.state?.terminated ?? status?.lastState?.terminated
  const memoryLimit = spec?.resources?.limits?.memory
  return {
    name: p.metadata?.name ?? '?',
    phase: p.status?.phase ?? 'Unknown',
    ready: status?.ready ?? false,
    restarts: status?.restartCount ?? 0,
    version: image ? imageTag(image) : undefined,
    ...(status?.state?.waiting?.reason ? { waiting: status.state.waiting.reason } : {}),
    ...(status?.state?.waiting?.message ? { waitingMessage: status.state.waiting.message } : {}),
    ...(ended
      ? {
          terminated: {
            reason: ended.reason ?? 'Unknown',
            exitCode: ended.exitCode,
            ...(ended.finishedAt ? { finishedAt: new Date(ended.finishedAt).toISOString() } : {}),
          },
        }
      : {}),
    ...(memoryLimit ? { memoryLimit } : {}),
    deleting: !!p.metadata?.deletionTimestamp,
    ...(image ? { image } : {}),
    ...(status?.imageID ? { imageID: status.imageID } : {}),
  }
}

/** The tag of `registry/repo:1.5.0[@sha256:...]`. */
export function imageTag(image: string): string | undefined {
  const noDigest = image.split('@')[0] ?? image
  const slash = noDigest.lastIndexOf('/')
  const colon = noDigest.lastIndexOf(':')
  return colon > slash ? noDigest.slice(colon + 1) : undefined
}
