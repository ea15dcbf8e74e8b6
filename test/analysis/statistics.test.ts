/**
 * The canary judge's statistics and verdict, against known values: the Mann-Whitney U test's U and
 * one-sided p-values as scipy computes them (`scipy.stats.mannwhitneyu(x, y, alternative=...,
 * method='asymptotic', use_continuity=True)`, scipy 1.17), the Hodges-Lehmann shift, and the
 * verdict's rules (direction, tolerance, floor, critical, too few samples, the score's thresholds).
 */
import { describe, expect, it } from 'vitest'
import { analysisSchema } from '../../src/config/analysis.ts'
import { compareMetric, judgeAnalysis, type MetricRule } from '../../src/analysis/analysis-verdict.ts'
import { mannWhitney, median, normalUpperTail } from '../../src/analysis/mann-whitney.ts'
import { parseSoak } from '../../src/config/soak-duration.ts'
import { sumExposed, fillQuery } from '../../src/analysis/analysis-samplers.ts'

const zeros = (n: number): number[] => new Array<number>(n).fill(0)

describe('Mann-Whitney U', () => {
  it.each([
    { x: [1, 2, 3, 4, 5], y: [6, 7, 8, 9, 10], u: 0, greater: 0.9966923245172357, less: 0.006092890177672406, shift: -5 },
    { x: [19, 22, 16, 29, 24], y: [20, 11, 17, 12], u: 17, greater: 0.055673443266570206, less: 0.9669037101389033, shift: 7 },
    {
      x: [0, 0, 0, 0.67, 0.67, 0.67, 0.67, 0.67],
      y: zeros(10),
      u: 65,
      greater: 0.0025418463760830813,
      less: 0.9982274552267776,
      shift: 0.67,
    },
    {
      x: [1.1, 2.2, 3.3, 4.4, 5.5, 6.6],
      y: [2, 3, 4, 5, 6, 7, 8],
      u: 15,
      greater: 0.8234443827469973,
      less: 0.21601744600250378,
      shift: -1.15,
    },
    { x: [3, 3, 3, 3], y: [3, 3, 3, 3, 3], u: 10, greater: 1, less: 1, shift: 0 },
  ])('U = $u for $x against $y, as scipy computes it', ({ x, y, u, greater, less, shift }) => {
    const t = mannWhitney(x, y)
    expect(t.u).toBe(u)
    expect(t.pGreater).toBeCloseTo(greater, 5)
    expect(t.pLess).toBeCloseTo(less, 5)
    expect(t.shift).toBeCloseTo(shift, 10)
  })

  it('refuses an empty side', () => {
    expect(() => mannWhitney([], [1])).toThrow(RangeError)
  })

  it('the normal tail and the median', () => {
    expect(normalUpperTail(0)).toBeCloseTo(0.5, 7)
    expect(normalUpperTail(1.959964)).toBeCloseTo(0.025, 6)
    expect(normalUpperTail(-1.644854)).toBeCloseTo(0.95, 6)
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 2, 3])).toBe(2.5)
  })
})

const errors: MetricRule = { name: 'probe-errors', direction: 'lower', tolerance: 0, floor: 0, critical: true }
const latency: MetricRule = { name: 'probe-latency-ms', direction: 'lower', tolerance: 1, floor: 100, critical: false }
const frames: MetricRule = { name: 'frames-per-second', direction: 'higher', tolerance: 0.1, floor: 0, critical: false }
const options = { minSamples: 5, alpha: 0.05 }

describe('one metric, canary against baseline', () => {
  it('fails a canary whose errors start while the baseline has none, naming both sides', () => {
    const c = compareMetric(errors, [0, 0, 0, 0.67, 0.67, 0.67, 0.67, 0.67], zeros(10), options)
    expect(c.outcome).toBe('fail')
    expect(c.reason).toMatch(
      /^probe-errors: canary median 0.67 against baseline median 0 \(lower is better; worse by 0.67, allowed 0; p = 0.0025\)$/,
    )
  })

  it('passes equal sides, and a canary better than the baseline', () => {
    expect(compareMetric(errors, zeros(6), zeros(9), options).outcome).toBe('pass')
    expect(compareMetric(latency, [10, 11, 12, 10, 9], [50, 60, 55, 52, 58], options).outcome).toBe('pass')
  })

  it('passes a significant difference within the tolerance or under the floor', () => {
    // Twice as slow is the tolerance (1); 30 ms against 10 ms is under the 100 ms floor.
    expect(compareMetric(latency, [30, 31, 32, 33, 34], [10, 11, 12, 13, 14], options).outcome).toBe('pass')
    // 1.5 times as slow, 600 ms against 400 ms: significant, over the floor, within the tolerance.
    expect(compareMetric(latency, [600, 610, 620, 630, 640], [400, 410, 420, 430, 440], options).outcome).toBe('pass')
    // Three times as slow: over both.
    expect(compareMetric(latency, [1200, 1210, 1220, 1230, 1240], [400, 410, 420, 430, 440], options).outcome).toBe('fail')
  })

  it('reads the direction: higher is better fails a canary that is lower', () => {
    expect(compareMetric(frames, [40, 41, 42, 40, 41], [50, 50, 51, 50, 49], options).outcome).toBe('fail')
    expect(compareMetric(frames, [60, 61, 62, 60, 61], [50, 50, 51, 50, 49], options).outcome).toBe('pass')
  })

  it('has no verdict with fewer samples than minSamples on either side', () => {
    const c = compareMetric(errors, [1, 1, 1, 1], zeros(10), options)
    expect(c.outcome).toBe('nodata')
    expect(c.reason).toBe('probe-errors: 4 canary and 10 baseline samples; at least 5 each are needed')
  })
})

describe('the verdict', () => {
  const thresholds = { pass: 95, marginal: 75 }
  const pass = compareMetric(latency, [10, 11, 12, 10, 9], [10, 11, 12, 10, 9], options)
  const failed = compareMetric(frames, [40, 41, 42, 40, 41], [50, 50, 51, 50, 49], options)
  const critical = compareMetric(errors, [1, 1, 1, 1, 1], [0, 0, 0, 0, 0], options)
  const nodata = compareMetric(errors, [], [], options)

  it('a failed critical metric fails whatever the score', () => {
    const v = judgeAnalysis([critical, pass, pass, pass, pass, pass, pass, pass, pass, pass, pass], {
      thresholds: { pass: 50, marginal: 10 },
    })
    expect(v.outcome).toBe('fail')
    expect(v.score).toBe(91)
    expect(v.reason).toMatch(/^critical metric probe-errors: canary median 1 against baseline median 0/)
  })

  it('a metric without data makes it inconclusive, never a pass', () => {
    expect(judgeAnalysis([pass, pass, nodata], { thresholds }).outcome).toBe('inconclusive')
    expect(judgeAnalysis([], { thresholds }).outcome).toBe('inconclusive')
  })

  it('the score against pass and marginal', () => {
    expect(judgeAnalysis([pass, pass, pass, pass], { thresholds })).toMatchObject({ outcome: 'pass', score: 100 })
    expect(judgeAnalysis([pass, pass, pass, failed], { thresholds })).toMatchObject({ outcome: 'marginal', score: 75 })
    expect(judgeAnalysis([pass, failed], { thresholds })).toMatchObject({ outcome: 'fail', score: 50 })
  })
})

describe('settings and sources', () => {
  it('--soak takes a duration and refuses anything else in one sentence', () => {
    expect(parseSoak('10m')).toBe(600_000)
    expect(parseSoak('1h30m')).toBe(5_400_000)
    expect(parseSoak('45s')).toBe(45_000)
    expect(() => parseSoak('ten minutes')).toThrow(
      "--soak: 'ten minutes' is not a duration; expected hours, minutes or seconds like 10m, 90s or 1h30m.",
    )
  })

  it('svcops:upgrade.analysis: defaults, and a query without prometheus.url refused with its path', () => {
    expect(analysisSchema.parse({})).toMatchObject({
      interval: '30s',
      minSamples: 5,
      inconclusive: 'fail',
      thresholds: { pass: 95, marginal: 75 },
    })
    const bad = analysisSchema.safeParse({ metrics: { ingest: [{ name: 'lost', query: 'sum(x{instance="$instance"})' }] } })
    expect(bad.success).toBe(false)
    expect(bad.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['metrics.ingest.0.query', 'expected prometheus.url to ask a query of'],
    ])
    const both = analysisSchema.safeParse({
      metrics: { ingest: [{ name: 'lost', metric: 'a', query: 'b' }] },
      prometheus: { url: 'http://p:9090' },
    })
    expect(both.success).toBe(false)
    expect(analysisSchema.safeParse({ interval: 'often' }).success).toBe(false)
  })

  it('sums a metric over its series in an exposition, and fills $instance in a query', () => {
    const text = '# TYPE svc_x counter\nsvc_x{source="a"} 2\nsvc_x{source="b"} 3.5\nsvc_xy 100\n'
    expect(sumExposed(text, 'svc_x')).toBe(5.5)
    expect(sumExposed(text, 'svc_z')).toBeUndefined()
    expect(fillQuery('rate(svc_x{instance="$instance"}[1m])', '127.0.0.1:9100')).toBe('rate(svc_x{instance="127.0.0.1:9100"}[1m])')
  })
})
