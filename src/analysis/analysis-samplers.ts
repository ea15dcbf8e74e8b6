/**
 * Where a soak's samples come from, one reading per metric, instance and interval: Prometheus'
 * query API (`GET <prometheus.url>/api/v1/query`, an instant vector summed) when the stack names a
 * Prometheus, else each instance's own exposition read directly (the metric's series summed); a
 * counter becomes its increase per second since the instance's previous reading. A source that
 * does not answer gives no reading (never a zero): the metric then lacks samples and the analysis
 * is inconclusive, never a pass. Each source says, for the dry run, the exact requests it would make.
 */
import { z } from 'zod'
import { errorMessage } from '../core/errors.ts'
import { parseAnswer, sendRequest } from '../core/http.ts'
import type { AnalysisMetric } from '../config/analysis.ts'

export type Side = 'canary' | 'baseline'

/** One instance compared: a host's service or a live component on its host. */
export interface AnalysisInstance {
  name: string
  side: Side
  /** Its exposition's URL, for metrics read directly. */
  metricsUrl?: string
  /** How Prometheus labels it (`instance`, the scrape target's host:port), for `$instance` in queries. */
  promInstance?: string
}

/** One value of one metric on one instance at one sample. */
export interface Reading {
  metric: string
  side: Side
  instance: string
  value: number
}

/** What a sample could not read, by metric: the reason the analysis may end inconclusive. */
export interface SampleGap {
  metric: string
  instance: string
  reason: string
}

/** A source of readings, asked once per interval. */
export interface Sampler {
  /** The requests it makes each interval, for the dry run. */
  describe(): string[]
  sample(): Promise<{ readings: Reading[]; gaps: SampleGap[] }>
}

/** `$instance` filled with the instance's label value (PromQL string-escaped). */
export function fillQuery(query: string, instance: string): string {
  return query.replaceAll('$instance', instance.replace(/\\/g, '\\\\').replace(/"/g, '\\"'))
}

const promAnswer = z.object({
  status: z.literal('success'),
  data: z.object({
    resultType: z.string(),
    result: z.array(z.object({ metric: z.record(z.string(), z.string()), value: z.tuple([z.number(), z.string()]) })),
  }),
})

/** The query URL of one metric on one instance. */
function queryUrl(base: string, query: string, instance: string): string {
  return `${base.replace(/\/+$/, '')}/api/v1/query?query=${encodeURIComponent(fillQuery(query, instance))}`
}

/** Sum of the values of a Prometheus text exposition's series named `name` (any labels); undefined when absent. */
export function sumExposed(text: string, name: string): number | undefined {
  let sum: number | undefined
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line)
    if (!m || m[1] !== name) continue
    const value = Number(m[3])
    if (!Number.isFinite(value)) continue
    sum = (sum ?? 0) + value
  }
  return sum
}

/**
 * The declared metrics of `instances`: through Prometheus when `prometheusUrl` is given (a metric
 * with `query`), else read from each instance's exposition (a metric with `metric`).
 */
export function metricSampler(metrics: AnalysisMetric[], instances: AnalysisInstance[], prometheusUrl: string | undefined): Sampler {
  const previous = new Map<string, { value: number; at: number }>()
  /** A counter's increase per second since the instance's last reading (none at the first, nor after a reset). */
  const rate = (m: AnalysisMetric, inst: AnalysisInstance, value: number): number | undefined => {
    if (!m.counter) return value
    const key = `${m.name}\u0000${inst.name}`
    const now = Date.now()
    const before = previous.get(key)
    previous.set(key, { value, at: now })
    if (!before || value < before.value || now <= before.at) return undefined
    return ((value - before.value) * 1000) / (now - before.at)
  }
  return {
    describe() {
      const lines: string[] = []
      for (const m of metrics)
        for (const inst of instances) {
          if (m.query !== undefined && prometheusUrl !== undefined)
            lines.push(`${m.name} (${inst.side} ${inst.name}): GET ${queryUrl(prometheusUrl, m.query, inst.promInstance ?? inst.name)}`)
          else if (m.metric !== undefined)
            lines.push(
              `${m.name} (${inst.side} ${inst.name}): GET ${inst.metricsUrl ?? '(no metrics URL)'}, ${m.metric}${m.counter ? ' per second' : ''}`,
            )
        }
      return lines
    },
    async sample() {
      const readings: Reading[] = []
      const gaps: SampleGap[] = []
      const exposition = new Map<string, Promise<string>>()
      const expositionOf = (url: string): Promise<string> => {
        let p = exposition.get(url)
        if (!p) {
          p = sendRequest({ peer: 'live-check', method: 'GET', url, headers: { accept: 'text/plain' } }).then((r) => {
            if (r.status !== 200) throw new Error(`GET ${url} answered ${r.status}`)
            return typeof r.body === 'string' ? r.body : ''
          })
          exposition.set(url, p)
        }
        return p
      }
      await Promise.all(
        metrics.flatMap((m) =>
          instances.map(async (inst) => {
            let value: number | undefined
            try {
              if (m.query !== undefined && prometheusUrl !== undefined) {
                const r = await sendRequest({
                  peer: 'prometheus',
                  method: 'GET',
                  url: queryUrl(prometheusUrl, m.query, inst.promInstance ?? inst.name),
                })
                if (r.status !== 200) throw new Error(`Prometheus answered ${r.status}`)
                const answer = parseAnswer(promAnswer, r.body, "Prometheus' query answer")
                if (answer.data.result.length === 0) throw new Error('the query returned no series')
                value = answer.data.result.reduce((a, s) => a + Number(s.value[1]), 0)
              } else if (m.metric !== undefined && inst.metricsUrl !== undefined) {
                value = sumExposed(await expositionOf(inst.metricsUrl), m.metric)
                if (value === undefined) throw new Error(`${m.metric} is not exposed`)
              } else throw new Error('no source for it (neither a query with prometheus.url nor a metric with a metrics URL)')
            } catch (error) {
              gaps.push({ metric: m.name, instance: inst.name, reason: errorMessage(error) })
              return
            }
            if (!Number.isFinite(value)) return
            const v = rate(m, inst, value)
            if (v !== undefined) readings.push({ metric: m.name, side: inst.side, instance: inst.name, value: v })
          }),
        ),
      )
      return { readings, gaps }
    },
  }
}
