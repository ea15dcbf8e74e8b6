/**
 * The live production system on the Kubernetes platform (`svcops:live.platform: kubernetes`): the
 * Deployments of this project's Pulumi program (src/infra/systemController.ts, mediaComponent.ts),
 * reached with the recording service's drivers — the Pulumi CLI (src/drivers/pulumi.ts) moves
 * `svcops:deploy.live.version` in the stack file and runs `pulumi up`, the Kubernetes API
 * (src/drivers/kubernetes.ts) reports each component's Deployment, pods and log lines.
 *
 * Behind the playbook's `LivePlatform` calls:
 *
 *   installed version  the image tag of the component's Deployment
 *   stage, stop, start nothing: the kubelet pulls the image; `pulumi up` restarts the controller
 *                      (Recreate) first and the components after it (the program's dependsOn)
 *   install            `pulumi config set --path svcops:deploy.live.version V`, `pulumi preview
 *                      --json` showing only the live components' changes, `pulumi up --target`
 *                      of exactly those; a later component finds its version installed
 *   status, errors     its pods Running and ready on the version; ERROR lines in their last lines
 */
import { resolve } from 'node:path'
import type { Environment, LiveConfig } from '../../config/schema.ts'
import type { DeployConfig } from '../../config/deploy.ts'
import type { LiveClusterConfig } from '../../config/live-cluster.ts'
import { BadInputError, errorMessage, OperationError } from '../../core/errors.ts'
import { createHttpClient } from '../../core/http.ts'
import { apiPrefix } from '../../releases/versions.ts'
import { events } from '../../core/events.ts'
import { local, type CommandResult, type Transport } from '../../core/runner.ts'
import { checkClusterAccess } from '../../drivers/cluster-access.ts'
import {
  describeCall,
  insideCluster,
  KubernetesDriver,
  showRight,
  type ClusterTarget,
  type NeededRight,
  type PodFacts,
} from '../../drivers/kubernetes.ts'
import {
  PulumiCli,
  pulumiArgv,
  pulumiStackOf,
  readStackVersion,
  refuseForeignChanges,
  showPulumi,
  urnParts,
  type PreviewDigest,
  type PulumiStack,
  type StackKey,
} from '../../drivers/pulumi.ts'
import { findLogErrors } from '../../drivers/services.ts'
import { judgeConnection, judgeControllerStatus, judgeMetrics, metricsCheckName, type Answer, type CheckResult } from '../live-judge.ts'
import type { LiveHost } from '../hosts/host-files.ts'
import { LIVE_COMPONENTS, type LiveComponentName, type LiveProduct } from '../layout.ts'
import type { LivePlatform } from '../live-platform.ts'

/** The stack file key of the live system's release, and of its PSK rotation. */
export const LIVE_VERSION_KEY = 'svcops:deploy.live.version' satisfies StackKey
export const PSK_ROTATION_KEY = 'svcops:deploy.pskRotation' satisfies StackKey

/** The key of the CA certificate in the stack's CA ConfigMap (src/infra/tls.ts). */
const CA_KEY = 'ca.crt'

/** Log lines that count as errors (the product writes ERROR; FATAL for a crash). */
const ERROR_PATTERNS = ['\\bERROR\\b', '\\bFATAL\\b']

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
  const targetOf = (c: LiveComponentName): ClusterTarget => ({
    namespace,
    deployment: `${prefix}-${c}`,
    container: c,
    app: c,
    port: c === 'system-controller' ? sc.port : 0,
    ...(env.kubernetes?.context ? { context: env.kubernetes.context } : {}),
    ...(env.kubernetes?.kubeconfig ? { kubeconfig: env.kubernetes.kubeconfig } : {}),
  })
  const targets = Object.fromEntries(LIVE_COMPONENTS.map((c) => [c, targetOf(c)])) as Record<LiveComponentName, ClusterTarget>
  const scheduled = !!deploy.jobs && !!(deploy.upgradeSchedule ?? deploy.backupSchedule)
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
    ...(scheduled ? { stackMap: `${prefix}-svcops-stack` } : {}),
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
  }
}

/** The namespace as the run's "host": it has no shell, and a step that would run a command on it is a bug, said so. */
export function clusterHost(cluster: LiveCluster): LiveHost {
  const name = cluster.namespace
  const refuse = (): Promise<never> =>
    Promise.reject(
      new OperationError(`Namespace ${name} is a Kubernetes namespace: svcops runs no command in it (a host step reached it).`),
    )
  const transport: Transport = {
    host: name,
    exec: (): Promise<CommandResult> => refuse(),
    upload: () => refuse(),
    close: () => cluster.close(),
  }
  return { name, config: { name }, transport }
}

/** The run lock of a live system on Kubernetes: a file on the machine that runs svcops (Pulumi refuses a second update of the stack besides). */
export function clusterLock(env: Environment): { transport: Transport; path: string } {
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

// ---- the preview rule ----

/** Pulumi operations that change nothing; and those a version change of a component may make. */
const NO_CHANGE = new Set(['same', 'read', 'refresh'])
const COMPONENT_OPS = new Set(['update', 'replace', 'create-replacement', 'delete-replaced'])

/**
 * The preview's changes split into the live components' (the targets of `pulumi up`) and
 * everything else (the refusal lists each): any update or replacement inside the system
 * controller's or a media component's ComponentResource, the jobs' stack copy's data, and — only
 * when the run changed `pskRotation` — the PSK's random password and Secret. A component created or
 * deleted, or anything of the manager, the recording service or the namespace, is foreign.
 */
export function liveComponentChanges(
  digest: PreviewDigest,
  cluster: Pick<LiveCluster, 'prefix' | 'stackMap'>,
  options: { rotation: boolean },
): { targets: string[]; other: string[] } {
  const targets: string[] = []
  const other: string[] = []
  const components = LIVE_COMPONENTS.map((c) => `${cluster.prefix}-${c}`)
  for (const step of digest.steps) {
    if (NO_CHANGE.has(step.op)) continue
    const { type, name } = urnParts(step.urn)
    const chain = (step.urn.split('::')[2] ?? '').split('$')
    const paths = Object.keys(step.detailedDiff ?? {})
    const shown = `${step.op} ${type} ${name}${paths.length ? ` (${paths.join(', ')})` : step.diffReasons?.length ? ` (${step.diffReasons.join(', ')})` : ''}`
    const inComponent =
      (chain.includes('svcops:infra:SystemController') || chain.includes('svcops:infra:MediaComponent')) &&
      components.some((c) => name === c || name.startsWith(`${c}-`))
    const inPsk = chain.includes('svcops:infra:Psk') && name.startsWith(`${cluster.prefix}-psk`)
    const stackCopy =
      type === 'kubernetes:core/v1:ConfigMap' &&
      name === cluster.stackMap &&
      step.op === 'update' &&
      paths.every((p) => /^data(\.|\[|$)/.test(p))
    if ((inComponent || (inPsk && options.rotation)) && COMPONENT_OPS.has(step.op)) targets.push(step.urn)
    else if (stackCopy) targets.push(step.urn)
    else other.push(shown)
  }
  for (const d of digest.diagnostics ?? []) if (d.severity === 'error') other.push(`error: ${d.message.trim()}`)
  return { targets, other }
}

/** `pulumi preview` under the rule; a foreign change refused, listing every one. */
export async function previewLiveChange(cluster: LiveCluster, env: Environment, rotation: boolean): Promise<string[]> {
  const preview = liveComponentChanges(await cluster.pulumi().preview(), cluster, { rotation })
  refuseForeignChanges(
    env.name,
    preview.other,
    'pulumi preview: only the live components change',
    "the live production system's components, which a live upgrade does not apply",
  )
  return [...new Set(preview.targets)]
}

// ---- rights ----

/** The rights a live run uses in the namespace (docs/live.md lists them). */
export function liveRights(cluster: LiveCluster): NeededRight[] {
  const sc = cluster.targets['system-controller'].deployment
  return [
    { group: 'apps', resource: 'deployments', verb: 'get', why: 'read the version of every component' },
    { group: 'apps', resource: 'deployments', verb: 'patch', why: '`pulumi up` of the new version' },
    { group: 'apps', resource: 'deployments', verb: 'watch', why: "Pulumi's wait for the rollout" },
    { group: 'apps', resource: 'replicasets', verb: 'list', why: "Pulumi's wait for the rollout" },
    { group: '', resource: 'events', verb: 'list', why: "Pulumi's wait for the rollout" },
    { group: '', resource: 'secrets', verb: 'patch', why: 'the settings file and the PSK Secret (`pulumi up`)' },
    { group: '', resource: 'pods', verb: 'list', why: 'the status of every pod' },
    { group: '', resource: 'pods', subresource: 'log', verb: 'get', why: 'the last log lines of every pod' },
    { group: '', resource: 'services', verb: 'get', name: sc, why: "the controller's Service" },
    ...(cluster.tls && cluster.reach !== 'configured'
      ? [
          {
            group: '',
            resource: 'configmaps',
            verb: 'get',
            name: cluster.tls.caConfigMap,
            why: "the stack's CA, to trust the controller's certificate",
          },
        ]
      : []),
    ...(cluster.stackMap
      ? [{ group: '', resource: 'configmaps', verb: 'patch', name: cluster.stackMap, why: "the jobs' copy of the stack file" }]
      : []),
    ...(cluster.metrics
      ? [{ group: '', resource: 'pods', subresource: 'proxy', verb: 'get', why: "the media components' metrics (pod proxy)" }]
      : []),
    ...(cluster.reach === 'port-forward'
      ? [
          {
            group: '',
            resource: 'pods',
            subresource: 'portforward',
            verb: 'create',
            why: 'the controller from this machine (port-forward)',
          },
        ]
      : []),
  ]
}

/** The preflight's Kubernetes part for the dry run. */
export function describeLiveClusterPreflight(cluster: LiveCluster, env: Environment): string[] {
  const rights = liveRights(cluster)
  const sc = cluster.targets['system-controller']
  return [
    `the Pulumi CLI and its version: ${shownPulumi(cluster, pulumiArgv.version())}`,
    `the stack '${env.name}' exists and no update of it runs: ${shownPulumi(cluster, pulumiArgv.stacks())}`,
    `the Kubernetes API with context ${sc.context ?? '(the kubeconfig’s current one)'}: ${describeCall.version()}; ${LIVE_COMPONENTS.map((c) => describeCall.deployment(cluster.targets[c])).join('; ')}`,
    `this identity's rights in namespace ${cluster.namespace}: ${rights.map(showRight).join('; ')} — one ${describeCall.access(rights[0] as NeededRight).replace(/ \(.*$/, '')} each`,
    `no change but the live components': ${shownPulumi(cluster, pulumiArgv.preview(cluster.stack()))}; refused, listing every other change`,
    `the stack file's ${LIVE_VERSION_KEY} agrees with the Deployments (said in the report when not)`,
  ]
}

/** The preflight's Kubernetes part: CLI, stack, API, rights, a preview without foreign change, file and cluster agreeing. */
export async function liveClusterPreflight(
  cluster: LiveCluster,
  env: Environment,
  installed: string | undefined,
): Promise<Record<string, unknown>> {
  const { pulumiVersion, kubernetes } = await checkClusterAccess(cluster.pulumi(), cluster.kube('system-controller'), {
    stack: env.name,
    rights: liveRights(cluster),
    grant: 'Grant them (docs/live.md, "Live on Kubernetes") and run again.',
  })
  await previewLiveChange(cluster, env, false)
  const recorded = readStackVersion(cluster.stack().stackFile, LIVE_VERSION_KEY)
  const agree = recorded === installed
  events.emit({
    kind: 'check',
    check: `the stack file's ${LIVE_VERSION_KEY} agrees with the cluster`,
    ok: agree,
    detail: agree ? (recorded ?? '') : `the stack file holds ${recorded ?? 'nothing'}, the Deployments run ${installed ?? 'nothing'}`,
  })
  return { pulumiVersion, kubernetes, stackFile: recorded ?? null, ...(agree ? {} : { disagrees: true }) }
}

// ---- the platform ----

/** Pods that count: not being deleted. */
async function livePods(cluster: LiveCluster, c: LiveComponentName): Promise<PodFacts[]> {
  return (await cluster.kube(c).listPods()).filter((p) => !p.deleting)
}

function showPod(p: PodFacts): string {
  return `${p.name} ${p.phase}${p.ready ? ' ready' : ' not ready'} ${p.version ?? '?'}${p.waiting ? ` ${p.waiting}` : ''}${p.restarts ? ` restarts=${p.restarts}` : ''}`
}

/** The platform of the playbook on Kubernetes; `rotation` says whether the run changed pskRotation (the preview rule). */
export function clusterPlatform(cluster: LiveCluster, env: Environment, rotation: () => boolean): LivePlatform {
  const nothing = 'nothing: the kubelet pulls the image when the new pod starts (imagePullPolicy IfNotPresent)'
  return {
    async installedVersion(c) {
      return (await cluster.kube(c).readDeployment()).version
    },
    // The image is the registry's business: the kubelet pulls it, and a missing tag shows as ImagePullBackOff in the check.
    assertAvailable: () => undefined,
    stage: () => Promise.resolve([]),
    async install(_c, version) {
      const file = cluster.stack().stackFile
      if (readStackVersion(file, LIVE_VERSION_KEY) !== version) await cluster.pulumi().setVersion(LIVE_VERSION_KEY, version)
      const targets = await previewLiveChange(cluster, env, rotation())
      await cluster.pulumi().up(targets)
    },
    stop: () => Promise.resolve(),
    start: () => Promise.resolve(undefined),
    async status(c) {
      const d = await cluster.kube(c).readDeployment()
      const pods = await livePods(cluster, c)
      const running = pods.length > 0 && pods.every((p) => p.phase === 'Running' && p.ready && p.version === d.version)
      return {
        running,
        status: `${d.readyReplicas}/${d.replicas} ready on ${d.version ?? '?'}${pods.length ? `: ${pods.map(showPod).join(', ')}` : ': no pod'}`,
      }
    },
    async errorLines(c) {
      const errors: string[] = []
      for (const p of await livePods(cluster, c))
        errors.push(...findLogErrors(await cluster.kube(c).podLog(p.name, cluster.logLines), ERROR_PATTERNS).map((l) => `${p.name}: ${l}`))
      return errors
    },
    describe(call, c, version) {
      const t = cluster.targets[c]
      if (call === 'stage') return [nothing]
      if (call === 'stop')
        return [
          `nothing: \`pulumi up\` restarts ${t.deployment} — ${c === 'system-controller' ? 'first, by its Recreate strategy' : 'after the controller is ready (the program’s dependsOn)'}`,
        ]
      if (call === 'start') return [`nothing: started by \`pulumi up\` (install)`]
      if (call === 'install')
        return [
          `${shownPulumi(cluster, pulumiArgv.configSet(cluster.stack(), LIVE_VERSION_KEY, version ?? ''))} (when the stack file holds another version)`,
          `${shownPulumi(cluster, pulumiArgv.preview(cluster.stack()))}: only the live components (and the PSK when the run rotates it) may change`,
          `${shownPulumi(cluster, pulumiArgv.up(cluster.stack(), ['URN', '...']))} with a --target per changed URN; a later component finds ${version ?? 'it'} installed`,
        ]
      return [
        describeCall.deployment(t),
        `${describeCall.pods(t)}: every pod Running, ready, on the version`,
        `${describeCall.log(t, cluster.logLines)}; fail on ERROR | FATAL`,
      ]
    },
  }
}

// ---- the controller through its Service ----

/**
 * `GET <path>` of the system controller through its Service: in the cluster by its DNS name, from a
 * workstation through a port-forward, or at `live.controllerUrl`. With `deploy.tls` the stack's CA
 * (its ConfigMap) is the only one trusted, for the Service's name. Never throws: a failure is the answer.
 */
export async function controllerGet(cluster: LiveCluster, path: string): Promise<Answer> {
  try {
    const base = await cluster.connect()
    const tls =
      cluster.tls && cluster.reach !== 'configured'
        ? {
            ca: (await cluster.kube('system-controller').readConfigMap(cluster.tls.caConfigMap))[CA_KEY] ?? '',
            serverName: cluster.tls.serverName,
          }
        : undefined
    if (tls && !tls.ca) return { error: `the ConfigMap ${cluster.tls?.caConfigMap} holds no ${CA_KEY}` }
    const client = createHttpClient(tls ?? {})
    try {
      const answer = await client.send({ method: 'GET', url: `${base.replace(/\/+$/, '')}${path}`, timeoutMs: 5000, maxBodyBytes: 1 << 20 })
      return { status: answer.status, body: answer.body }
    } finally {
      await client.close()
    }
  } catch (error) {
    return { error: errorMessage(error) }
  }
}

/** The system controller answering `GET <prefix>/status` with its version, through its Service. */
export async function controllerThroughService(cluster: LiveCluster, version: string): Promise<CheckResult> {
  const prefix = apiPrefix(version)
  return judgeControllerStatus(
    `the system controller answers on ${prefix} through its Service`,
    version,
    await controllerGet(cluster, `${prefix}/status`),
  )
}

/** The controller, through its Service, listing `component` connected at `version` (`GET <prefix>/components`). */
export async function connectionThroughService(cluster: LiveCluster, component: LiveComponentName, version: string): Promise<CheckResult> {
  return judgeConnection(component, version, await controllerGet(cluster, `${apiPrefix(version)}/components`))
}

/**
 * The metric names of the release on every pod of a media component, read through the API
 * server's pod proxy at `deploy.live.metrics`; without that section the program declares no
 * metrics port, and the check says it was not made.
 */
export async function metricsThroughProxy(
  cluster: LiveCluster,
  product: LiveProduct,
  component: LiveComponentName,
  version: string,
): Promise<CheckResult[]> {
  const check = metricsCheckName(product, component, version)
  const m = cluster.metrics
  if (!m) return [{ check, ok: true, detail: 'not checked: svcops:deploy.live.metrics is not set, so the pods declare no metrics port' }]
  const pods = await livePods(cluster, component)
  if (!pods.length) return [{ check, ok: false, detail: 'no pod' }]
  const results: CheckResult[] = []
  for (const p of pods) {
    let answer: Answer
    try {
      answer = { status: 200, body: await cluster.kube(component).podProxyGet(p.name, m.port, m.path) }
    } catch (error) {
      answer = { error: errorMessage(error) }
    }
    results.push(judgeMetrics(product, component, version, answer, p.name))
  }
  const failed = results.filter((r) => !r.ok)
  return failed.length ? failed : [{ check, ok: true, detail: `${pods.length} pod(s): ${pods.map((p) => p.name).join(', ')}` }]
}
