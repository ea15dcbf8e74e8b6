/**
 * The live system's canary analysis: each component type with more than one instance rolls out
 * with a canary (src/live/live-rollout.ts); with a soak (`--soak`, or the stack's `analysis.soak`)
 * the canary instance is judged against the type's instances still on the old release, on the
 * metrics the stack declares for that type under `analysis.metrics.<type>` (e.g. the ingest's
 * `svc_ingest_source_dropped_video_frames` since 6.0, the pipeline's `video_frames_in_queue` since
 * 4.0): through Prometheus' query API (`$instance`: the instance's metrics address, host:port), else
 * read from each instance's own `/metrics`. Each type's soak is its own step (`soak-<type>`); a
 * type the stack declares no metric for is not soaked.
 */
import { metricSampler, type AnalysisInstance } from '../analysis/analysis-samplers.ts'
import { soakStep, type SoakSubject } from '../analysis/canary-soak.ts'
import { defaultAnalysis, type AnalysisSettings } from '../config/analysis.ts'
import type { Run } from '../runs/engine.ts'
import type { ComponentHandle, LiveContext } from './live-context.ts'
import type { Environment } from '../config/schema.ts'
import { unitUrlOf } from './hosts/live-hosts-platform.ts'
import { liveUnits, unitsByType, type LiveUnit } from './live-placement.ts'

function settingsOf(ctx: LiveContext): AnalysisSettings {
  return ctx.env.upgrade?.analysis ?? defaultAnalysis()
}

/** The instance's metrics address, where the platform has one (hosts); on Kubernetes only Prometheus reaches a pod. */
function instanceOf(ctx: LiveContext, u: LiveUnit, side: 'canary' | 'baseline'): AnalysisInstance {
  if (ctx.env.live?.platform !== 'hosts') return { name: u.name, side }
  const base = unitUrlOf(ctx.live)(u).replace(/\/+$/, '')
  return { name: u.name, side, metricsUrl: `${base}/metrics`, promInstance: new URL(base).host }
}

function subjectOf(ctx: LiveContext, canary: LiveUnit[], baseline: LiveUnit[]): SoakSubject {
  const settings = settingsOf(ctx)
  const type = canary[0]?.component
  const metrics = (type ? settings.metrics[type] : undefined) ?? []
  const instances = [...canary.map((u) => instanceOf(ctx, u, 'canary')), ...baseline.map((u) => instanceOf(ctx, u, 'baseline'))]
  return {
    canary: canary.map((u) => u.name),
    baseline: baseline.map((u) => u.name),
    rules: metrics,
    samplers: metrics.length ? [metricSampler(metrics, instances, settings.prometheus?.url)] : [],
  }
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
