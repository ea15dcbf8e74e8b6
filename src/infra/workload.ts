/**
 * The one way the platform builds a Deployment and its Service, so every workload gets the same
 * hygiene: recommended labels, non-root with a read-only root filesystem, a writable /tmp,
 * resources and scheduling from config, and checksum annotations on the pod template.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import type { Resources, Toleration } from '../config/deploy.ts'
import {
  containerSecurity,
  labelsOf,
  podSecurity,
  pullSecretsOf,
  resourcesOf,
  schedulingOf,
  selectorOf,
  serviceHost,
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
}

/** The pod template's own parts. */
export interface PodSpec {
  /** Pod-template annotations (checksums). */
  annotations?: Record<string, In<string>>
  /** The container's own fields (args, env, ports, probes, mounts besides /tmp). */
  container: Omit<Container, 'name' | 'image' | 'resources' | 'securityContext'>
  volumes?: In<k8s.types.input.core.v1.Volume>[]
  strategy?: k8s.types.input.apps.v1.DeploymentStrategy
}

/** Creates the Deployment of workload `identity` (image tag = `identity.version`) as a child of `parent`. */
export function createDeployment(
  name: string,
  identity: AppIdentity,
  args: WorkloadArgs,
  spec: PodSpec,
  parent: pulumi.Resource,
): k8s.apps.v1.Deployment {
  const labels = labelsOf(identity)
  const container: Container = {
    ...spec.container,
    name: identity.name,
    image: `${args.image}:${identity.version}`,
    imagePullPolicy: 'IfNotPresent',
    resources: resourcesOf(args.resources),
    securityContext: containerSecurity(),
    volumeMounts: [TMP_MOUNT, ...((spec.container.volumeMounts as k8s.types.input.core.v1.VolumeMount[] | undefined) ?? [])],
  }
  return new k8s.apps.v1.Deployment(
    name,
    {
      metadata: { name: identity.instance, namespace: args.namespace, labels },
      spec: {
        replicas: args.replicas,
        selector: { matchLabels: selectorOf(identity) },
        ...(spec.strategy ? { strategy: spec.strategy } : {}),
        template: {
          metadata: { labels, ...(spec.annotations ? { annotations: spec.annotations } : {}) },
          spec: {
            automountServiceAccountToken: false,
            securityContext: podSecurity(),
            ...schedulingOf(args),
            ...pullSecretsOf(args.imagePullSecret),
            containers: [container],
            volumes: [TMP_VOLUME, ...(spec.volumes ?? [])],
          },
        },
      },
    },
    { parent },
  )
}

/** Creates a ClusterIP Service in front of the workload `identity`, one named port. */
export function createService(
  name: string,
  args: { identity: AppIdentity; namespace: In<string>; port: number; portName: string },
  parent: pulumi.Resource,
): k8s.core.v1.Service {
  return new k8s.core.v1.Service(
    name,
    {
      metadata: { name: args.identity.instance, namespace: args.namespace, labels: labelsOf(args.identity) },
      spec: {
        type: 'ClusterIP',
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
export function createDisruptionBudget(
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
