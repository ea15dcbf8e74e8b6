/**
 * The one way the platform builds a workload, so every one gets the same hygiene: its own
 * ServiceAccount without an API token, recommended labels, non-root with a read-only root
 * filesystem, a writable /tmp, resources and scheduling from config, replicas spread over nodes,
 * a PodDisruptionBudget, and keyed checksum annotations on the pod template.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import type { Resources, Toleration } from '../config/deploy.ts'
import {
  containerSecurity,
  labelsOf,
  versionedLabelsOf,
  podSecurity,
  pullSecretsOf,
  imageOf,
  resourcesOf,
  schedulingOf,
  selectorOf,
  serviceHost,
  spreadOf,
  TMP_MOUNT,
  TMP_VOLUME,
  type AppIdentity,
} from './kube.ts'

type In<T> = pulumi.Input<T>
type Container = k8s.types.input.core.v1.Container

/** What every component's Args has: where the workload runs, what image, how many, how big. */
export interface WorkloadArgs {
  /** Namespace of every object of the component. */
  namespace: In<string>
  /** Release the component runs; the image tag. */
  version: string
  /** Image repository without tag. */
  image: string
  /** Image digest (`sha256:...`) that pins the image's content. */
  digest?: string
  /** Number of pods. */
  replicas: number
  /** Requests and limits from config. */
  resources: Resources
  /** Nodes the pods may run on (GPU, capture cards). */
  nodeSelector: Record<string, string>
  /** Taints of those nodes the pods accept. */
  tolerations: Toleration[]
  /** Secret for pulling from a private registry. */
  imagePullSecret?: string
  /** Key of the checksum annotations (a Pulumi secret; see kube.ts checksumOf). */
  checksumKey: In<string>
}

/** The pod template's own parts. */
export interface PodSpec {
  /** Pod-template annotations (checksums). */
  annotations?: Record<string, In<string>>
  /** The container's own fields (args, env, ports, probes, mounts besides /tmp). */
  container: Omit<Container, 'name' | 'image' | 'resources' | 'securityContext'>
  volumes?: In<k8s.types.input.core.v1.Volume>[]
  strategy?: k8s.types.input.apps.v1.DeploymentStrategy
  /** Replicas the Deployment declares, when they differ from the configured ones (a first start). */
  replicas?: number
  /** Resources that must be in place (and ready) before this Deployment rolls. */
  dependsOn?: pulumi.Input<pulumi.Resource>[]
  /** A check the Deployment waits for; when it fails, so does the preview, before anything changes (the downgrade guard). */
  gate?: pulumi.Output<unknown>
}

/**
 * pulumi-kubernetes' per-object await timeout, in seconds (provider/pkg/metadata/overrides.go,
 * `TimeoutDuration`: the resource's customTimeouts, else this annotation; without either,
 * provider/pkg/await/await.go `Creation` and `Update` wait 10 minutes for a Deployment's rollout).
 */
export const AWAIT_TIMEOUT_ANNOTATION = 'pulumi.com/timeoutSeconds'

/** The provider's own budget for the rest of a rollout (scheduling, the image pull, the Recreate's stop, readiness). */
export const PROVIDER_AWAIT_SECONDS = 600

/**
 * How long `pulumi up` must wait for a rollout whose container has `startupProbe`: the time the
 * probe lets a first start take (a migration, for the recording service: its initial delay plus
 * period times failure threshold) on top of the provider's own 10 minutes for everything else.
 * Without it the provider gives up at 10 minutes while the kubelet still lets the start run, and
 * svcops would roll back an upgrade whose migration is still going. Undefined without a startup probe.
 */
export function rolloutTimeoutSeconds(probe: k8s.types.input.core.v1.Probe | undefined): number | undefined {
  if (!probe) return undefined
  const n = (v: unknown, fallback: number) => (typeof v === 'number' ? v : fallback)
  // Kubernetes' defaults: no initial delay, a period of 10 s, a threshold of 3.
  return n(probe.initialDelaySeconds, 0) + n(probe.periodSeconds, 10) * n(probe.failureThreshold, 3) + PROVIDER_AWAIT_SECONDS
}

/** What createWorkload made. */
export interface Workload {
  deployment: k8s.apps.v1.Deployment
  serviceAccount: k8s.core.v1.ServiceAccount
  budget: k8s.policy.v1.PodDisruptionBudget
}

/**
 * Creates the ServiceAccount (`<name>-service-account`), the Deployment (`<name>-deployment`) and
 * the PodDisruptionBudget (`<name>-pdb`) of workload `identity` (image tag = `identity.version`)
 * as children of `parent`.
 */
export function createWorkload(name: string, identity: AppIdentity, args: WorkloadArgs, spec: PodSpec, parent: pulumi.Resource): Workload {
  const labels = versionedLabelsOf(identity)
  const selector = selectorOf(identity)
  // Its own identity, and no API token: nothing in the platform talks to the Kubernetes API.
  const serviceAccount = new k8s.core.v1.ServiceAccount(
    `${name}-service-account`,
    { metadata: { name: identity.instance, namespace: args.namespace, labels: labelsOf(identity) }, automountServiceAccountToken: false },
    { parent },
  )
  const container: Container = {
    ...spec.container,
    name: identity.name,
    image: imageOf(args.image, identity.version, args.digest),
    imagePullPolicy: 'IfNotPresent',
    resources: resourcesOf(args.resources),
    securityContext: containerSecurity(),
    volumeMounts: [TMP_MOUNT, ...((spec.container.volumeMounts as k8s.types.input.core.v1.VolumeMount[] | undefined) ?? [])],
  }
  const spread = spreadOf(selector, args.replicas)
  const timeout = rolloutTimeoutSeconds(spec.container.startupProbe as k8s.types.input.core.v1.Probe | undefined)
  const deployment = new k8s.apps.v1.Deployment(
    `${name}-deployment`,
    {
      metadata: {
        name: identity.instance,
        namespace: args.namespace,
        labels,
        ...(timeout !== undefined ? { annotations: { [AWAIT_TIMEOUT_ANNOTATION]: String(timeout) } } : {}),
      },
      spec: {
        replicas: spec.gate ? spec.gate.apply(() => spec.replicas ?? args.replicas) : (spec.replicas ?? args.replicas),
        selector: { matchLabels: selector },
        ...(spec.strategy ? { strategy: spec.strategy } : {}),
        template: {
          metadata: { labels, ...(spec.annotations ? { annotations: spec.annotations } : {}) },
          spec: {
            serviceAccountName: serviceAccount.metadata.name,
            automountServiceAccountToken: false,
            securityContext: podSecurity(),
            ...schedulingOf(args),
            ...(spread.length > 0 ? { topologySpreadConstraints: spread } : {}),
            ...pullSecretsOf(args.imagePullSecret),
            containers: [container],
            volumes: [TMP_VOLUME, ...(spec.volumes ?? [])],
          },
        },
      },
    },
    { parent, ...(spec.dependsOn ? { dependsOn: spec.dependsOn } : {}) },
  )
  const budget = createDisruptionBudget(`${name}-pdb`, { identity, namespace: args.namespace }, parent)
  return { deployment, serviceAccount, budget }
}

/**
 * Creates a ClusterIP Service in front of the workload `identity`, one named port. A headless one
 * (`headless: true`) resolves to every ready pod instead of balancing over them, so a client that
 * must stay on one pod (a control panel on its rendering engine) picks it and keeps it.
 */
export function createService(
  name: string,
  args: { identity: AppIdentity; namespace: In<string>; port: number; portName: string; headless?: boolean; serviceName?: string },
  parent: pulumi.Resource,
): k8s.core.v1.Service {
  return new k8s.core.v1.Service(
    name,
    {
      metadata: { name: args.serviceName ?? args.identity.instance, namespace: args.namespace, labels: labelsOf(args.identity) },
      spec: {
        type: 'ClusterIP',
        ...(args.headless ? { clusterIP: 'None' } : {}),
        selector: selectorOf(args.identity),
        ports: [{ name: args.portName, port: args.port, targetPort: args.portName, protocol: 'TCP' }],
      },
    },
    { parent },
  )
}

/** `scheme://<service>.<namespace>.svc.cluster.local:<port><path>` once the Service is named. */
export function serviceUrl(
  service: k8s.core.v1.Service,
  namespace: In<string>,
  scheme: 'http' | 'https',
  port: number,
  path = '',
): pulumi.Output<string> {
  return pulumi
    .all([service.metadata.name, pulumi.output(namespace)])
    .apply(([svc, ns]) => `${scheme}://${serviceHost(svc, ns)}:${port}${path}`)
}

/**
 * A PodDisruptionBudget allowing one pod down at a time: a drain proceeds, but never takes a
 * replicated workload down whole. With one replica it still lets a node drain.
 */
function createDisruptionBudget(
  name: string,
  args: { identity: AppIdentity; namespace: In<string> },
  parent: pulumi.Resource,
): k8s.policy.v1.PodDisruptionBudget {
  return new k8s.policy.v1.PodDisruptionBudget(
    name,
    {
      metadata: { name: args.identity.instance, namespace: args.namespace, labels: labelsOf(args.identity) },
      spec: { maxUnavailable: 1, selector: { matchLabels: selectorOf(args.identity) } },
    },
    { parent },
  )
}
