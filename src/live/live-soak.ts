/**
 * The live system's canary analysis: each component type with more than one instance rolls out
 * with a canary (src/live/live-rollout.ts); with a soak (`--soak`, or the stack's `analysis.soak`)
 * the canary instance is judged against the type's instances still on the old release, on the
 * metrics the stack declares for that type under `analysis.metrics.<type>` (e.g. the ingest's
 * `svc_ingest_source_dropped_video_frames` since 6.0, the pipeline's `video_frames_in_queue` since
 * 4.0): through Prometheus' query API (`$instance`: the instance's metrics address, host:port), else
 * read from each instance's own `/metrics`. Each type's soak is its own step (`soak-<type>`); a
 * type the stack declares no metric for is not soaked.
 *
 * The baseline: the seed's procedure stops every instance before the controller starts, so during
 * a canary's soak its type's other instances are stopped, not serving the old release. Before the
 * stop the run samples every instance of each soaked type for as long as the soak
 * (`soak-baseline`, journaled), and a canary whose baseline instances the run has stopped is judged
 * against those figures (before/after); where they still run the old release, against them at the
 * same time.
 */
import { metricSampler, type AnalysisInstance } from '../analysis/analysis-samplers.ts'
import { soakStep, type SoakSubject } from '../analysis/canary-soak.ts'
import { baselineStep, priorOf, type BaselineGroup } from '../analysis/soak-baseline.ts'
import { finishedData, stepName } from '../runs/step.ts'
import { defaultAnalysis, type AnalysisSettings } from '../config/analysis.ts'
import type { Run } from '../runs/engine.ts'
import type { ComponentHandle, LiveContext } from './live-context.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { unitUrlOf } from './hosts/live-hosts-platform.ts'
import { liveUnits, unitsByType, type LiveUnit } from './live-placement.ts'
import { stopComponent } from './live-steps.ts'

function settingsOf(ctx: LiveContext): AnalysisSettings {
  return ctx.env.upgrade?.analysis ?? defaultAnalysis()
}

/** The instance's metrics address, where the platform has one (hosts); on Kubernetes only Prometheus reaches a pod. */
function instanceOf(ctx: LiveContext, u: LiveUnit, side: 'canary' | 'baseline'): AnalysisInstance {
  if (ctx.env.live?.platform !== 'hosts') return { name: u.name, side }
  const base = unitUrlOf(ctx.live)(u).replace(/\/+$/, '')
  return { name: u.name, side, metricsUrl: `${base}/metrics`, promInstance: new URL(base).host }
}

/** True when this run has stopped `u` (the seed's procedure stops every instance before the controller starts). */
function stoppedByRun(ctx: LiveContext, u: LiveUnit): boolean {
  return ctx.journal.finished(stepName(stopComponent), u.name) !== undefined
}

function metricsOf(ctx: LiveContext, type: string | undefined) {
  return (type ? settingsOf(ctx).metrics[type as keyof AnalysisSettings['metrics']] : undefined) ?? []
}

function subjectOf(ctx: LiveContext, canary: LiveUnit[], baseline: LiveUnit[]): SoakSubject {
  const settings = settingsOf(ctx)
  const type = canary[0]?.component
  const metrics = metricsOf(ctx, type)
  // No baseline instance serves during the soak: the type's own figures from before the stop, when the run took them.
  const before =
    type && baseline.length && baseline.every((u) => stoppedByRun(ctx, u))
      ? priorOf(finishedData(ctx.journal, soakBaseline), type)
      : undefined
  const instances = [
    ...canary.map((u) => instanceOf(ctx, u, 'canary')),
    ...(before ? [] : baseline.map((u) => instanceOf(ctx, u, 'baseline'))),
  ]
  return {
    canary: canary.map((u) => u.name),
    baseline: baseline.map((u) => u.name),
    rules: metrics,
    samplers: metrics.length ? [metricSampler(metrics, instances, settings.prometheus?.url)] : [],
    ...(before ? { before } : {}),
  }
}

/** The types this run soaks: those with a canary (more than one instance) and a declared metric, none of whose instances it has stopped yet. */
function baselineGroups(ctx: LiveContext): BaselineGroup[] {
  if (!ctx.journal.run.params.soakMs) return []
  return unitsByType(ctx.units)
    .filter((units) => units.length > 1 && metricsOf(ctx, units[0]?.component).length > 0 && !units.some((u) => stoppedByRun(ctx, u)))
    .map((units) => ({
      key: units[0]?.component ?? '',
      instances: units.map((u) => instanceOf(ctx, u, 'baseline')),
      metrics: metricsOf(ctx, units[0]?.component),
    }))
}

/** The baseline sampled before the stop: each soaked type's instances on the old release, for as long as the soak. */
export const soakBaseline = baselineStep<LiveContext>({
  id: 'soak-baseline',
  journalOf: (ctx) => ctx.journal,
  settingsOf,
  soakMsOf: (ctx) => ctx.journal.run.params.soakMs ?? 0,
  groupsOf: baselineGroups,
})

/** Before the stop, when the run soaks a type: its baseline (`soak-baseline`), for the canaries' soaks to be judged against. */
export async function sampleLiveBaseline(run: Run<LiveContext>): Promise<void> {
  if (baselineGroups(run.ctx).length) await run.step(soakBaseline)
}

const steps = new Map<string, ReturnType<typeof soakStep<LiveContext, ComponentHandle>>>()

/** The soak step of one component type (`soak-ingest`, ...). */
function soakOfType(type: string) {
  let step = steps.get(type)
  if (!step) {
    step = soakStep<LiveContext, ComponentHandle>({
      id: `soak-${type}`,
      journalOf: (ctx) => ctx.journal,
      settingsOf,
      soakMsOf: (ctx) => ctx.journal.run.params.soakMs ?? 0,
      subjectOf,
    })
    steps.set(type, step)
  }
  return step
}

/** The rollout's hook after a type's verified canary, when the run soaks: that type's soak step; `wait` when its verdict asks a person. */
export function liveCanaryAnalysis(run: Run<LiveContext>): {
  afterCanary?: (canary: ComponentHandle[], baseline: ComponentHandle[]) => Promise<{ wait: boolean }>
} {
  if (!run.ctx.journal.run.params.soakMs) return {}
  return {
    afterCanary: async (canary, baseline) => {
      // A type the stack declares no metric for has nothing to be judged on: it is not soaked.
      const type = canary[0]?.component
      if (!type || !settingsOf(run.ctx).metrics[type]?.length) return { wait: false }
      const done = await run.step(soakOfType(type), canary, baseline)
      return { wait: done.data?.wait === true }
    },
  }
}

/** True when a component type of the stack runs more than one instance (on hosts): a type with a canary, after which a run may wait or soak. */
export function hasTypeCanary(env: Environment): boolean {
  return env.live?.platform === 'hosts' && unitsByType(liveUnits(env.live)).some((group) => group.length > 1)
}

/**
 * `--soak` judges a type's canary: refused, in one sentence, where no type has one. On Kubernetes
 * by design: `pulumi up` moves each component type as one Deployment, after the controller, and the
 * seed's one PSK leaves no instance on the old release beside the new controller.
 */
export function refuseSoakWithoutCanary(env: Environment): void {
  if (hasTypeCanary(env)) return
  const why =
    env.live?.platform === 'kubernetes'
      ? 'runs the live system on Kubernetes, where each component type moves as one Deployment (pulumi up), so no type has a canary to soak; expected svcops:live.hosts with a type on more than one host'
      : 'runs one instance of each live component type, so no type has a canary to soak; expected svcops:live.hosts with a type on more than one host'
  throw new BadInputError(
    `--soak: ${env.file} ${why}.`,
    'Judge the upgrade with svcops verify live after it; docs/live.md, "Canary analysis", says why.',
  )
}
