/**
 * The live production system on Kubernetes as the playbook's platform: behind the same calls as on
 * a host,
 *
 *   installed version  the image tag of the component's Deployment
 *   stage, stop, start nothing: the kubelet pulls the image; `pulumi up` restarts the controller
 *                      (Recreate) first and the components after it (the program's dependsOn)
 *   install            `pulumi config set --path svcops:deploy.live.version V`, `pulumi preview
 *                      --json` showing only the live components' changes, `pulumi up --target`
 *                      of exactly those; a later component finds its version installed
 *   status, errors     its pods Running and ready on the version; ERROR lines in their last lines
 *   configuration      the stack file's values (live-cluster-config.ts): the Pulumi program writes
 *                      the files the host steps write
 *   checks             pods, the pod template, the seed's endpoints by UUID through the
 *                      controller's Service, the declared checks through the Service and the pod
 *                      proxy (live-cluster-config.ts, controller-service.ts)
 */
import { errorMessage } from '../../core/errors.ts'
import { proofOf, type ImageProof } from '../../drivers/image-proof.ts'
import { describeCall, type PodFacts } from '../../drivers/kubernetes.ts'
import { pulumiArgv, readStackVersion } from '../../drivers/pulumi.ts'
import { ERROR_LEVELS, findLogErrors } from '../../drivers/services.ts'
import { LIVE_COMPONENTS, type LiveComponentName } from '../layout.ts'
import { CONFIG_STEPS, configDataSchema } from '../live-step-data.ts'
import { finishedData, Phase } from '../../runs/step.ts'
import type { LivePlatform, LiveScope } from '../live-platform.ts'
import { clusterCheckPlan, controllerThroughService, livePods } from './controller-service.ts'
import {
  backupStackValues,
  checkClusterComponent,
  checkClusterConfig,
  describeClusterCheck,
  describeClusterConfigCheck,
  describeClusterRestore,
  describeClusterSystemCheck,
  describeClusterWrite,
  describeStackBackup,
  restoreClusterConfig,
  verifyClusterFiles,
  verifyClusterSystem,
  writeClusterConfig,
  type ClusterRun,
} from './live-cluster-config.ts'
import { LIVE_VERSION_KEY, shownPulumi, type LiveCluster } from './live-cluster-handle.ts'
import { describeLiveClusterPreflight, liveClusterPreflight, previewLiveChange } from './live-preview.ts'
import { readPreviousImages, stackImageOf } from './previous-image.ts'
import { clusterPskRotation } from './psk-rotation.ts'

/** The images an earlier check of the run proved runnable, from its journaled facts (anything else ignored). */
function earlierProofs(earlier: Record<string, unknown> | undefined): Partial<Record<LiveComponentName, ImageProof>> {
  const images = earlier?.images
  if (!images || typeof images !== 'object') return {}
  const out: Partial<Record<LiveComponentName, ImageProof>> = {}
  for (const c of LIVE_COMPONENTS) {
    const p = proofOf((images as Record<string, unknown>)[c])
    if (p) out[c] = p
  }
  return out
}

/** The steps whose finished entry says the run changed pskRotation: writing the configuration, and putting it back in the rollback. */
const ROTATING_STEPS = [
  { id: CONFIG_STEPS.write, data: configDataSchema, phase: Phase.run },
  { id: CONFIG_STEPS.restore, data: configDataSchema, phase: Phase.rollback },
]

/** Log lines that count as errors (the product writes ERROR; FATAL for a crash). */
const ERROR_PATTERNS = ERROR_LEVELS

function showPod(p: PodFacts): string {
  return `${p.name} ${p.phase}${p.ready ? ' ready' : ' not ready'} ${p.version ?? '?'}${p.waiting ? ` ${p.waiting}` : ''}${p.restarts ? ` restarts=${p.restarts}` : ''}`
}

/** The platform of a live system on Kubernetes, for the run of `scope`. Nothing connects until used. */
export function openKubernetesLivePlatform(scope: LiveScope, cluster: LiveCluster): LivePlatform {
  const nothing = 'nothing: the kubelet pulls the image when the new pod starts (imagePullPolicy IfNotPresent)'
  // Whether the run changed pskRotation (the preview rule then lets the PSK's resources change):
  // read only from the steps that change it, their data's shape checked (the journal is kept where others write).
  const rotated = () => ROTATING_STEPS.some((step) => finishedData(scope.journal, step, { phase: step.phase })?.pskRotation !== undefined)
  const platform: LivePlatform = {
    where: cluster.namespace,
    // One unit per Deployment: its replicas are the pods `pulumi up` rolls, not svcops.
    units: LIVE_COMPONENTS.map((c) => ({ name: c, component: c, host: cluster.namespace })),
    connectTimeoutMs: (scope.live.connectTimeoutSeconds ?? 300) * 1000,
    close: () => cluster.close(),
    async installedVersion({ component: c }) {
      return (await cluster.kube(c).readDeployment()).version
    },
    // The image is the registry's business: the kubelet pulls it, and a missing tag shows as ImagePullBackOff in the check.
    assertAvailable: () => undefined,
    // Nothing is written where the system runs before the first change: no package is staged, the stack file's values go to the journal.
    readRoom: () => Promise.resolve([]),
    describeRoom: () => [
      "nothing: no package is staged (the kubelet pulls the images) and the stack file's values are kept in the run's journal",
    ],
    stage: () => Promise.resolve({ skipped: 'nothing to stage: the kubelet pulls the image when the new pod starts' }),
    async install(_c, version) {
      const file = cluster.stack().stackFile
      if (readStackVersion(file, LIVE_VERSION_KEY) !== version) await cluster.pulumi().setVersion(LIVE_VERSION_KEY, version)
      const targets = await previewLiveChange(cluster, scope.env, rotated())
      await cluster.pulumi().up(targets)
    },
    stop: () => Promise.resolve(),
    start: () => Promise.resolve(undefined),
    async status({ component: c }) {
      const d = await cluster.kube(c).readDeployment()
      const pods = await livePods(cluster, c)
      const running = pods.length > 0 && pods.every((p) => p.phase === 'Running' && p.ready && p.version === d.version)
      return {
        running,
        status: `${d.readyReplicas}/${d.replicas} ready on ${d.version ?? '?'}${pods.length ? `: ${pods.map(showPod).join(', ')}` : ': no pod'}`,
      }
    },
    async errorLines({ component: c }) {
      const errors: string[] = []
      for (const p of await livePods(cluster, c))
        errors.push(...findLogErrors(await cluster.kube(c).podLog(p.name, cluster.logLines), ERROR_PATTERNS).map((l) => `${p.name}: ${l}`))
      return errors
    },
    describe(call, { component: c }, version) {
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

    describePreflight: () => ({ versionCheck: '', more: describeLiveClusterPreflight(cluster, scope.env) }),
    // The CLI, the stack, the API, the rights, and a preview without anybody else's change.
    checkPreflight: async (installed) => ({ cluster: await liveClusterPreflight(cluster, scope.env, installed) }),

    checkConfig: (_from, to) => Promise.resolve(checkClusterConfig(run, to)),
    describeConfigCheck: (from, to) => describeClusterConfigCheck(run, from, to),
    backupConfig: () => Promise.resolve(backupStackValues(run)),
    describeConfigBackup: () => describeStackBackup(run),
    writeConfig: (from, to) => writeClusterConfig(run, from, to),
    describeConfigWrite: (from, to) => Promise.resolve(describeClusterWrite(run, from, to)),
    restoreConfig: (backup) => restoreClusterConfig(run, backup),
    describeConfigRestore: (backup) => describeClusterRestore(run, backup),

    async findRollbackMissing(previous, backup, earlier) {
      // The API reachable (each Deployment read), the stack file's values the run kept, and the image of each release gone back to.
      const missing: string[] = []
      for (const c of LIVE_COMPONENTS) {
        try {
          await cluster.kube(c).readDeployment()
        } catch (error) {
          missing.push(`the Deployment of ${c} cannot be read: ${errorMessage(error).replace(/\.$/, '')}`)
        }
      }
      if (!backup) missing.push("the run's copy of the stack file's values is not in its journal")
      if (missing.length) return { missing: [...new Set(missing)] }
      const images = await readPreviousImages(cluster, scope.env, previous, earlierProofs(earlier))
      return { missing: images.missing, facts: { images: images.proven }, unproven: images.unproven }
    },
    describeRollbackNeeds: (previous) => [
      `the Kubernetes API: every live Deployment readable in ${cluster.namespace}`,
      "the run's copy of the stack file's values in its journal",
      ...(Object.entries(previous) as [LiveComponentName, string][]).map(
        ([c, v]) =>
          `${stackImageOf(scope.env, c, v) ?? `${c} ${v}`}: ${describeCall.pods(cluster.targets[c])}; no pod of it in ErrImagePull or ImagePullBackOff, one Running with an imageID (now, or at the upgrade's check)`,
      ),
    ],

    checkComponent: (u, version, options) => checkClusterComponent(run, u.component, version, options.waitMs),
    describeCheck: (u, version) => describeClusterCheck(run, u.component, version),
    checkSystem: async (version) => ({ checks: await verifyClusterSystem(run, version), data: {} }),
    describeSystemCheck: (version) => describeClusterSystemCheck(run, version),
    verifyConfig: (version) => Promise.resolve(verifyClusterFiles(run, version)),
    controllerStatus: (version) => controllerThroughService(cluster, clusterCheckPlan(scope.live, scope.product), version),
    get psk() {
      return clusterPskRotation(run)
    },
  }
  const run: ClusterRun = { ...scope, cluster, platform }
  return platform
}
