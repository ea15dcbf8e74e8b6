/**
 * The live production system on the Kubernetes platform (`svcops:live.platform: kubernetes`): the
 * Deployments of this project's Pulumi program (src/infra/systemController.ts, mediaComponent.ts)
 * in one stack, and the tools that reach them — the Pulumi CLI (src/drivers/pulumi.ts) for
 * `svcops:deploy.live.version` and `pulumi up`, the Kubernetes API (src/drivers/kubernetes.ts) for
 * each component's Deployment, pods and log lines, and the controller's Service. Nothing connects
 * until used. The live section the steps read is derived from the stack (`clusterLiveConfig`).
 */
import { resolve } from 'node:path'
import type { Environment, LiveConfig } from '../../config/schema.ts'
import type { DeployConfig } from '../../config/deploy.ts'
import type { LiveClusterConfig } from '../../config/live-cluster.ts'
import { BadInputError } from '../../core/errors.ts'
import { local } from '../../core/runner.ts'
import type { KubeconfigTrust } from '../../drivers/kubeconfig-trust.ts'
import { insideCluster, KubernetesDriver, type ClusterTarget } from '../../drivers/kubernetes.ts'
import { PulumiCli, pulumiStackOf, showPulumi, type PulumiStack, type StackKey } from '../../drivers/pulumi.ts'
import { stackCopyName } from '../../infra/jobRights.ts'
import { LIVE_COMPONENTS, type LiveComponentName } from '../layout.ts'
import type { LiveLockPlace } from '../live-platform.ts'

/** The stack file key of the live system's release, and of its PSK rotation. */
export const LIVE_VERSION_KEY = 'svcops:deploy.live.version' satisfies StackKey
export const PSK_ROTATION_KEY = 'svcops:deploy.pskRotation' satisfies StackKey

/** The live system's objects in one stack, and the tools that reach them. Nothing connects until used. */
export interface LiveCluster {
  namespace: string
  prefix: string
  /** Each component's Deployment (named `<prefix>-<component>` by the program; pods labelled with the component). */
  targets: Record<LiveComponentName, ClusterTarget>
  /** The jobs' copy of the stack file (a ConfigMap), when the stack schedules jobs. */
  stackMap?: string
  /** Whether the stack supplies its own PSK (`svcops:psk`): then pskRotation changes nothing. */
  suppliedPsk: boolean
  logLines: number
  stack(): PulumiStack
  pulumi(): PulumiCli
  kube(component: LiveComponentName): KubernetesDriver
  /** How the controller's Service is reached: in the cluster, through a port-forward, or the configured URL. */
  reach: 'service' | 'port-forward' | 'configured'
  /** The controller's base URL now (the port-forward's once opened). */
  controllerUrl: string
  /** Opens the port-forward to the controller's Service (outside the cluster, without a configured URL). */
  connect(): Promise<string>
  /** With `deploy.tls`: the ConfigMap of the stack's CA, and the name the controller's certificate holds. */
  tls?: { caConfigMap: string; serverName: string }
  /** `deploy.live.metrics`: where the media components' pods serve their metrics (read through the pod proxy). */
  metrics?: { port: number; path: string }
  close(): Promise<void>
}

/** The live section of a cluster environment, or bad input naming what is missing. */
function deployOf(env: Environment): DeployConfig {
  if (!env.deploy)
    throw new BadInputError(`${env.file}: svcops:deploy: missing; live.platform kubernetes takes the Deployments and the version from it.`)
  return env.deploy
}

/** The live system of an environment on the Kubernetes platform. */
export function openLiveCluster(env: Environment, section: LiveClusterConfig): LiveCluster {
  const deploy = deployOf(env)
  const prefix = env.product.prefix
  const namespace = deploy.namespace
  const sc = deploy.live.systemController
  const targetOf = (c: LiveComponentName): ClusterTarget & KubeconfigTrust => ({
    namespace,
    deployment: `${prefix}-${c}`,
    container: c,
    app: c,
    port: c === 'system-controller' ? sc.port : 0,
    ...(env.kubernetes?.context ? { context: env.kubernetes.context } : {}),
    ...(env.kubernetes?.kubeconfig ? { kubeconfig: env.kubernetes.kubeconfig } : {}),
    ...(deploy.allowInsecureSkipTlsVerify ? { allowInsecureSkipTlsVerify: true } : {}),
  })
  const targets = Object.fromEntries(LIVE_COMPONENTS.map((c) => [c, targetOf(c)])) as Record<LiveComponentName, ClusterTarget>
  const stackMap = stackCopyName(deploy, prefix)
  const scheme = deploy.tls ? 'https' : 'http'
  const inside = insideCluster()
  let stack: PulumiStack | undefined
  let cli: PulumiCli | undefined
  const kubes = new Map<LiveComponentName, KubernetesDriver>()
  let forward: { url: string; close(): Promise<void> } | undefined
  const cluster: LiveCluster = {
    namespace,
    prefix,
    targets,
    ...(stackMap ? { stackMap } : {}),
    suppliedPsk: !!env.psk,
    ...(deploy.live.metrics ? { metrics: deploy.live.metrics } : {}),
    logLines: section.logLines ?? 50,
    stack: () => (stack ??= pulumiStackOf(env.file, env.name)),
    pulumi: () => (cli ??= new PulumiCli(cluster.stack())),
    kube(c) {
      let k = kubes.get(c)
      if (!k) kubes.set(c, (k = new KubernetesDriver(targets[c])))
      return k
    },
    reach: section.controllerUrl ? 'configured' : inside ? 'service' : 'port-forward',
    ...(deploy.tls
      ? {
          tls: { caConfigMap: `${prefix}-tls-ca`, serverName: `${targets['system-controller'].deployment}.${namespace}.svc.cluster.local` },
        }
      : {}),
    controllerUrl:
      section.controllerUrl ?? `${scheme}://${targets['system-controller'].deployment}.${namespace}.svc.cluster.local:${sc.port}`,
    async connect() {
      if (cluster.reach !== 'port-forward') return cluster.controllerUrl
      if (!forward) {
        forward = await cluster.kube('system-controller').forwardService()
        cluster.controllerUrl = forward.url.replace(/^http:/, `${scheme}:`)
      }
      return cluster.controllerUrl
    },
    async close() {
      await forward?.close()
      forward = undefined
    },
  }
  return cluster
}

/**
 * The live section the playbook's steps read, derived from the stack: the release from
 * `deploy.live.version`, the product from `svcops:product`, the TCP endpoints from the pipeline's,
 * the gates' inputs from `svcops:live`. Host-only fields (packages, metrics ports) are unused on
 * this platform: its checks read the API instead.
 */
export function clusterLiveConfig(env: Environment, section: LiveClusterConfig, cluster: LiveCluster): LiveConfig {
  const deploy = deployOf(env)
  const sc = deploy.live.systemController
  return {
    version: deploy.live.version,
    prefix: env.product.prefix,
    productDir: env.product.dir,
    packageDriver: 'apt',
    serviceDriver: 'systemd',
    host: { name: cluster.namespace },
    controllerUrl: cluster.controllerUrl,
    metricsPorts: { 'system-controller': sc.port, ingest: sc.port, pipeline: sc.port, 'control-panel': sc.port },
    tcpEndpoints: deploy.live.pipeline.tcpEndpoints,
    ...(sc.legacySettingsDir ? { legacySettingsDir: sc.legacySettingsDir } : {}),
    connectTimeoutSeconds: section.connectTimeoutSeconds ?? 300,
    sdkSourceDirs: section.sdkSourceDirs,
    savedRequests: section.savedRequests,
    metricFiles: section.metricFiles,
    // The seed's checks by UUID and the site's declared checks, read through the Service and the pod proxy (controller-service.ts).
    uuids: section.uuids,
    checks: section.checks,
    // No host, no environment file: the program sets the pods' environment.
    envFiles: {},
  }
}

/** The run lock of a live system on Kubernetes: a file on the machine that runs svcops (Pulumi refuses a second update of the stack besides). */
export function clusterLock(env: Environment): LiveLockPlace {
  return { transport: local, path: resolve(process.env.SVCOPS_STATE_DIR ?? '.svcops', `live-upgrade-${env.name}.lock`) }
}

/** A pulumi command as the dry run shows it. */
export function shownPulumi(cluster: LiveCluster, argv: string[]): string {
  try {
    return showPulumi(cluster.stack(), argv)
  } catch (error) {
    return `${argv.join(' ')}   (refused: ${(error as Error).message})`
  }
}
