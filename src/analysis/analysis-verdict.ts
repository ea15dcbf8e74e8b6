/**
 * The judgement of a soak, canary against baseline over the same window (Kayenta's judge): each
 * metric passes, fails or has no verdict (too few samples); the score is the share of the judged
 * metrics that pass; a failed critical metric fails the analysis whatever the score; a metric
 * without a verdict makes the whole inconclusive, which is never a pass. Pure: the samples in,
 * the verdict out, so the run, the watch and the report show the same figures.
 *
 * A metric fails when the canary is worse with significance (the one-sided Mann-Whitney p-value
 * below `alpha`) AND the Hodges-Lehmann shift is worse by more than the tolerance (a fraction of
 * the baseline's median) and more than the floor (in the metric's unit): significance alone would
 * fail a canary 1 % slower on a quiet fleet, a shift alone would fail on noise.
 */
import type { AnalysisSettings } from '../config/analysis.ts'
import { mannWhitney, median } from './mann-whitney.ts'

/** How one metric is judged. */
export interface MetricRule {
  name: string
  direction: 'lower' | 'higher'
  tolerance: number
  floor: number
  critical: boolean
}

/** A metric's verdict. */
export type MetricOutcome = 'pass' | 'fail' | 'nodata'

/** One metric's comparison, as the watch, the report and the error show it. */
export interface MetricComparison {
  name: string
  outcome: MetricOutcome
  critical: boolean
  direction: 'lower' | 'higher'
  canary: { samples: number; median: number | null }
  baseline: { samples: number; median: number | null }
  /** One-sided p-value of the canary being worse; null without data. */
  p: number | null
  /** Canary - baseline (Hodges-Lehmann); null without data. */
  shift: number | null
  /** The largest shift that is not a failure. */
  allowed: number | null
  /** One sentence: why. */
  reason: string
}

export type AnalysisOutcome = 'pass' | 'marginal' | 'fail' | 'inconclusive'

/** The verdict of a soak. */
export interface AnalysisVerdict {
  outcome: AnalysisOutcome
  /** Share of the judged metrics that pass, 0-100 (null when none could be judged). */
  score: number | null
  metrics: MetricComparison[]
  /** One sentence naming what decided it. */
  reason: string
}

const figure = (v: number): string => (Number.isInteger(v) ? String(v) : v.toPrecision(4).replace(/\.?0+$/, ''))

/** Judges one metric over the window's samples of each side. */
export function compareMetric(
  rule: MetricRule,
  canary: number[],
  baseline: number[],
  options: { minSamples: number; alpha: number },
): MetricComparison {
  const base = {
    name: rule.name,
    critical: rule.critical,
    direction: rule.direction,
    canary: { samples: canary.length, median: canary.length ? median(canary) : null },
    baseline: { samples: baseline.length, median: baseline.length ? median(baseline) : null },
  }
  if (canary.length < options.minSamples || baseline.length < options.minSamples)
    return {
      ...base,
      outcome: 'nodata',
      p: null,
      shift: null,
      allowed: null,
      reason: `${rule.name}: ${canary.length} canary and ${baseline.length} baseline samples; at least ${options.minSamples} each are needed`,
    }
  const test = mannWhitney(canary, baseline)
  const p = rule.direction === 'lower' ? test.pGreater : test.pLess
  const worseBy = rule.direction === 'lower' ? test.shift : -test.shift
  const allowed = Math.max(rule.floor, rule.tolerance * Math.abs(base.baseline.median ?? 0))
  const fail = p < options.alpha && worseBy > allowed
  const sides = `canary median ${figure(base.canary.median ?? 0)} against baseline median ${figure(base.baseline.median ?? 0)}`
  const reason = fail
    ? `${rule.name}: ${sides} (${rule.direction} is better; worse by ${figure(worseBy)}, allowed ${figure(allowed)}; p = ${p.toFixed(4)})`
    : `${rule.name}: ${sides} (${rule.direction} is better; within tolerance or not significant, p = ${p.toFixed(4)})`
  return { ...base, outcome: fail ? 'fail' : 'pass', p, shift: test.shift, allowed, reason }
}

/** The soak's verdict from its metrics' comparisons and the stack's thresholds. */
export function judgeAnalysis(metrics: MetricComparison[], settings: Pick<AnalysisSettings, 'thresholds'>): AnalysisVerdict {
  const criticalFailure = metrics.find((m) => m.critical && m.outcome === 'fail')
  const judged = metrics.filter((m) => m.outcome !== 'nodata')
  const score = judged.length ? Math.round((100 * judged.filter((m) => m.outcome === 'pass').length) / judged.length) : null
  if (criticalFailure) return { outcome: 'fail', score, metrics, reason: `critical metric ${criticalFailure.reason}` }
  const nodata = metrics.find((m) => m.outcome === 'nodata')
  if (metrics.length === 0) return { outcome: 'inconclusive', score, metrics, reason: 'no metric to compare the canary on' }
  if (nodata) return { outcome: 'inconclusive', score, metrics, reason: nodata.reason }
  const failed = metrics.find((m) => m.outcome === 'fail')
  const s = score ?? 0
  if (s >= settings.thresholds.pass) return { outcome: 'pass', score, metrics, reason: `score ${s} (pass at ${settings.thresholds.pass})` }
  if (s >= settings.thresholds.marginal)
    return {
      outcome: 'marginal',
      score,
      metrics,
      reason: `score ${s}, marginal (pass at ${settings.thresholds.pass}, marginal at ${settings.thresholds.marginal})${failed ? `: ${failed.reason}` : ''}`,
    }
  return {
    outcome: 'fail',
    score,
    metrics,
    reason: `score ${s} below ${settings.thresholds.marginal}${failed ? `: ${failed.reason}` : ''}`,
  }
}
