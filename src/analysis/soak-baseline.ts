/**
 * A baseline sampled before the procedure stops it: where no instance of a canary's type serves
 * the old release during the soak (the live system on hosts: the seed's procedure stops every
 * instance before the controller starts), the canary is judged against its type's own instances
 * as they were before the stop. Every instance of each soaked type is read every interval, as
 * many samples as the soak will take, all types at once, while everything still runs the old
 * release; the values are journaled with the step (`once`: a resume judges against them and does
 * not sample again). What a before/after comparison cannot tell: a load that changed between the
 * two windows (an evening's streams against a morning's) reads as the release's doing.
 */
import { z } from 'zod'
import type { Journal } from '../runs/journal.ts'
import { defineStep, type Step } from '../runs/step.ts'
import type { AnalysisMetric, AnalysisSettings } from '../config/analysis.ts'
import { metricSampler, type AnalysisInstance } from './analysis-samplers.ts'
import { showDuration, type SoakSubject } from './canary-soak.ts'
import { appendProgress, earlierSamples } from './soak-progress.ts'
import { runSoak, samplesOf } from './soak.ts'

/** One type sampled before the stop: its instances and the metrics the stack declares for it. */
export interface BaselineGroup {
  key: string
  instances: AnalysisInstance[]
  metrics: AnalysisMetric[]
}

const point = z.tuple([z.number(), z.number()])

/** The step's journaled data: each type's values and chart points per metric. */
export const baselineDataSchema = z.looseObject({
  samples: z.number().int().min(0),
  groups: z.record(
    z.string(),
    z.object({
      instances: z.array(z.string()).max(10_000),
      values: z.record(z.string(), z.array(z.number()).max(1_000_000)),
      series: z.record(z.string(), z.array(point).max(10_000)),
    }),
  ),
})
export type BaselineData = z.infer<typeof baselineDataSchema>

/** A group's metric as the shared soak names it: `<type>/<metric>`, so types may declare the same names. */
const keyed = (g: BaselineGroup, m: AnalysisMetric): AnalysisMetric => ({ ...m, name: `${g.key}/${m.name}` })

/**
 * The step sampling `groupsOf(ctx)` before the stop (nothing to do when it gives none):
 * `journalOf`, `settingsOf` and `soakMsOf` as for the soak step.
 */
export function baselineStep<C>(options: {
  id: string
  journalOf: (ctx: C) => Journal
  settingsOf: (ctx: C) => AnalysisSettings
  soakMsOf: (ctx: C) => number
  groupsOf: (ctx: C) => BaselineGroup[]
}): Step<C, [], BaselineData> {
  const plan = (ctx: C) => {
    const settings = options.settingsOf(ctx)
    const groups = options.groupsOf(ctx)
    const metrics = groups.flatMap((g) => g.metrics.map((m) => keyed(g, m)))
    const instances = groups.flatMap((g) => g.instances.map((i) => ({ ...i, side: 'baseline' as const })))
    return { settings, groups, metrics, sampler: metricSampler(metrics, instances, settings.prometheus?.url) }
  }
  return defineStep<C, [], BaselineData>({
    id: options.id,
    title: "soak baseline: each soaked type's instances on the old release, before the stop, for its canary's soak to be judged against",
    once: true,
    data: baselineDataSchema,
    describe(ctx) {
      const { settings, groups, sampler } = plan(ctx)
      const who = groups.flatMap((g) => g.instances.map((i) => i.name)).join(', ')
      return [`for ${showDuration(options.soakMsOf(ctx))}, every ${settings.interval}: ${who} (baseline)`, ...sampler.describe()]
    },
    // The dry run: the samples it would take, none read.
    preview(ctx) {
      const { settings, groups } = plan(ctx)
      const empty = { values: {}, series: {} }
      const groupsData = Object.fromEntries(groups.map((g) => [g.key, { instances: g.instances.map((i) => i.name), ...empty }]))
      return Promise.resolve({ data: { samples: samplesOf(options.soakMsOf(ctx), settings).of, groups: groupsData } })
    },
    async act(ctx) {
      const { settings, groups, metrics, sampler } = plan(ctx)
      const journal = options.journalOf(ctx)
      const earlier = earlierSamples(journal, options.id)
      const result = await runSoak({
        soakMs: options.soakMsOf(ctx),
        settings,
        rules: metrics,
        samplers: [sampler],
        ...(earlier ? { earlier } : {}),
        onSample: (p) => appendProgress(journal, options.id, p, `sample ${p.sample} of ${p.of}`),
      })
      const data: BaselineData = {
        samples: result.samples,
        groups: Object.fromEntries(
          groups.map((g) => [
            g.key,
            {
              instances: g.instances.map((i) => i.name),
              values: Object.fromEntries(g.metrics.map((m) => [m.name, result.values[keyed(g, m).name]?.baseline ?? []])),
              series: Object.fromEntries(g.metrics.map((m) => [m.name, result.series[keyed(g, m).name]?.baseline ?? []])),
            },
          ]),
        ),
      }
      return { data }
    },
  })
}

/** The baseline of type `key` from the step's data, as the soak takes it; undefined when it was not sampled. */
export function priorOf(data: BaselineData | undefined, key: string): SoakSubject['before'] {
  const group = data?.groups[key]
  return group && data ? { ...group, samples: data.samples } : undefined
}
