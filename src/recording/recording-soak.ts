/**
 * The recording service's canary analysis: the canary host against the run's other hosts, which
 * stay on the old release until the soak is judged. Compared: svcops' own probes of the seed's
 * endpoints (soak-probes.ts) and the metrics the stack declares under
 * `analysis.metrics.recording` (through Prometheus, or read from each host's exposition at
 * `analysis.recordingMetricsPath`, the site's assumption: the seed names no metric of the service).
 */
import type { RecordingContext } from './recording-context.ts'
import type { RecordingTarget } from './recording-platform.ts'
import type { Run } from '../runs/engine.ts'
import { defaultAnalysis, type AnalysisSettings } from '../config/analysis.ts'
import { metricSampler, type AnalysisInstance } from '../analysis/analysis-samplers.ts'
import { soakStep, type SoakSubject } from '../analysis/canary-soak.ts'
import { probeRules, recordingProbes } from './soak-probes.ts'

/** The stack's analysis settings (every default when it declares none). */
function settingsOf(ctx: RecordingContext): AnalysisSettings {
  return ctx.env.upgrade?.analysis ?? defaultAnalysis()
}

/** What is compared for the canary `canary` against `baseline`. */
function subjectOf(ctx: RecordingContext, canary: RecordingTarget[], baseline: RecordingTarget[]): SoakSubject {
  const settings = settingsOf(ctx)
  const instances = [...canary.map((t) => instanceOf(t, 'canary', settings)), ...baseline.map((t) => instanceOf(t, 'baseline', settings))]
  const metrics = settings.metrics.recording ?? []
  const probing = settings.probes.enabled
  return {
    canary: canary.map((t) => t.name),
    baseline: baseline.map((t) => t.name),
    rules: [...(probing ? probeRules(settings) : []), ...metrics],
    samplers: [
      ...(probing ? [recordingProbes(ctx.deps.content, instances, { runId: ctx.journal.run.id, limit: ctx.settings.contentLimit })] : []),
      ...(metrics.length ? [metricSampler(metrics, instances, settings.prometheus?.url)] : []),
    ],
  }
}

function instanceOf(t: RecordingTarget, side: 'canary' | 'baseline', settings: AnalysisSettings): AnalysisInstance & { url: string } {
  const base = t.url.replace(/\/+$/, '')
  return { name: t.name, side, url: base, metricsUrl: `${base}${settings.recordingMetricsPath}`, promInstance: new URL(base).host }
}

/** The soak step of the recording service's upgrade. */
export const soakRecordingCanary = soakStep<RecordingContext, RecordingTarget>({
  journalOf: (ctx) => ctx.journal,
  settingsOf,
  soakMsOf: (ctx) => ctx.journal.run.params.soakMs ?? 0,
  subjectOf,
})

/**
 * The rollout's hook after the verified canary, when the run soaks (`--soak`, or the stack's
 * `analysis.soak`): the soak step; `wait` when its verdict asks a person.
 */
export function recordingCanaryAnalysis(run: Run<RecordingContext>): {
  afterCanary?: (canary: RecordingTarget[], baseline: RecordingTarget[]) => Promise<{ wait: boolean }>
} {
  if (!run.ctx.journal.run.params.soakMs) return {}
  return {
    afterCanary: async (canary, baseline) => {
      const done = await run.step(soakRecordingCanary, canary, baseline)
      return { wait: done.data?.wait === true }
    },
  }
}
