/**
 * The seed's steps on the Kubernetes platform, behind the same step declarations as on hosts
 * (host-steps.ts and preflight.ts call these when the context has a cluster), so the playbooks read
 * the same:
 *
 *   stop          the Deployment's scale to 0 through the API; wait until no pod is left
 *   install       the version set in the stack file: `pulumi config set --path KEY VERSION`
 *   review-config `pulumi preview --json`: no change but the version (the refusal lists the rest)
 *   start         `pulumi up --target` of exactly what the preview showed: the Recreate strategy,
 *                 one replica that migrates, then the program's scale-up patch to the configured count
 *   wait-healthy  GET / through the Service; a pod stuck in CrashLoopBackOff fails it early
 *   check-logs    status and the last log lines of every pod through the API; the stack file and
 *                 the Deployment agree on the version
 */
import { errorMessage } from '../../core/errors.ts'
import { checkClusterAccess } from '../../drivers/cluster-access.ts'
import { describeCall, neededRights, showRight, type PodFacts } from '../../drivers/kubernetes.ts'
import { pulumiArgv, readStackVersion, refuseForeignChanges, showPulumi, versionOnlyChanges } from '../../drivers/pulumi.ts'
import { findLogErrors } from '../../drivers/services.ts'
import { HostFailure } from '../../runs/engine.ts'
import type { StepResult } from '../../runs/step.ts'
import type { RecordingCluster } from './recording-deployment.ts'
import type { HostHandle, RecordingContext } from '../recording-context.ts'

type Ctx = RecordingContext & { cluster: RecordingCluster }

/** The context's cluster, when the environment is on the Kubernetes platform. */
export function clusterOf(ctx: RecordingContext): Ctx | undefined {
  return ctx.cluster ? (ctx as Ctx) : undefined
}

/** A pulumi command as shown, for the dry run. */
function shown(ctx: Ctx, argv: string[]): string {
  try {
    return showPulumi(ctx.cluster.stack(), argv)
  } catch (error) {
    return `${argv.join(' ')}   (refused: ${errorMessage(error)})`
  }
}

// ---- preflight ----

/** What the Kubernetes preflight checks, in order, for the dry run. */
export function describeClusterPreflight(ctx: Ctx): string[] {
  const c = ctx.cluster
  const rights = neededRights(c.target, { portForward: c.reach === 'port-forward', ...(c.stackMap ? { stackMap: c.stackMap } : {}) })
  return [
    `the Pulumi CLI and its version: ${shown(ctx, pulumiArgv.version())}`,
    `the stack '${ctx.env.name}' exists and no update of it runs: ${shown(ctx, pulumiArgv.stacks())}`,
    `the Kubernetes API with context ${c.target.context ?? '(the kubeconfig’s current one)'}: ${describeCall.version()}; ${describeCall.deployment(c.target)}`,
    `this identity's rights in namespace ${c.target.namespace}: ${rights.map(showRight).join('; ')} — one ${describeCall.access(rights[0] ?? { group: '', resource: '', verb: '', why: '' }).replace(/ \(.*$/, '')} each`,
    `no change but the recording service's version: ${shown(ctx, pulumiArgv.preview(c.stack()))}; refused, listing every other change`,
  ]
}

/** The Kubernetes checks of the preflight: CLI, stack, API, rights, and a preview with no foreign change. */
export async function clusterPreflight(ctx: Ctx): Promise<Record<string, unknown>> {
  const c = ctx.cluster
  const cli = c.pulumi()
  const rights = neededRights(c.target, { portForward: c.reach === 'port-forward', ...(c.stackMap ? { stackMap: c.stackMap } : {}) })
  const { pulumiVersion, kubernetes } = await checkClusterAccess(cli, c.kube(), {
    stack: ctx.env.name,
    rights,
    grant: 'Grant them (docs/deploy.md, RBAC: the scheduled upgrade’s Role lists them) and run again.',
  })
  const preview = versionOnlyChanges(await cli.preview(), c.names)
  refuseForeignChanges(
    ctx.env.name,
    preview.other,
    'pulumi preview: no change but the version',
    "the recording service's version, which an upgrade does not apply",
  )
  return { pulumiVersion, kubernetes }
}

/** The version the Deployment runs, keyed by its handle's name; empty when unknown (dry run without the API). */
export async function clusterVersions(ctx: Ctx): Promise<Record<string, string>> {
  const d = await ctx.cluster.kube().readDeployment()
  return d.version ? { [ctx.cluster.target.deployment]: d.version } : {}
}

// ---- the seed's steps ----

export const clusterStop = {
  describe: (ctx: Ctx): string[] => [
    describeCall.scale(ctx.cluster.target, 0),
    `${describeCall.pods(ctx.cluster.target)} until no pod is left, at most ${Math.round(ctx.settings.healthTimeoutMs / 1000)} s`,
  ],
  async act(ctx: Ctx, h: HostHandle): Promise<StepResult> {
    const kube = ctx.cluster.kube()
    await kube.scale(0)
    const deadline = Date.now() + ctx.settings.healthTimeoutMs
    for (;;) {
      const pods = await kube.listPods()
      if (pods.length === 0) break
      if (Date.now() >= deadline)
        throw new HostFailure(
          h.name,
          'stop',
          `${pods.length} pod(s) of ${h.name} are still there after the scale to 0: ${pods.map((p) => p.name).join(', ')}.`,
        )
      await new Promise((r) => setTimeout(r, 1000))
    }
    return { changed: [`scaled ${h.name} to 0 replicas`] }
  },
}

export const clusterInstall = {
  describe: (ctx: Ctx, version: string): string[] => [
    `set ${ctx.cluster.versionKey} to ${version} in the stack file: ${shown(ctx, pulumiArgv.configSet(ctx.cluster.stack(), ctx.cluster.versionKey, version))}`,
  ],
  async act(ctx: Ctx, h: HostHandle, version: string): Promise<StepResult> {
    const c = ctx.cluster
    const file = c.stack().stackFile
    const current = readStackVersion(file, c.versionKey)
    if (current === version) return { skipped: `${file} already holds ${c.versionKey} = ${version}`, data: { from: current } }
    await c.pulumi().setVersion(c.versionKey, version)
    return {
      changed: [`set ${c.versionKey} = ${version} in ${file} (was ${current ?? 'unset'}) for ${h.name}`],
      data: { from: current ?? null, to: version },
    }
  },
}

/** `pulumi preview` after the version is set: its changes are the version's, and the stop's replicas. */
async function versionPreview(ctx: Ctx, h: HostHandle, step: 'review-config' | 'start'): Promise<string[]> {
  const c = ctx.cluster
  const preview = versionOnlyChanges(await c.pulumi().preview(), c.names, { afterStop: true })
  if (preview.other.length)
    throw new HostFailure(
      h.name,
      step,
      `pulumi preview of stack '${ctx.env.name}' shows change(s) besides the recording service's version: ${preview.other.join('; ')}.`,
    )
  return preview.targets
}

export const clusterReview = {
  describe: (ctx: Ctx): string[] => [
    `${shown(ctx, pulumiArgv.preview(ctx.cluster.stack()))}: only ${ctx.cluster.names.deployment} (image, version label, replicas), ${ctx.cluster.names.scaleUp}` +
      `${ctx.cluster.stackMap ? ` and ${ctx.cluster.stackMap} (data)` : ''} may change; anything else fails the step`,
  ],
  async act(ctx: Ctx, h: HostHandle): Promise<StepResult> {
    const targets = await versionPreview(ctx, h, 'review-config')
    return { data: { targets } }
  },
}

export const clusterStart = {
  describe: (ctx: Ctx): string[] => [
    `${shown(ctx, pulumiArgv.preview(ctx.cluster.stack()))} again (same rule), then`,
    `${shown(ctx, pulumiArgv.up(ctx.cluster.stack(), ['URN', '...']))} with a --target per changed URN: Recreate stops every old pod, ` +
      `one new pod starts and migrates, then ${ctx.cluster.names.scaleUp} sets ${ctx.cluster.replicas} replica(s)`,
    describeCall.deployment(ctx.cluster.target),
  ],
  async act(ctx: Ctx, h: HostHandle): Promise<StepResult> {
    const c = ctx.cluster
    const startedAt = new Date().toISOString()
    const targets = await versionPreview(ctx, h, 'start')
    const want = readStackVersion(c.stack().stackFile, c.versionKey)
    try {
      await c.pulumi().up(targets)
    } catch (error) {
      // The stack file already holds the new version: say where the cluster is, so the report never hides a disagreement.
      const now = await c
        .kube()
        .readDeployment()
        .then((x) => x.version ?? 'no known version')
        .catch(() => 'an unknown version')
      throw new HostFailure(
        h.name,
        'start',
        `pulumi up failed (${errorMessage(error).replace(/\.$/, '')}); the stack file holds ${c.versionKey} = ${want ?? 'nothing'}, ${h.name} runs ${now}.`,
      )
    }
    const d = await c.kube().readDeployment()
    if (d.version !== want)
      throw new HostFailure(
        h.name,
        'start',
        `After pulumi up, ${h.name} runs ${d.version ?? 'no known version'}; the stack file holds ${want ?? 'none'}.`,
      )
    if (d.replicas === 0) throw new HostFailure(h.name, 'start', `After pulumi up, ${h.name} still has 0 replicas.`)
    return {
      changed: [`pulumi up of ${targets.length} resource(s): ${h.name} on ${d.version}, ${d.replicas} replica(s)`],
      data: { startedAt, targets },
    }
  },
}

/** Waiting reasons that will not heal by themselves. */
const STUCK = /CrashLoopBackOff|ImagePullBackOff|ErrImagePull|CreateContainerConfigError|InvalidImageName/

export const clusterWaitHealthy = {
  describe: (ctx: Ctx, h: HostHandle): string[] => [
    `GET ${ctx.cluster.reach === 'service' ? h.url : 'http://127.0.0.1:PORT (port-forward)'}/ until it answers, at most ${Math.round(ctx.settings.healthTimeoutMs / 1000)} s; ` +
      `${describeCall.pods(ctx.cluster.target)}: a pod in CrashLoopBackOff or ImagePullBackOff fails it`,
  ],
  async act(ctx: Ctx, h: HostHandle): Promise<StepResult> {
    const deadline = Date.now() + ctx.settings.healthTimeoutMs
    const begun = Date.now()
    let lastError = 'no answer yet'
    for (let attempt = 1; ; attempt++) {
      try {
        await ctx.deps.content.health(h.url)
        return { data: { healthyAfterMs: Date.now() - begun, attempts: attempt } }
      } catch (error) {
        lastError = errorMessage(error)
      }
      const stuck = (await ctx.cluster.kube().listPods()).find((p) => p.waiting && STUCK.test(p.waiting))
      if (stuck) throw new HostFailure(h.name, 'wait-healthy', `Pod ${stuck.name} of ${h.name} is ${stuck.waiting} after the start.`)
      if (Date.now() >= deadline)
        throw new HostFailure(
          h.name,
          'wait-healthy',
          `${h.name} did not answer GET / within ${Math.round(ctx.settings.healthTimeoutMs / 1000)} s: ${lastError.replace(/\.$/, '')}.`,
        )
      await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, deadline - Date.now()))))
    }
  },
}

export const clusterCheckLogs = {
  describe: (ctx: Ctx): string[] => [
    describeCall.deployment(ctx.cluster.target),
    `${describeCall.pods(ctx.cluster.target)}: every pod Running, ready, on the Deployment's version`,
    `${describeCall.log(ctx.cluster.target, ctx.settings.logLines)}; fail on ${ctx.settings.errorPatterns.join(' | ')}`,
    `the stack file's ${ctx.cluster.versionKey} equals the Deployment's version`,
  ],
  async act(ctx: Ctx, h: HostHandle): Promise<StepResult> {
    const c = ctx.cluster
    const kube = c.kube()
    const d = await kube.readDeployment()
    const pods = (await kube.listPods()).filter((p) => !p.deleting)
    const bad = pods.filter((p) => p.phase !== 'Running' || !p.ready || p.version !== d.version)
    const status = pods.map(showPod).join(', ')
    if (pods.length === 0 || bad.length)
      throw new HostFailure(
        h.name,
        'check-logs',
        `${h.name} on ${d.version ?? '?'}: ${pods.length ? `not every pod is ready: ${bad.map(showPod).join(', ')}` : 'no pod'}.`,
      )
    const lines: Record<string, string[]> = {}
    for (const p of pods) lines[p.name] = await kube.podLog(p.name, ctx.settings.logLines)
    const errors = Object.entries(lines).flatMap(([pod, l]) => findLogErrors(l, ctx.settings.errorPatterns).map((e) => `${pod}: ${e}`))
    if (errors.length)
      throw new HostFailure(
        h.name,
        'check-logs',
        `The logs of ${h.name} have ${errors.length} error line(s) since the start, first: ${errors[0]}`,
      )
    const recorded = readStackVersion(c.stack().stackFile, c.versionKey)
    if (recorded !== d.version)
      throw new HostFailure(
        h.name,
        'check-logs',
        `The stack file ${c.stack().stackFile} holds ${c.versionKey} = ${recorded ?? 'nothing'}, but ${h.name} runs ${d.version ?? 'no known version'}.`,
      )
    return {
      data: {
        status,
        lastLines: Object.values(lines).flatMap((l) => l.slice(-10)),
        stackFile: { file: c.stack().stackFile, key: c.versionKey, version: recorded ?? null, deployment: d.version ?? null },
      },
    }
  },
}

function showPod(p: PodFacts): string {
  return `${p.name} ${p.phase}${p.ready ? ' ready' : ' not ready'} ${p.version ?? '?'}${p.waiting ? ` ${p.waiting}` : ''}${p.restarts ? ` restarts=${p.restarts}` : ''}`
}
