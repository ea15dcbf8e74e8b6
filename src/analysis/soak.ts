/**
 * The soak: the canary stays on the new release while the baseline (the hosts still on the old
 * one) keeps serving, and every interval each sampler is asked for both sides at the same moment.
 * After every sample the window so far is judged (analysis-verdict.ts) and journaled as progress
 * (what `runs watch` shows); a critical metric that fails with enough samples ends the soak early,
 * as Argo Rollouts' `failureLimit` does; otherwise the verdict is the one at the end of the soak.
 * A signal stops it between samples (a resume soaks again from the start).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { InterruptedError, withFacts } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { interruptSignal } from '../core/lifecycle.ts'
import type { AnalysisSettings } from '../config/analysis.ts'
import { durationMs } from '../config/soak-duration.ts'
import { compareMetric, judgeAnalysis, type AnalysisVerdict, type MetricRule } from './analysis-verdict.ts'
import type { Sampler, Side } from './analysis-samplers.ts'

/** A chart's points: seconds since the soak began, and the value. */
export type Series = Array<[number, number]>

/** What a soak found: its verdict, and each metric's points per side for the report's charts. */
export interface SoakResult {
  verdict: AnalysisVerdict
  samples: number
  soakMs: number
  intervalMs: number
  series: Record<string, { canary: Series; baseline: Series }>
  /** The last reason a metric could not be read, per metric (why it may be inconclusive). */
  gaps: Record<string, string>
}

/** What a soak needs. */
export interface SoakPlan {
  soakMs: number
  settings: AnalysisSettings
  rules: MetricRule[]
  samplers: Sampler[]
  /** Told after each sample (the journal's progress entry). */
  onSample?: (progress: SoakProgress) => void
}

/** The soak so far, after one sample. */
export interface SoakProgress {
  sample: number
  of: number
  elapsedMs: number
  verdict: AnalysisVerdict
}

/** Points kept per series (a long soak at a short interval keeps its latest). */
const MAX_POINTS = 720

/** The interval of the stack's settings, in ms. */
export function intervalOf(settings: AnalysisSettings): number {
  return durationMs(settings.interval) ?? 30_000
}

/** Runs the soak and returns its verdict; never throws for what it measured (the caller acts on the verdict). */
export async function runSoak(plan: SoakPlan): Promise<SoakResult> {
  const intervalMs = Math.min(intervalOf(plan.settings), plan.soakMs)
  const of = Math.max(1, Math.floor(plan.soakMs / intervalMs))
  const values = new Map<string, Record<Side, number[]>>(plan.rules.map((r) => [r.name, { canary: [], baseline: [] }]))
  const series: SoakResult['series'] = Object.fromEntries(plan.rules.map((r) => [r.name, { canary: [], baseline: [] }]))
  const gaps: Record<string, string> = {}
  const began = Date.now()
  let verdict = judge(plan, values)
  let sample = 0
  for (sample = 1; sample <= of; sample++) {
    const signal = interruptSignal()
    if (signal) throw withFacts(new InterruptedError(`Interrupted by ${signal}.`), { signal })
    const next = began + sample * intervalMs
    const results = await Promise.all(plan.samplers.map((s) => s.sample()))
    const at = Math.round((Date.now() - began) / 100) / 10
    for (const { readings, gaps: missing } of results) {
      for (const r of readings) {
        values.get(r.metric)?.[r.side].push(r.value)
        const points = series[r.metric]?.[r.side]
        if (points) {
          points.push([at, r.value])
          if (points.length > MAX_POINTS) points.shift()
        }
      }
      for (const g of missing) gaps[g.metric] = `${g.instance}: ${g.reason}`
    }
    verdict = judge(plan, values, gaps)
    plan.onSample?.({ sample, of, elapsedMs: Date.now() - began, verdict })
    events.emit({ kind: 'progress', what: 'soak', done: sample, total: of, unit: 'samples' })
    if (verdict.outcome === 'fail' && verdict.metrics.some((m) => m.critical && m.outcome === 'fail')) break
    // Waited in short steps: a signal stops the soak at the next one, not at the next sample.
    while (sample < of && Date.now() < next && !interruptSignal()) await sleep(Math.min(250, next - Date.now()))
  }
  return { verdict, samples: Math.min(sample, of), soakMs: plan.soakMs, intervalMs, series, gaps }
}

function judge(plan: SoakPlan, values: Map<string, Record<Side, number[]>>, gaps: Record<string, string> = {}): AnalysisVerdict {
  const options = { minSamples: plan.settings.minSamples, alpha: plan.settings.alpha }
  const comparisons = plan.rules.map((rule) => {
    const v = values.get(rule.name) ?? { canary: [], baseline: [] }
    const c = compareMetric(rule, v.canary, v.baseline, options)
    const gap = gaps[rule.name]
    return c.outcome === 'nodata' && gap ? { ...c, reason: `${c.reason} (last: ${gap})` } : c
  })
  return judgeAnalysis(comparisons, plan.settings)
}
