/**
 * `svcops:upgrade.analysis`: how the canary is judged against the hosts still on the old release
 * during a soak (Kayenta's canary config, Argo Rollouts' AnalysisTemplate). Declared by the stack,
 * as every interface svcops relies on: the metrics per system or component type (a PromQL query
 * when `prometheus.url` is set, else a metric name read from each instance's own exposition), each
 * with its direction, tolerance and whether it is critical; the score thresholds; and what an
 * inconclusive analysis does. Durations are written as `--window` is: `10m`, `30s`, `1h30m`.
 *
 * The stack's schema (src/config/schema.ts) takes it from here.
 */
import { z } from 'zod'
import { durationMs } from './soak-duration.ts'

const duration = z.string().refine((t) => durationMs(t) !== undefined, 'expected a duration like 10m, 30s or 1h30m')

/** One metric compared between the canary and the baseline. */
export const analysisMetricSchema = z
  .strictObject({
    /** How the metric is named in the run's output, its report and its verdict. */
    name: z.string().regex(/^[A-Za-z0-9_.:-]+$/, 'expected letters, digits, "_", ".", ":" or "-"'),
    /**
     * PromQL asked of `prometheus.url` per instance: `$instance` is replaced by the instance's
     * `host:port` as Prometheus labels it (its scrape target). Needs `prometheus.url`.
     */
    query: z.string().min(1).optional(),
    /** A metric name read from each instance's exposition directly (no Prometheus): the sum of its series. */
    metric: z
      .string()
      .regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/, 'expected a Prometheus metric name')
      .optional(),
    /** A counter: the analysis compares its increase per second between samples, not its value. */
    counter: z.boolean().default(false),
    /** Which way is better. */
    direction: z.enum(['lower', 'higher']).default('lower'),
    /** How much worse than the baseline's median the canary may be, as a fraction of it (0.1 = 10 %). */
    tolerance: z.number().min(0).default(0.1),
    /** A difference smaller than this, in the metric's own unit, is never a failure (noise a person would not notice). */
    floor: z.number().min(0).default(0),
    /** A failed critical metric fails the analysis whatever the score. */
    critical: z.boolean().default(false),
  })
  .refine((m) => (m.query === undefined) !== (m.metric === undefined), {
    message: 'expected either query (asked of prometheus.url) or metric (read from the instances), not both, not neither',
  })

/** The metrics of each system or component type: `recording`, `ingest`, `pipeline`, `control-panel`, `system-controller`. */
export const analysisMetricsSchema = z.strictObject({
  recording: z.array(analysisMetricSchema).optional(),
  'system-controller': z.array(analysisMetricSchema).optional(),
  ingest: z.array(analysisMetricSchema).optional(),
  pipeline: z.array(analysisMetricSchema).optional(),
  'control-panel': z.array(analysisMetricSchema).optional(),
})

export const analysisSchema = z
  .strictObject({
    /** The soak every upgrade of this stack runs after its canary, unless `--soak` says otherwise. */
    soak: duration.optional(),
    /** How often each side is sampled (default 30s). */
    interval: duration.default('30s'),
    /** The fewest samples per side a metric needs to be judged; fewer: inconclusive (default 5). */
    minSamples: z.number().int().min(3).max(10_000).default(5),
    /** The one-sided significance level of the Mann-Whitney U test (default 0.05). */
    alpha: z.number().gt(0).lt(0.5).default(0.05),
    /** Score (share of the metrics that pass, 0-100) at or above which the canary passes, and at or above which it is marginal. */
    thresholds: z
      .strictObject({ pass: z.number().min(0).max(100).default(95), marginal: z.number().min(0).max(100).default(75) })
      .refine((t) => t.marginal <= t.pass, { message: 'expected marginal at most pass' })
      .prefault({}),
    /** What an inconclusive analysis (too few samples, Prometheus not answering, no baseline) does: wait for a person, or fail. */
    inconclusive: z.enum(['wait', 'fail']).default('fail'),
    /** svcops' own probes of the service (for the recording service: health, listing, a test write and read). */
    probes: z
      .strictObject({
        enabled: z.boolean().default(true),
        /** A probe's latency difference below this (ms) is never a failure. */
        latencyFloorMs: z.number().min(0).default(100),
        /** How much slower than the baseline the canary's probes may answer (1 = twice as slow). */
        latencyTolerance: z.number().min(0).default(1),
      })
      .prefault({}),
    /** Prometheus' HTTP API; without it the instances' expositions are read directly. */
    prometheus: z.strictObject({ url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }) }).optional(),
    /** Where a recording host's exposition answers, relative to its URL (an assumption of the site's; default /metrics). */
    recordingMetricsPath: z
      .string()
      .regex(/^\/[A-Za-z0-9._/-]*$/, 'expected a path like /metrics')
      .default('/metrics'),
    metrics: analysisMetricsSchema.prefault({}),
  })
  .superRefine((a, ctx) => {
    for (const [type, list] of Object.entries(a.metrics))
      for (const [i, m] of (list ?? []).entries())
        if (m.query !== undefined && !a.prometheus)
          ctx.addIssue({ code: 'custom', path: ['metrics', type, i, 'query'], message: 'expected prometheus.url to ask a query of' })
  })

export type AnalysisSettings = z.infer<typeof analysisSchema>
export type AnalysisMetric = z.infer<typeof analysisMetricSchema>
export type AnalysisSubject = keyof z.infer<typeof analysisMetricsSchema>

/** The settings a stack without `analysis` has: every default, no metric declared (the probes only). */
export function defaultAnalysis(): AnalysisSettings {
  return analysisSchema.parse({})
}

/** The soak of a run: `--soak` when given, else the stack's `analysis.soak`; undefined: no soak. */
export function soakOf(flagMs: number | undefined, settings: AnalysisSettings | undefined): number | undefined {
  if (flagMs !== undefined) return flagMs
  return settings?.soak !== undefined ? durationMs(settings.soak) : undefined
}
