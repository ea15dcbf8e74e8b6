/**
 * The recording service on the Kubernetes platform (`svcops:recording.platform: kubernetes`): the
 * Deployment of this project's Pulumi program is the run's one target, named as the program names
 * it; the Pulumi CLI moves its version (src/drivers/pulumi.ts) and the Kubernetes API reports its
 * pods (src/drivers/kubernetes.ts). Its URL is the Service's: in the cluster by its DNS name,
 * elsewhere through a port-forward the client library makes.
 */
import type { Environment } from '../../config/schema.ts'
import { BadInputError } from '../../core/errors.ts'
import type { KubeconfigTrust } from '../../drivers/kubeconfig-trust.ts'
import { insideCluster, KubernetesDriver, RECORDING_APP, serviceUrlOf, type ClusterTarget } from '../../drivers/kubernetes.ts'
import { PulumiCli, pulumiStackOf, versionKeyOf, type PulumiStack, type VersionChange, type VersionKey } from '../../drivers/pulumi.ts'
import { stackCopyName } from '../../infra/jobRights.ts'

/** The recording service's Kubernetes objects and the tools that reach them. */
export interface RecordingCluster {
  target: ClusterTarget
  /** Pulumi names of what a version change touches (the preview rule). */
  names: VersionChange
  /** The jobs' copy of the stack file (a ConfigMap), when the stack schedules jobs. */
  stackMap?: string
  versionKey: VersionKey
  /** Replicas the stack configures. */
  replicas: number
  /** The stack, as Pulumi sees it (refused with one sentence when the stack file is not the one Pulumi reads). */
  stack(): PulumiStack
  pulumi(): PulumiCli
  kube(): KubernetesDriver
  /** Where the Service answers now: its DNS name in the cluster, a local port-forward elsewhere. */
  url: string
  /** How the Service is reached, for the dry run. */
  reach: 'service' | 'port-forward'
  /** Opens the port-forward (outside the cluster); nothing inside it. */
  connect(): Promise<void>
  close(): Promise<void>
}

/** The Deployment's name for a stack: `<prefix>-recording`, as src/infra/index.ts names the component. */
export function deploymentName(env: Environment): string {
  return `${env.product.prefix}-recording`
}

/** The cluster of an environment on the Kubernetes platform. Nothing connects until used. */
export function openRecordingCluster(env: Environment): RecordingCluster {
  const deploy = env.deploy
  if (!deploy) throw new BadInputError(`${env.file}: svcops:deploy: missing; recording.platform kubernetes takes the Deployment from it.`)
  const prefix = env.product.prefix
  const target: ClusterTarget & KubeconfigTrust = {
    namespace: deploy.namespace,
    deployment: deploymentName(env),
    container: RECORDING_APP,
    port: deploy.recording.port,
    ...(env.kubernetes?.context ? { context: env.kubernetes.context } : {}),
    ...(env.kubernetes?.kubeconfig ? { kubeconfig: env.kubernetes.kubeconfig } : {}),
    ...(deploy.allowInsecureSkipTlsVerify ? { allowInsecureSkipTlsVerify: true } : {}),
  }
  const stackMap = stackCopyName(deploy, prefix)
  let stack: PulumiStack | undefined
  let cli: PulumiCli | undefined
  let kube: KubernetesDriver | undefined
  let forward: { url: string; close(): Promise<void> } | undefined
  const inside = insideCluster()
  const cluster: RecordingCluster = {
    target,
    names: { deployment: `${target.deployment}-deployment`, stackMap: stackMap ?? '' },
    ...(stackMap ? { stackMap } : {}),
    versionKey: versionKeyOf(deploy.recording.version),
    replicas: deploy.recording.replicas,
    stack: () => (stack ??= pulumiStackOf(env.file, env.name)),
    pulumi: () => (cli ??= new PulumiCli(cluster.stack())),
    kube: () => (kube ??= new KubernetesDriver(target)),
    url: serviceUrlOf(target),
    reach: inside ? 'service' : 'port-forward',
    async connect() {
      if (inside || forward) return
      forward = await cluster.kube().forwardService()
      cluster.url = forward.url
    },
    async close() {
      await forward?.close()
      forward = undefined
    },
  }
  return cluster
}
