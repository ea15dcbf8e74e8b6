import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { BadInputError } from '../../src/core/errors.ts'
import { migrateMetricFiles, migrateMetricsText } from '../../src/releases/metrics.ts'

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8')
const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

/** The lines that differ between two texts with the same number of lines. */
function changedLines(before: string, after: string): number[] {
  const a = before.split('\n')
  const b = after.split('\n')
  expect(b.length).toBe(a.length)
  return a.flatMap((l, i) => (l === b[i] ? [] : [i + 1]))
}

describe('svcops migrate metrics: Prometheus rule file', () => {
  const text = fixture('ingest-rules.yaml')
  const result = migrateMetricsText(text, 'ingest-rules.yaml', '3.2.0', '6.0.0')

  it('rewrites only the expressions that use renamed or split metrics, every other line byte for byte', () => {
    expect(changedLines(text, result.after)).toEqual([7, 16, 17, 20])
  })

  it('rewrites a rate() of a split metric to the sum of the rates of both variants, keeping matchers and the by list', () => {
    expect(result.after.split('\n')[6]).toBe(
      '        expr: sum by (source, svc_ingest_source_dropped_frames) ((rate(svc_ingest_source_dropped_audio_frames{job="svc-ingest"}[5m]) + rate(svc_ingest_source_dropped_video_frames{job="svc-ingest"}[5m]))) > 0.5',
    )
  })

  it('keeps block scalars and single-quoted scalars in their own style', () => {
    const lines = result.after.split('\n')
    expect(lines[15]).toBe(
      '          (increase(svc_ingest_source_lost_audio_frames[10m]) + increase(svc_ingest_source_lost_video_frames[10m])) > 0',
    )
    expect(lines[16]).toBe(
      '            and on (source) (svc_ingest_source_lost_audio_frames offset 1h + svc_ingest_source_lost_video_frames offset 1h) == 0',
    )
    expect(lines[19]).toBe("        expr: 'max by (pipeline) (svc_pipeline_video_frames_in_queue) > 12'")
  })

  it('flags every split for review and names the rule and the line', () => {
    expect(result.changes.map((c) => [c.line, c.rule, Boolean(c.review)])).toEqual([
      [7, '6.0.0/dropped-frames', true],
      [16, '6.0.0/lost-frames', true],
      [17, '6.0.0/lost-frames', true],
      [20, '4.0.0/video-frames-in-queue', false],
    ])
  })

  it('reports, and does not rewrite, a non-linear function of a split metric', () => {
    expect(result.notRewritten.map((n) => [n.line, n.rule])).toEqual([[23, '6.0.0/duplicated-frames']])
    expect(result.notRewritten[0]?.reason).toMatch(/max_over_time\(\) of a sum is not the sum/)
  })

  it('leaves names in comments, annotations, string literals and label lists alone', () => {
    expect(result.after).toContain('# Alert rules of the ingest fleet. svc_ingest_source_dropped_frames in this comment stays as it is.')
    expect(result.after).toContain('summary: "svc_ingest_source_dropped_frames above 0.5/s')
    expect(result.after).toContain('"metric", "svc_ingest_source_lost_frames"')
    expect(result.after).toContain('sum by (source, svc_ingest_source_dropped_frames)')
  })

  it('writes a unified diff of exactly the changed lines', () => {
    expect(result.diff.split('\n').filter((l) => /^[-+][^-+]/.test(l))).toHaveLength(8)
    expect(result.diff).toContain('@@ -7,1 +7,1 @@')
  })

  it('changes nothing for a range that crosses no metric change', () => {
    expect(migrateMetricsText(text, 'ingest-rules.yaml', '6.0.0', '7.0.0')).toMatchObject({ changed: false, changes: [], diff: '' })
    expect(migrateMetricsText(text, 'ingest-rules.yaml', '2.0.0', '5.0.0').changes.map((c) => c.rule)).toEqual([
      '4.0.0/video-frames-in-queue',
    ])
  })
})

describe('svcops migrate metrics: Grafana dashboard', () => {
  const text = fixture('ingest-dashboard.json')
  const result = migrateMetricsText(text, 'ingest-dashboard.json', '3.0.0', '6.0.0')

  it('rewrites target expressions inside JSON strings, keeping the escaping, and nothing else', () => {
    expect(changedLines(text, result.after)).toEqual([11, 12])
    expect(result.after.split('\n')[10]).toContain(
      '"expr": "sum by (source) ((rate(svc_ingest_source_dropped_audio_frames{source=~\\"$source\\"}[$__rate_interval]) + rate(svc_ingest_source_dropped_video_frames{source=~\\"$source\\"}[$__rate_interval])))"',
    )
    expect(result.after.split('\n')[11]).toContain('"expr": "video_frames_in_queue{pipeline=\\"$pipeline\\"}"')
    expect(() => JSON.parse(result.after) as unknown).not.toThrow()
  })

  it('leaves the description alone and refuses label_values of a split metric', () => {
    expect(result.after).toContain('"description": "Frames dropped by the ingest (svc_ingest_source_dropped_frames)"')
    expect(result.notRewritten.map((n) => [n.line, n.rule])).toEqual([[20, '6.0.0/lost-frames']])
    expect(result.notRewritten[0]?.reason).toMatch(/label_values/)
  })
})

describe('svcops migrate metrics: bare PromQL and files', () => {
  it('rewrites bare PromQL with the configured product prefix', () => {
    const r = migrateMetricsText('acme_ingest_source_lost_frames > 0\nsvc_ingest_source_lost_frames\n', 'q.promql', '5.0.0', '6.0.0', {
      prefix: 'acme',
      dir: 'acme',
    })
    expect(r.after).toBe(
      '(acme_ingest_source_lost_audio_frames + acme_ingest_source_lost_video_frames) > 0\nsvc_ingest_source_lost_frames\n',
    )
  })

  it.each([
    ['a metric whose name only ends like a split one', 'svc_ingest_source_dropped_frames_total', 'svc_ingest_source_dropped_frames_total'],
    ['a function call of the same name', 'svc_ingest_source_lost_frames(x)', 'svc_ingest_source_lost_frames(x)'],
    [
      'a name in a backtick string',
      'label_replace(up, "a", `queueing_video_frames`, "", "")',
      'label_replace(up, "a", `queueing_video_frames`, "", "")',
    ],
    ['a rename prefixed by a component', 'svc_pipeline_queueing_video_frames', 'svc_pipeline_video_frames_in_queue'],
    ['a rename of another product', 'other_queueing_video_frames', 'other_queueing_video_frames'],
  ])('PromQL trap: %s', (_name, input, output) => {
    expect(migrateMetricsText(input, 'q.promql', '3.0.0', '6.0.0').after).toBe(output)
  })

  it('writes in place with --write and refuses a bad file before writing any', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcops-metrics-'))
    dirs.push(dir)
    const good = join(dir, 'rules.yaml')
    const bad = join(dir, 'broken.json')
    writeFileSync(good, fixture('ingest-rules.yaml'))
    writeFileSync(bad, '{ "panels": [ ')
    expect(() => migrateMetricFiles([good, bad], '3.0.0', '6.0.0', { write: true })).toThrow(BadInputError)
    expect(readFileSync(good, 'utf8')).toBe(fixture('ingest-rules.yaml'))
    migrateMetricFiles([good], '3.0.0', '6.0.0', { write: true })
    expect(readFileSync(good, 'utf8')).toContain('svc_pipeline_video_frames_in_queue')
  })
})
