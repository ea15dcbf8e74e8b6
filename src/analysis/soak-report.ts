/**
 * The soak in a run's report: the verdict and its score, a table of each metric's comparison, and
 * in report.html one small chart per metric, canary against baseline over the soak, with the line
 * the canary may not cross (the baseline's median and the allowed shift). Read from the journal by
 * the `report` value the soak journals (never by the step's name), and checked: a journal kept with
 * the environment can be written by others, so a value of another shape leaves the section out.
 */
import { z } from 'zod'
import { defineSection, escapeHtml as esc } from '../reports/report-section.ts'
import { SOAK_REPORT } from './canary-soak.ts'

const point = z.tuple([z.number(), z.number()])
const viewSchema = z.object({
  outcome: z.enum(['pass', 'marginal', 'fail', 'inconclusive']),
  score: z.number().nullable(),
  result: z.object({
    samples: z.number(),
    soakMs: z.number(),
    intervalMs: z.number(),
    series: z.record(z.string(), z.object({ canary: z.array(point).max(10_000), baseline: z.array(point).max(10_000) })),
    verdict: z.object({
      reason: z.string(),
      metrics: z
        .array(
          z.object({
            name: z.string(),
            outcome: z.enum(['pass', 'fail', 'nodata']),
            critical: z.boolean(),
            direction: z.enum(['lower', 'higher']),
            canary: z.object({ samples: z.number(), median: z.number().nullable() }),
            baseline: z.object({ samples: z.number(), median: z.number().nullable() }),
            p: z.number().nullable(),
            allowed: z.number().nullable(),
          }),
        )
        .max(1000),
    }),
  }),
})

/** The soak as the report shows it. */
export type SoakView = z.infer<typeof viewSchema>

const figure = (v: number | null): string => (v === null ? '-' : Number.isInteger(v) ? String(v) : v.toPrecision(4))

/** The canary-analysis section: the last soak entry with figures (its end, or the figures journaled before its failure). */
export const soakSection = defineSection<SoakView>({
  key: 'canaryAnalysis',
  build(entries) {
    for (const e of [...entries].reverse()) {
      if (e.report !== SOAK_REPORT || !e.data) continue
      const candidate = e.status === 'ok' ? e.data : e.data.final
      if (candidate === undefined) continue
      const parsed = viewSchema.safeParse(candidate)
      if (parsed.success) return parsed.data
    }
    return undefined
  },
  headline: (v) => `canary analysis: ${v.outcome}${v.score !== null ? `, score ${v.score}` : ''} after ${v.result.samples} samples`,
  markdown: (v) => [
    '',
    '## Canary analysis',
    '',
    `- verdict: ${v.outcome}${v.score !== null ? ` (score ${v.score})` : ''}: ${v.result.verdict.reason}`,
    '',
    '| metric | verdict | canary median | baseline median | p | allowed shift |',
    '|---|---|---|---|---|---|',
    ...v.result.verdict.metrics.map(
      (m) =>
        `| ${m.name}${m.critical ? ' (critical)' : ''} | ${m.outcome} | ${figure(m.canary.median)} (${m.canary.samples}) | ${figure(m.baseline.median)} (${m.baseline.samples}) | ${m.p === null ? '-' : m.p.toFixed(4)} | ${figure(m.allowed)} |`,
    ),
  ],
  html: (v) => ({
    title: 'Canary analysis',
    body: [
      `<p id="canary-verdict">Verdict: <strong>${esc(v.outcome)}</strong>${v.score !== null ? ` (score ${v.score})` : ''}: ${esc(v.result.verdict.reason)}</p>`,
      '<div class="soak-charts">',
      ...v.result.verdict.metrics.map((m) => chart(m, v.result.series[m.name] ?? { canary: [], baseline: [] })),
      '</div>',
    ].join('\n'),
  }),
})

const W = 320
const H = 110
const PAD = 6

/** One metric's chart: the baseline (grey) and the canary (its verdict's colour) over the soak, and the threshold (dashed). */
function chart(
  m: SoakView['result']['verdict']['metrics'][number],
  s: { canary: Array<[number, number]>; baseline: Array<[number, number]> },
): string {
  const threshold =
    m.baseline.median !== null && m.allowed !== null
      ? m.direction === 'lower'
        ? m.baseline.median + m.allowed
        : m.baseline.median - m.allowed
      : undefined
  const all = [...s.canary, ...s.baseline]
  const ys = [...all.map((p) => p[1]), ...(threshold !== undefined ? [threshold] : [])]
  const maxX = Math.max(1, ...all.map((p) => p[0]))
  const minY = Math.min(0, ...ys)
  const maxY = Math.max(minY + 1e-9, ...ys)
  const x = (t: number): number => PAD + ((W - 2 * PAD) * t) / maxX
  const y = (v: number): number => H - PAD - ((H - 2 * PAD) * (v - minY)) / (maxY - minY)
  const line = (points: Array<[number, number]>, colour: string, name: string): string =>
    points.length
      ? `<polyline class="${name}" fill="none" stroke="${colour}" stroke-width="1.5" points="${points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"/>`
      : ''
  const label = `${m.name}: canary against baseline`
  return [
    `<figure class="soak-chart"><figcaption>${esc(m.name)}${m.critical ? ' (critical)' : ''}: ${esc(m.outcome)} — canary ${esc(figure(m.canary.median))}, baseline ${esc(figure(m.baseline.median))}</figcaption>`,
    `<svg role="img" aria-label="${esc(label)}" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`,
    `<rect x="0" y="0" width="${W}" height="${H}" fill="none" stroke="#ccc"/>`,
    threshold !== undefined
      ? `<line class="threshold" x1="${PAD}" x2="${W - PAD}" y1="${y(threshold).toFixed(1)}" y2="${y(threshold).toFixed(1)}" stroke="#b58900" stroke-dasharray="4 3"/>`
      : '',
    line(s.baseline, '#888', 'baseline'),
    line(s.canary, m.outcome === 'fail' ? '#c0392b' : '#2e7d32', 'canary'),
    '</svg></figure>',
  ].join('')
}

/** The canary analysis' score in a run's report (its `canaryAnalysis` section), for webhooks and metrics; undefined without one. */
export function canaryScoreOf(report: { [section: string]: unknown } | undefined): number | undefined {
  const section = report?.[soakSection.key] as { score?: unknown } | undefined
  return typeof section?.score === 'number' ? section.score : undefined
}
