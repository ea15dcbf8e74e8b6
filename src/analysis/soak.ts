/**
 * The soak: the canary stays on the new release while the baseline (the hosts still on the old
 * one) keeps serving, and every interval each sampler is asked for both sides at the same moment.
 * After every sample the window so far is judged (analysis-verdict.ts) and journaled as progress
 * (what `runs watch` shows); a critical metric that fails with enough samples ends the soak early,
 * as Argo Rollouts' `failureLimit` does; otherwise the verdict is the one at the end of the soak.
 * A baseline sampled before the soak (`prior`: the live system's instances before the seed's
 * procedure stops them) is compared as it is, the samplers then reading the canary only.
 * Each sample's readings go with its progress (`onSample`): a soak killed midway is resumed with
 * them (`earlier`), counting the samples it had taken, not from the start. A signal stops it
 * between samples.
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
  /** Every value read, per metric and side (what a baseline sampled before the soak keeps for it). */
  values: Record<string, Record<Side, number[]>>
}

/** A baseline sampled before the soak: its values and chart points per metric. */
export interface PriorBaseline {
  values: Record<string, number[]>
  series: Record<string, Series>
}

/** One value read at a sample, with its time in the soak (seconds): what a sample journals for a resume. */
export interface TimedReading {
  metric: string
  side: Side
  value: number
  at: number
}

/** The samples a soak killed midway had taken: its resume counts them. */
export interface EarlierSamples {
  samples: number
  readings: TimedReading[]
}

/** What a soak needs. */
export interface SoakPlan {
  soakMs: number
  settings: AnalysisSettings
  rules: MetricRule[]
  samplers: Sampler[]
  /** The baseline sampled before the soak, compared instead of one read during it. */
  prior?: PriorBaseline
  /** The samples of this soak taken before it was killed. */
  earlier?: EarlierSamples
  /** Told after each sample (the journal's progress entry). */
  onSample?: (progress: SoakProgress) => void
}

/** The soak so far, after one sample. */
export interface SoakProgress {
  sample: number
  of: number
  elapsedMs: number
  verdict: AnalysisVerdict
  /** This sample's readings. */
  readings: TimedReading[]
}

/** Points kept per series (a long soak at a short interval keeps its latest). */
const MAX_POINTS = 720

/** The interval of the stack's settings, in ms. */
export function intervalOf(settings: AnalysisSettings): number {
  return durationMs(settings.interval) ?? 30_000
}

/** A soak's interval and how many samples it takes. */
export function samplesOf(soakMs: number, settings: AnalysisSettings): { intervalMs: number; of: number } {
  const intervalMs = Math.min(intervalOf(settings), soakMs)
  return { intervalMs, of: Math.max(1, Math.floor(soakMs / intervalMs)) }
}

/** Runs the soak and returns its verdict; never throws for what it measured (the caller acts on the verdict). */
export async function runSoak(plan: SoakPlan): Promise<SoakResult> {
  const { intervalMs, of } = samplesOf(plan.soakMs, plan.settings)
  const before = (r: MetricRule) => ({ values: [...(plan.prior?.values[r.name] ?? [])], series: [...(plan.prior?.series[r.name] ?? [])] })
  const values = new Map<string, Record<Side, number[]>>(plan.rules.map((r) => [r.name, { canary: [], baseline: before(r).values }]))
  const series: SoakResult['series'] = Object.fromEntries(plan.rules.map((r) => [r.name, { canary: [], baseline: before(r).series }]))
  const gaps: Record<string, string> = {}
  const add = (r: TimedReading): void => {
    values.get(r.metric)?.[r.side].push(r.value)
    const points = series[r.metric]?.[r.side]
    if (points) {
      points.push([r.at, r.value])
      if (points.length > MAX_POINTS) points.shift()
    }
  }
  for (const r of plan.earlier?.readings ?? []) add(r)
  const done = Math.min(plan.earlier?.samples ?? 0, of)
  // A resumed soak goes on where it was: its clock as if it had not stopped.
  const began = Date.now() - done * intervalMs
  let verdict = judge(plan, values)
  let sample = 0
  for (sample = done + 1; sample <= of; sample++) {
    const signal = interruptSignal()
    if (signal) throw withFacts(new InterruptedError(`Interrupted by ${signal}.`), { signal })
    const next = began + sample * intervalMs
    const results = await Promise.all(plan.samplers.map((s) => s.sample()))
    const at = Math.round((Date.now() - began) / 100) / 10
    const read: TimedReading[] = []
    for (const { readings, gaps: missing } of results) {
      for (const r of readings) read.push({ metric: r.metric, side: r.side, value: r.value, at })
      for (const g of missing) gaps[g.metric] = `${g.instance}: ${g.reason}`
    }
    for (const r of read) add(r)
    verdict = judge(plan, values, gaps)
    plan.onSample?.({ sample, of, elapsedMs: Date.now() - began, verdict, readings: read })
    events.emit({ kind: 'progress', what: 'soak', done: sample, total: of, unit: 'samples' })
    if (verdict.outcome === 'fail' && verdict.metrics.some((m) => m.critical && m.outcome === 'fail')) break
    // Waited in short steps: a signal stops the soak at the next one, not at the next sample.
    while (sample < of && Date.now() < next && !interruptSignal()) await sleep(Math.min(250, next - Date.now()))
  }
  return { verdict, samples: Math.min(sample, of), soakMs: plan.soakMs, intervalMs, series, gaps, values: Object.fromEntries(values) }
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
