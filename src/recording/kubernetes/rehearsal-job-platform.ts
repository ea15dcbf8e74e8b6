/**
 * The rehearsal's target on Kubernetes (`recording.platform: kubernetes`): the Job of
 * rehearsal-job.ts, driven through the recording platform's calls so that the rehearsal runs the
 * upgrade's own steps on it (playbooks/rehearse.ts), as on a rehearsal host:
 *
 *   connect       this identity's rights for the Job (SelfSubjectAccessReview each), refused in one
 *                 sentence listing the missing ones; a local port forwarded to the Job's pod
 *   stop          the Job deleted (its pod with it); wait until no pod of it is left
 *   install       the release the next start runs (nothing is written: the Job names its image)
 *   review-config the Job rendered from the Deployment's pod template as it is now
 *   start         the Job created: V's image against the scratch database; its migrations run there
 *   status, logs  the Job's pod through the API: Running and ready, or failed (its log lines)
 *
 * Production's Deployment is only read (its pod template). The Job's pod carries labels no
 * Service of the program selects, and reaches nothing but what any pod of the namespace may.
 */
import type { Environment } from '../../config/schema.ts'
import { requireSection } from '../../config/load.ts'
import { OperationError, errorMessage } from '../../core/errors.ts'
import { events } from '../../core/events.ts'
import { describeCall, KubernetesDriver, showRight, type PodFacts } from '../../drivers/kubernetes.ts'
import { HostFailure } from '../../runs/engine.ts'
import type { RecordingSettings } from '../recording-settings.ts'
import type { RecordingPlatform, RecordingTarget, TargetStatus } from '../recording-platform.ts'
import { openRecordingCluster } from './recording-deployment.ts'
import {
  describeJobCall,
  rehearsalJob,
  rehearsalJobName,
  rehearsalLabels,
  rehearsalRights,
  rehearsalTarget,
  RehearsalJobApi,
} from './rehearsal-job.ts'
import { readEgressLimits } from './rehearsal-network.ts'

/** Waiting reasons that will not heal by themselves. */
const STUCK = /CrashLoopBackOff|ImagePullBackOff|ErrImagePull|CreateContainerConfigError|InvalidImageName/

/**
 * Why the Job's timings cannot stand for production's: its recordings on an empty directory (the
 * stack names no claim holding a copy), where listing and writing recordings is not what
 * production's pods do on theirs.
 */
export function rehearsalJobLimits(production: Environment): string[] {
  return production.recording?.rehearsal?.claim
    ? []
    : [
        "the rehearsal's Job has its recordings on an empty directory (recording.rehearsal.claim names no copy of the recordings storage), so its content checks and timings are not production's",
      ]
}

/** The rehearsal's Job of `production`'s recording service as a recording platform, for run `runId`. */
export function openRehearsalJobPlatform(production: Environment, settings: RecordingSettings, runId: string): RecordingPlatform {
  const c = openRecordingCluster(production)
  const rec = requireSection(production, 'recording')
  const target = rehearsalTarget(production, c.target)
  const name = rehearsalJobName(production)
  const image = production.deploy?.recording.image ?? ''
  const databaseVariable = `${production.product.prefix.toUpperCase()}_DB_NAME`
  const database = rec.rehearsal?.database ?? ''
  const claim = rec.rehearsal?.claim
  let kube: KubernetesDriver | undefined
  let api: RehearsalJobApi | undefined
  let forward: { url: string; reset(): void; close(): Promise<void> } | undefined
  let version: string | undefined
  const pods = async (): Promise<PodFacts[]> => (await (kube ??= new KubernetesDriver(target)).listPods()).filter((p) => !p.deleting)
  const jobs = (): RehearsalJobApi => (api ??= new RehearsalJobApi(target))
  const job: RecordingTarget = {
    name,
    canary: true,
    get url() {
      return forward?.url ?? `http://127.0.0.1:0 (the port-forward to the Job ${name} is not open)`
    },
  }
  const rights = () => rehearsalRights(target, c.target)
  const seconds = Math.round(settings.healthTimeoutMs / 1000)
  /** The Job for `v` from the Deployment's template as the API answers it now. */
  const render = async (v: string) =>
    rehearsalJob(await c.kube().readDeploymentObject(), {
      name,
      namespace: target.namespace,
      container: target.container,
      image: `${image}:${v}`,
      databaseVariable,
      database,
      ...(claim ? { claim } : {}),
      runId,
      version: v,
    })
  const logs = async (): Promise<string[]> => {
    const lines: string[] = []
    for (const p of await pods()) lines.push(...(await kube!.podLog(p.name, settings.logLines)).map((l) => `${p.name}: ${l}`))
    return lines
  }
  const needVersion = (t: RecordingTarget): string => {
    if (!version) throw new HostFailure(t.name, 'start', 'No release was installed for the rehearsal Job before its start.')
    return version
  }

  return {
    name: 'Kubernetes (the rehearsal Job)',
    targets: [job],
    pollMs: 500,
    label: (t) => `the rehearsal Job ${t.name}`,
    async connect() {
      const missing = await (kube ??= new KubernetesDriver(target)).missingRights(rights())
      events.emit({
        kind: 'check',
        check: 'rights of this identity for the rehearsal',
        ok: !missing.length,
        detail: missing.map(showRight).join(', ') || 'all',
      })
      if (missing.length)
        throw new OperationError(
          `This identity lacks ${missing.length} right(s) in namespace ${target.namespace} the rehearsal needs: ${missing.map((r) => `${showRight(r)} (${r.why})`).join(', ')}.`,
          'Grant them (docs/upgrade.md, "Rehearse first") and rehearse again.',
        )
      // A policy of the namespace that limits the Job's egress: said before the first Job starts.
      for (const note of await readEgressLimits(target, rehearsalLabels(name))) events.warn(`${note}.`)
      const port = c.target.port
      // Only a ready pod is reached: its readiness is the Deployment's own probe, so start-to-healthy is timed as the rollout sees it.
      forward ??= await jobs().forward(port, async () => (await pods()).find((p) => p.phase === 'Running' && p.ready))
    },
    async close() {
      await forward?.close()
      forward = undefined
    },
    records: () => [],
    lockTargets: () => Promise.resolve(),
    unlockTargets: () => Promise.resolve(),
    describeLocks: () => '',
    describePreflight: () => [`this identity's rights in namespace ${target.namespace}: ${rights().map(showRight).join('; ')}`],
    checkPreflight: () => Promise.resolve({}),
    describeVersionRead: () => [describeCall.pods(target)],
    async versions() {
      const running = (await pods()).find((p) => p.version)?.version
      return running ? { [name]: running } : {}
    },
    versionRecord: () => undefined,
    describeVersionRecord: () => [],
    findMissing: () => Promise.resolve({ missing: [] }),
    describeFindMissing: () => [],
    stage: () => Promise.resolve({ skipped: "the kubelet pulls the image when the Job's pod starts" }),
    describeStage: () => ["nothing to stage: the kubelet pulls the image when the Job's pod starts"],
    async stop(t) {
      const removed = await jobs().remove()
      forward?.reset() // connections to the deleted pod end with it
      const deadline = Date.now() + settings.healthTimeoutMs
      for (;;) {
        const left = await (kube ??= new KubernetesDriver(target)).listPods()
        if (!left.length) break
        if (Date.now() >= deadline)
          throw new HostFailure(
            t.name,
            'stop',
            `${left.length} pod(s) of the Job ${name} are still there after its delete: ${left.map((p) => p.name).join(', ')}.`,
          )
        await new Promise((r) => setTimeout(r, 500))
      }
      return removed ? { changed: [`deleted the Job ${name} and its pod`] } : { skipped: `no Job ${name} in namespace ${target.namespace}` }
    },
    install(t, v) {
      const from = version
      version = v
      return Promise.resolve({ changed: [`the Job ${t.name} runs ${image}:${v} at its next start`], data: { from: from ?? null, to: v } })
    },
    describeInstall: (t, v) => Promise.resolve([`the Job ${t.name} runs ${image}:${v} at its next start (nothing is written now)`]),
    async reviewConfig(t) {
      const rendered = await render(needVersion(t))
      const container = rendered.spec?.template.spec?.containers[0]
      return {
        data: {
          image: container?.image,
          database: `${databaseVariable}=${database}`,
          recordings: claim ? `claim ${claim}` : 'an empty directory (no recording.rehearsal.claim)',
          labels: rendered.metadata?.labels,
        },
      }
    },
    async start(t) {
      const v = needVersion(t)
      const startedAt = new Date().toISOString()
      try {
        await jobs().create(await render(v))
      } catch (error) {
        throw new HostFailure(t.name, 'start', `The Job ${name} could not be created: ${errorMessage(error).replace(/\.$/, '')}.`)
      }
      return { changed: [`created the Job ${name}: ${image}:${v} against the scratch database ${database}`], data: { startedAt } }
    },
    async status(): Promise<TargetStatus> {
      const found = await pods()
      const running = found.some((p) => p.phase === 'Running' && p.ready)
      const gaveUp = found.some((p) => p.phase === 'Failed' || (!!p.waiting && STUCK.test(p.waiting)))
      const status =
        found.map((p) => `${p.name} ${p.phase}${p.ready ? ' ready' : ''}${p.waiting ? ` ${p.waiting}` : ''}`).join(', ') || 'no pod yet'
      return { running, status, gaveUp, starting: !running && !gaveUp }
    },
    logsSinceStart: () => logs(),
    recentLogs: () => logs(),
    describe(call, t) {
      if (call === 'stop')
        return [describeJobCall.remove(target), `${describeCall.pods(target)} until no pod is left, at most ${seconds} s`]
      if (call === 'review-config')
        return [
          `${describeCall.deployment(c.target)}: its pod template, with ${image}:V, ${databaseVariable}=${database}, ` +
            `recordings on ${claim ? `the claim ${claim}` : 'an empty directory'}, labels app.kubernetes.io/name=recording-rehearsal (no Service selects it)`,
        ]
      if (call === 'start') return [describeJobCall.create(target), 'backoffLimit 0, restartPolicy Never: a failed migration ends the pod']
      if (call === 'wait-healthy')
        return [
          `GET ${t.url}/ through ${describeJobCall.forward(target, c.target.port)} until it answers, at most ${seconds} s; ` +
            `${describeCall.pods(target)}: a failed pod fails it`,
        ]
      return [`${describeCall.pods(target)}: the pod Running and ready`, describeCall.log(target, settings.logLines)]
    },
  }
}
