/**
 * The recording service on Kubernetes (`recording.platform: kubernetes`): its one target is the
 * Deployment of this project's Pulumi program (recording-deployment.ts), and each call of the
 * platform is the seed's step done there:
 *
 *   stop          `heldReplicas` 0 in the stack file (`pulumi config set --path`), then `pulumi up
 *                 --target` of the Deployment; wait until no pod is left
 *   install       the version set in the stack file: `pulumi config set --path KEY VERSION`
 *   review-config `pulumi preview --json`: no change but the version (the refusal lists the rest)
 *   start         with more than one replica, `heldReplicas` 1 and `pulumi up --target` of exactly
 *                 what the preview showed (the Recreate strategy: one new pod, which migrates alone);
 *                 then `heldReplicas` removed (`pulumi config rm --path`) and `pulumi up --target`
 *                 again: the configured replicas
 *   status, logs  every pod through the API: Running, ready, on the Deployment's version; their last lines
 *   record        the stack file, which must hold the version the Deployment runs
 *   rollback-ready the cluster, the stack free, every right; the image a rollback asks for
 *                 (`deploy.recording.image`:previous version) proven pulled by a pod with an
 *                 `imageID`, now or at the upgrade's check (src/drivers/image-proof.ts, as the live
 *                 system's check); a pod of it in ImagePullBackOff refuses
 *
 * svcops writes no field of what the program manages: the replicas, like the version, are the
 * stack file's, applied by `pulumi up` (the Deployment has one writer of `spec.replicas`: its own
 * Pulumi resource). The environment's lock in the database is the run's only lock: a Deployment
 * has no lock file.
 */
import type { Environment } from '../../config/schema.ts'
import { errorMessage } from '../../core/errors.ts'
import { checkClusterAccess } from '../../drivers/cluster-access.ts'
import { judgeImage, proofOf } from '../../drivers/image-proof.ts'
import { describeCall, neededRights, showRight, type PodFacts } from '../../drivers/kubernetes.ts'
import {
  HELD_REPLICAS_KEY,
  pulumiArgv,
  readStackValue,
  readStackVersion,
  refuseForeignChanges,
  showPulumi,
  sayUnready,
  versionOnlyChanges,
} from '../../drivers/pulumi.ts'
import { refuseOutsideEdits } from '../../drivers/pulumi-drift.ts'
import { HostFailure } from '../../runs/engine.ts'
import type { RecordingSettings } from '../recording-settings.ts'
import type { RecordingPlatform, RecordingTarget, TargetReadiness, TargetStatus } from '../recording-platform.ts'
import { openRecordingCluster, type RecordingCluster } from './recording-deployment.ts'

/** Waiting reasons that will not heal by themselves. */
const STUCK = /CrashLoopBackOff|ImagePullBackOff|ErrImagePull|CreateContainerConfigError|InvalidImageName/

/** The Deployment of the environment as the platform of its recording service. Nothing connects until used. */
export function openKubernetesPlatform(env: Environment, settings: RecordingSettings): RecordingPlatform & { cluster: RecordingCluster } {
  const c = openRecordingCluster(env)
  const deployment: RecordingTarget = {
    name: c.target.deployment,
    canary: true,
    // The Service's address follows the cluster's: the port-forward's once it is open.
    get url() {
      return c.url
    },
  }
  const seconds = Math.round(settings.healthTimeoutMs / 1000)
  /** A pulumi command as shown, for the dry run. */
  const shown = (argv: string[]): string => {
    try {
      return showPulumi(c.stack(), argv)
    } catch (error) {
      return `${argv.join(' ')}   (refused: ${errorMessage(error)})`
    }
  }
  const rights = () => neededRights(c.target, { portForward: c.reach === 'port-forward', ...(c.stackMap ? { stackMap: c.stackMap } : {}) })
  /** `pulumi preview` after the run set the stack: its changes are the version's, and the replicas the stack holds. */
  const versionPreview = async (t: RecordingTarget, step: 'stop' | 'review-config' | 'start'): Promise<string[]> => {
    const preview = versionOnlyChanges(await c.pulumi().preview(), c.names, { ownReplicas: true })
    if (preview.other.length)
      throw new HostFailure(
        t.name,
        step,
        `pulumi preview of stack '${env.name}' shows change(s) besides the recording service's version: ${preview.other.join('; ')}.`,
      )
    return preview.targets
  }
  /** The stack's `heldReplicas` set to `held` (removed: undefined), then `pulumi up --target` of what the preview shows. */
  const applyHeld = async (t: RecordingTarget, step: 'stop' | 'start', held: number | undefined): Promise<string[]> => {
    await c.pulumi().setNumber(HELD_REPLICAS_KEY, held)
    const targets = await versionPreview(t, step)
    await c.pulumi().up(targets)
    return targets
  }
  const upArgv = (): string => {
    try {
      return showPulumi(c.stack(), pulumiArgv.up(c.stack(), ['URN', '...']))
    } catch (error) {
      return `pulumi up --target URN ...   (refused: ${errorMessage(error)})`
    }
  }
  const livePods = async (): Promise<PodFacts[]> => (await c.kube().listPods()).filter((p) => !p.deleting)
  /** The image the stack file names at `version`: what the rollback's `pulumi up` asks for. */
  const imageOf = (version: string): string => `${env.deploy?.recording.image ?? '(svcops:deploy.recording.image)'}:${version}`
  /**
   * Whether the image of `version` is proven pulled (src/drivers/image-proof.ts): a pod running it
   * with an imageID now, or at the upgrade's check (`earlier`, as journaled); refused when a pod of it
   * cannot pull it, or when the Deployment runs that version from another repository.
   */
  const readRollbackImage = async (version: string, earlier: Record<string, unknown> | undefined): Promise<TargetReadiness> => {
    const reference = imageOf(version)
    let running: string | undefined
    let pods: PodFacts[]
    try {
      running = (await c.kube().readDeployment()).image
      pods = await livePods()
    } catch (error) {
      return { missing: [`the Deployment ${c.target.deployment} cannot be read: ${errorMessage(error).replace(/\.$/, '')}`] }
    }
    const found = judgeImage(reference, version, running, pods, proofOf(earlier?.image))
    if (found.verdict === 'proven') return { missing: [], proven: { image: found.proof } }
    if (found.verdict === 'cannot-pull') return { missing: [`the image ${reference} cannot be pulled: ${found.why}`] }
    if (found.verdict === 'other-repository')
      return { missing: [`the Deployment ${c.target.deployment} runs ${found.running}, not the stack file's ${reference}`] }
    return {
      missing: [],
      unproven: [
        `no pod of the Deployment ${c.target.deployment} was seen running ${reference} with a pulled image (an imageID) during this run`,
      ],
    }
  }
  const podLogs = async (): Promise<string[]> => {
    const lines: string[] = []
    for (const p of await livePods()) lines.push(...(await c.kube().podLog(p.name, settings.logLines)).map((l) => `${p.name}: ${l}`))
    return lines
  }

  return {
    cluster: c,
    name: 'Kubernetes',
    targets: [deployment],
    pollMs: 1000,
    label: (t) => `the Deployment ${t.name}`,
    connect: () => c.connect(), // outside the cluster: the port-forward to the Service
    close: () => c.close(),
    // The stack file is the record: its copy in the run folder outlives a job's pod.
    records: () => [env.file],

    lockTargets: () => Promise.resolve(),
    unlockTargets: () => Promise.resolve(),
    describeLocks: () => '',

    describePreflight: () => {
      const needed = rights()
      return [
        `the Pulumi CLI and its version: ${shown(pulumiArgv.version())}`,
        `the stack '${env.name}' exists and no update of it runs: ${shown(pulumiArgv.stacks())}`,
        `the Kubernetes API with context ${c.target.context ?? '(the kubeconfig’s current one)'}: ${describeCall.version()}; ${describeCall.deployment(c.target)}`,
        `this identity's rights in namespace ${c.target.namespace}: ${needed.map(showRight).join('; ')} — one ${describeCall.access(needed[0] ?? { group: '', resource: '', verb: '', why: '' }).replace(/ \(.*$/, '')} each`,
        `no change but the recording service's version: ${shown(pulumiArgv.preview(c.stack()))}; refused, listing every other change, and a field the program owns that somebody changed outside svcops (kubectl edit), naming the manager`,
      ]
    },
    async checkPreflight() {
      const cli = c.pulumi()
      const { pulumiVersion, kubernetes } = await checkClusterAccess(cli, c.kube(), {
        stack: env.name,
        rights: rights(),
        grant: 'Grant them (docs/deploy.md, RBAC: the scheduled upgrade’s Role lists them) and run again.',
      })
      // A stack a killed run left held (stopped) shows no replicas change; one it holds is still its own.
      const held = readStackValue(c.stack().stackFile, HELD_REPLICAS_KEY) !== undefined
      const preview = versionOnlyChanges(await cli.preview(), c.names, { ownReplicas: held })
      // Somebody's edit of a field the program owns stops the run before it starts (docs/deploy.md).
      refuseOutsideEdits(env.name, preview.outside)
      refuseForeignChanges(
        env.name,
        preview.other,
        'pulumi preview: no change but the version',
        "the recording service's version, which an upgrade does not apply",
      )
      sayUnready(env.name, preview.unready, "the recording service's")
      return { pulumiVersion, kubernetes, ...(preview.unready.length ? { notReady: preview.unready } : {}) }
    },
    async findMissing(_t, version, earlier) {
      // The cluster reachable, the stack free, every right the run uses; then the image the rollback's `pulumi up` asks for.
      try {
        await checkClusterAccess(c.pulumi(), c.kube(), { stack: env.name, rights: rights(), grant: 'Grant them (docs/deploy.md).' })
      } catch (error) {
        return { missing: [errorMessage(error).replace(/\.$/, '')] }
      }
      return readRollbackImage(version, earlier)
    },
    describeFindMissing: (_t, version) => [
      `the Kubernetes API with context ${c.target.context ?? '(the kubeconfig’s current one)'}, the stack '${env.name}' free and this identity's rights: ${rights().map(showRight).join('; ')}`,
      `${imageOf(version)}: ${describeCall.deployment(c.target)}; ${describeCall.pods(c.target)}; no pod of it in ErrImagePull or ImagePullBackOff, one Running with an imageID (now, or at the upgrade's check)`,
    ],
    describeVersionRead: () => [],
    async versions() {
      const d = await c.kube().readDeployment()
      return d.version ? { [deployment.name]: d.version } : {}
    },
    versionRecord: () => ({
      what: 'the stack file',
      file: c.stack().stackFile,
      key: c.versionKey,
      version: readStackVersion(c.stack().stackFile, c.versionKey) ?? null,
    }),
    describeVersionRecord: () => [`the stack file's ${c.versionKey} holds the target version (the stack file is the record)`],

    stage: () => Promise.resolve({ skipped: 'the kubelet pulls the image when the new pod starts' }),
    describeStage: () => ['nothing to stage: the kubelet pulls the image when the new pod starts (imagePullPolicy IfNotPresent)'],
    async stop(t) {
      const kube = c.kube()
      const targets = await applyHeld(t, 'stop', 0)
      const deadline = Date.now() + settings.healthTimeoutMs
      for (;;) {
        const pods = await kube.listPods()
        if (pods.length === 0) break
        if (Date.now() >= deadline)
          throw new HostFailure(
            t.name,
            'stop',
            `${pods.length} pod(s) of ${t.name} are still there after pulumi up of ${HELD_REPLICAS_KEY} 0: ${pods.map((p) => p.name).join(', ')}.`,
          )
        await new Promise((r) => setTimeout(r, 1000))
      }
      return { changed: [`pulumi up of ${HELD_REPLICAS_KEY} = 0 (${targets.length} resource(s)): ${t.name} has no pod`] }
    },
    async install(t, version) {
      const file = c.stack().stackFile
      const current = readStackVersion(file, c.versionKey)
      if (current === version) return { skipped: `${file} already holds ${c.versionKey} = ${version}`, data: { from: current } }
      await c.pulumi().setVersion(c.versionKey, version)
      return {
        changed: [`set ${c.versionKey} = ${version} in ${file} (was ${current ?? 'unset'}) for ${t.name}`],
        data: { from: current ?? null, to: version },
      }
    },
    describeInstall: (_t, version) =>
      Promise.resolve([
        `set ${c.versionKey} to ${version} in the stack file: ${shown(pulumiArgv.configSet(c.stack(), c.versionKey, version))}`,
      ]),
    async reviewConfig(t) {
      return { data: { targets: await versionPreview(t, 'review-config') } }
    },
    async start(t) {
      const startedAt = new Date().toISOString()
      const want = readStackVersion(c.stack().stackFile, c.versionKey)
      const targets: string[] = []
      try {
        // Several replicas: the new version's first pod starts alone (it migrates), and pulumi up waits until it is ready.
        if (c.replicas > 1) targets.push(...(await applyHeld(t, 'start', 1)))
        targets.push(...(await applyHeld(t, 'start', undefined)))
      } catch (error) {
        if (error instanceof HostFailure) throw error
        // The stack file already holds the new version: say where the cluster is, so the report never hides a disagreement.
        const now = await c
          .kube()
          .readDeployment()
          .then((x) => x.version ?? 'no known version')
          .catch(() => 'an unknown version')
        throw new HostFailure(
          t.name,
          'start',
          `pulumi up failed (${errorMessage(error).replace(/\.$/, '')}); the stack file holds ${c.versionKey} = ${want ?? 'nothing'}, ${t.name} runs ${now}.`,
        )
      }
      const d = await c.kube().readDeployment()
      if (d.version !== want)
        throw new HostFailure(
          t.name,
          'start',
          `After pulumi up, ${t.name} runs ${d.version ?? 'no known version'}; the stack file holds ${want ?? 'none'}.`,
        )
      if (d.replicas !== c.replicas)
        throw new HostFailure(
          t.name,
          'start',
          `After pulumi up, ${t.name} has ${d.replicas} replica(s); the stack configures ${c.replicas}.`,
        )
      const urns = [...new Set(targets)]
      return {
        changed: [`pulumi up of ${urns.length} resource(s): ${t.name} on ${d.version}, ${d.replicas} replica(s)`],
        data: { startedAt, targets: urns },
      }
    },
    async status(): Promise<TargetStatus> {
      const d = await c.kube().readDeployment()
      const pods = await livePods()
      const running = pods.length > 0 && pods.every((p) => p.phase === 'Running' && p.ready && p.version === d.version)
      const gaveUp = pods.some((p) => !!p.waiting && STUCK.test(p.waiting))
      const status = `${d.readyReplicas}/${d.replicas} ready: ${pods.map((p) => `${p.name} ${p.phase}${p.ready ? ' ready' : ''}${p.waiting ? ` ${p.waiting}` : ''}`).join(', ') || 'no pod'}`
      // Pods being created or started are on their way up; only a stuck one will not heal.
      return { running, status, gaveUp, starting: !running && !gaveUp }
    },
    logsSinceStart: () => podLogs(),
    recentLogs: () => podLogs(),
    describe(call, t) {
      const rule = `only ${c.names.deployment} (image, version label, replicas)${c.stackMap ? ` and ${c.stackMap} (data)` : ''} may change; anything else fails the step`
      if (call === 'stop')
        return [
          `hold the Deployment at 0 replicas in the stack file: ${shown(pulumiArgv.configSet(c.stack(), HELD_REPLICAS_KEY, '0'))}`,
          `${shown(pulumiArgv.preview(c.stack()))}: ${rule}`,
          `${upArgv()} with a --target per changed URN: the program sets the Deployment's replicas to 0`,
          `${describeCall.pods(c.target)} until no pod is left, at most ${seconds} s`,
        ]
      if (call === 'review-config') return [`${shown(pulumiArgv.preview(c.stack()))}: ${rule}`]
      if (call === 'start')
        return [
          ...(c.replicas > 1
            ? [
                `hold the Deployment at 1 replica: ${shown(pulumiArgv.configSet(c.stack(), HELD_REPLICAS_KEY, '1'))}`,
                `${shown(pulumiArgv.preview(c.stack()))} (same rule), then ${upArgv()} with a --target per changed URN: ` +
                  'Recreate stops every old pod, one new pod starts and migrates; pulumi up waits until it is ready',
              ]
            : []),
          `release the hold: ${shown(pulumiArgv.configRm(c.stack(), HELD_REPLICAS_KEY))}`,
          `${shown(pulumiArgv.preview(c.stack()))} (same rule), then ${upArgv()} with a --target per changed URN: ` +
            `the Deployment runs the stack's ${c.replicas} replica(s)`,
          describeCall.deployment(c.target),
        ]
      if (call === 'wait-healthy')
        return [
          `GET ${c.reach === 'service' ? t.url : 'http://127.0.0.1:PORT (port-forward)'}/ until it answers, at most ${seconds} s; ` +
            `${describeCall.pods(c.target)}: a pod in CrashLoopBackOff or ImagePullBackOff fails it`,
        ]
      return [
        describeCall.deployment(c.target),
        `${describeCall.pods(c.target)}: every pod Running, ready, on the Deployment's version`,
        `${describeCall.log(c.target, settings.logLines)}; fail on a log record whose level is ${settings.errorPatterns.join(' | ')} (the level field only)`,
        `the stack file's ${c.versionKey} equals the Deployment's version`,
      ]
    },
  }
}
