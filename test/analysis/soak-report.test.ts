/**
 * The soak in a run's report, read from journal entries as a soak journals them: the verdict and
 * each metric's comparison in report.md, one SVG chart per metric in report.html (canary, baseline,
 * the threshold line), every value escaped; the score for webhooks and the metrics textfile; an
 * entry of another shape (a journal kept with the environment can be written by others) leaves the
 * section out.
 */
import { describe, expect, it } from 'vitest'
import { compareMetric, judgeAnalysis } from '../../src/analysis/analysis-verdict.ts'
import { SOAK_REPORT } from '../../src/analysis/canary-soak.ts'
import { canaryScoreOf, soakSection } from '../../src/analysis/soak-report.ts'
import type { JournalEntry } from '../../src/runs/journal.ts'
import type { ReportSection } from '../../src/runs/report-contribution.ts'

const section = soakSection as unknown as ReportSection<{ outcome: string; score: number | null }>
const rule = { name: 'probe-errors', direction: 'lower' as const, tolerance: 0, floor: 0, critical: true }
const canary = [0, 0, 0.67, 0.67, 0.67, 0.67]
const baseline = [0, 0, 0, 0, 0, 0]
const verdict = judgeAnalysis([compareMetric(rule, canary, baseline, { minSamples: 5, alpha: 0.05 })], {
  thresholds: { pass: 95, marginal: 75 },
})
const result = {
  verdict,
  samples: 6,
  soakMs: 6000,
  intervalMs: 1000,
  series: { 'probe-errors': { canary: canary.map((v, i) => [i + 1, v]), baseline: baseline.map((v, i) => [i + 1, v]) } },
  gaps: {},
}
const entry = (e: Partial<JournalEntry>): JournalEntry => ({ time: '2026-12-02T14:00:00.000Z', step: 'soak', status: 'start', ...e })
const run = {} as never

describe('the canary analysis in the report', () => {
  it('reads the figures journaled before a failed soak: verdict, table, and a chart with its threshold', () => {
    const entries = [
      entry({ report: SOAK_REPORT, detail: 'sample 1 of 6', data: { progress: { sample: 1 } } }),
      entry({ report: SOAK_REPORT, detail: 'verdict: fail', data: { final: { outcome: 'fail', score: 0, wait: false, result } } }),
      entry({ status: 'failed', detail: 'Canary analysis: ...' }),
    ]
    const value = section.build(entries, run)
    expect(value).toMatchObject({ outcome: 'fail', score: 0 })
    const md = section.markdown!(value!).join('\n')
    expect(md).toContain('## Canary analysis')
    expect(md).toContain('| probe-errors (critical) | fail | 0.6700 (6) | 0 (6) |')
    const html = section.html!(value!)!
    expect(html.title).toBe('Canary analysis')
    expect(html.body).toContain('<svg role="img" aria-label="probe-errors: canary against baseline"')
    expect(html.body).toMatch(/<line class="threshold"[^>]*stroke-dasharray/)
    expect(html.body.match(/<polyline class="(canary|baseline)"/g)).toEqual(['<polyline class="baseline"', '<polyline class="canary"'])
    expect(canaryScoreOf({ canaryAnalysis: value })).toBe(0)
  })

  it('reads a finished soak, and escapes what it shows', () => {
    const named = { ...result, verdict: { ...verdict, reason: '<b>x</b>' } }
    const value = section.build(
      [entry({ status: 'ok', report: SOAK_REPORT, data: { outcome: 'fail', score: 0, wait: false, result: named } })],
      run,
    )
    expect(section.html!(value!)!.body).toContain('&#60;b&#62;x&#60;/b&#62;')
  })

  it('leaves the section out for an entry of another shape, and has no score without one', () => {
    expect(section.build([entry({ status: 'ok', report: SOAK_REPORT, data: { outcome: 'pass', score: 'high' } })], run)).toBeUndefined()
    expect(canaryScoreOf({})).toBeUndefined()
    expect(canaryScoreOf(undefined)).toBeUndefined()
  })
})
