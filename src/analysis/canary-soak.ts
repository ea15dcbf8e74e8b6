/**
 * The soak as a step of a run, for any system: planned (the dry run lists every request it would
 * make each interval), journaled (`soak`, once: a resumed run that finished it does not soak again;
 * one killed during it goes on from the samples it journaled, soak-progress.ts), and acted on: a
 * pass lets the rollout go on; a fail is the canary's failure (thrown: the failure policy rolls
 * back, exit 4), naming the metric with both sides' figures; an inconclusive or marginal verdict
 * waits for a person (`runs promote|abort`, the pause after the canary) when
 * `analysis.inconclusive` is `wait`, else fails. Never a pass without the figures for one. Where no
 * baseline instance serves during the soak, a system may give the baseline it sampled before it
 * stopped them (`before`, soak-baseline.ts): the canary is then judged against its type's own
 * figures from before the stop.
 */
import { z } from 'zod'
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { Journal } from '../runs/journal.ts'
import { defineStep, type Step } from '../runs/step.ts'
import type { AnalysisSettings } from '../config/analysis.ts'
import type { MetricRule } from './analysis-verdict.ts'
import type { Sampler } from './analysis-samplers.ts'
import { appendProgress, earlierSamples } from './soak-progress.ts'
import { intervalOf, runSoak, type EarlierSamples, type PriorBaseline, type SoakResult } from './soak.ts'

/** The journal's name of the soak. */
export const SOAK_STEP = 'soak'

/** The report section the soak's entries feed (src/analysis/soak-report.ts). */
export const SOAK_REPORT = 'canary-analysis'

/** What a system gives the soak for one canary: who is compared, how each metric is read and judged. */
export interface SoakSubject {
  /** The canary's and the baseline's names, as the run names them. */
  canary: string[]
  baseline: string[]
  rules: MetricRule[]
  /** What is read each interval: the canary and the baseline, or only the canary when `before` is given. */
  samplers: Sampler[]
  /** The baseline sampled before the stop (the instances it read, how many samples), judged instead of one read during the soak. */
  before?: PriorBaseline & { instances: string[]; samples: number }
}

/** The step's journaled data: what a resume and the rollout read back. */
export const soakDataSchema = z.looseObject({
  outcome: z.enum(['pass', 'marginal', 'fail', 'inconclusive']),
  score: z.number().nullable(),
  /** A person decides (inconclusive or marginal, with `inconclusive: wait`). */
  wait: z.boolean(),
})
export type SoakData = z.infer<typeof soakDataSchema>

/** A soak's length as a person writes it: `10m`, `40s`. */
export const showDuration = (ms: number): string => (ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`)

/**
 * The soak step of a system whose context is `C`: `subjectOf` builds what is compared from the
 * run's context and the rollout's canary and baseline hosts; `journalOf` and `settingsOf` read the
 * run's journal and the stack's analysis settings; `soakMsOf` the run's soak.
 */
export function soakStep<C, H extends { name: string }>(options: {
  /** The journal's name of this soak (default `soak`): a run that soaks several canaries names each. */
  id?: string
  journalOf: (ctx: C) => Journal
  settingsOf: (ctx: C) => AnalysisSettings
  soakMsOf: (ctx: C) => number
  subjectOf: (ctx: C, canary: H[], baseline: H[]) => SoakSubject
}): Step<C, [H[], H[]], SoakData> {
  return defineStep<C, [H[], H[]], SoakData>({
    id: options.id ?? SOAK_STEP,
    title: 'soak: the canary against the hosts still on the old release, judged metric by metric',
    once: true,
    report: SOAK_REPORT,
    data: soakDataSchema,
    describe(ctx, canary, baseline) {
      const settings = options.settingsOf(ctx)
      const subject = options.subjectOf(ctx, canary, baseline)
      const soakMs = options.soakMsOf(ctx)
      const head = `for ${showDuration(soakMs)}, every ${settings.interval}: ${subject.canary.join(', ')} (canary) against ${againstWhom(subject, 'no baseline host')} (baseline)`
      const rules = subject.rules.map(
        (r) =>
          `judge ${r.name}: ${r.direction} is better, tolerance ${r.tolerance * 100} %${r.floor ? `, floor ${r.floor}` : ''}${r.critical ? ', critical' : ''}`,
      )
      const verdict = `Mann-Whitney U (alpha ${settings.alpha}) per metric; pass at score ${settings.thresholds.pass}, marginal at ${settings.thresholds.marginal}; inconclusive or marginal: ${settings.inconclusive === 'wait' ? 'wait for svcops runs promote|abort ID' : 'fail and roll back'}`
      return [head, ...subject.samplers.flatMap((s) => s.describe()), ...rules, verdict]
    },
    async act(ctx, canary, baseline) {
      const settings = options.settingsOf(ctx)
      const subject = options.subjectOf(ctx, canary, baseline)
      const journal = options.journalOf(ctx)
      const soakMs = options.soakMsOf(ctx)
      const who = subject.canary.join(', ')
      events.info(
        `Soak: the canary (${who}) against ${againstWhom(subject, 'no baseline')} for ${showDuration(soakMs)}, a sample every ${settings.interval}.`,
      )
      const result: SoakResult =
        subject.baseline.length || subject.before
          ? await runSoak({
              soakMs,
              settings,
              rules: subject.rules,
              samplers: subject.samplers,
              ...(subject.before ? { prior: subject.before } : {}),
              ...earlierOf(journal, options.id ?? SOAK_STEP),
              onSample: (p) =>
                appendProgress(
                  journal,
                  options.id ?? SOAK_STEP,
                  p,
                  `sample ${p.sample} of ${p.of}: ${p.verdict.outcome}${p.verdict.score !== null ? `, score ${p.verdict.score}` : ''}; ${p.verdict.metrics.map((m) => `${m.name} ${m.outcome} (canary ${show(m.canary.median)}, baseline ${show(m.baseline.median)})`).join('; ')}`,
                  { outcome: p.verdict.outcome, score: p.verdict.score, metrics: p.verdict.metrics },
                  SOAK_REPORT,
                ),
            })
          : noBaseline(soakMs, intervalOf(settings), subject.rules)
      const { verdict } = result
      const wait = (verdict.outcome === 'inconclusive' || verdict.outcome === 'marginal') && settings.inconclusive === 'wait'
      // Every value stays out of the journal: the chart's points and the comparisons say what was seen.
      const { values: _values, ...kept } = result
      const data = { outcome: verdict.outcome, score: verdict.score, wait, result: kept }
      events.info(`Canary analysis: ${verdict.outcome}${verdict.score !== null ? ` (score ${verdict.score})` : ''}: ${verdict.reason}.`)
      if (verdict.outcome === 'pass' || wait) return { data }
      // The figures go in the journal before the failure, for the report's charts.
      journal.append({
        step: options.id ?? SOAK_STEP,
        status: 'start',
        report: SOAK_REPORT,
        detail: `verdict: ${verdict.outcome}`,
        data: { final: data },
      })
      const why =
        verdict.outcome === 'fail'
          ? `the canary (${who}) failed its analysis after ${result.samples} samples: ${verdict.reason}`
          : `the canary's analysis (${who}) was ${verdict.outcome}: ${verdict.reason}; svcops:upgrade.analysis.inconclusive is fail`
      throw new CanaryAnalysisFailure(`Canary analysis: ${why}.`)
    },
  })
}

/** The canary failed its analysis: the rollout's canary failure (rolled back as one). */
export class CanaryAnalysisFailure extends OperationError {
  constructor(message: string) {
    super(message, 'See the report: each metric, canary against baseline, over the soak.')
  }
}

/** The samples a killed run's soak had journaled, counted by its resume. */
function earlierOf(journal: Journal, step: string): { earlier?: EarlierSamples } {
  const earlier = earlierSamples(journal, step)
  if (!earlier) return {}
  events.info(`Soak: resumed after ${earlier.samples} samples journaled before the interruption.`)
  return { earlier }
}

/** Who the canary is compared with: the baseline instances during the soak, or the type's instances before the stop. */
function againstWhom(subject: SoakSubject, none: string): string {
  const { before } = subject
  if (before) return `${before.instances.join(', ')} before the stop, ${before.samples} samples`
  return subject.baseline.join(', ') || none
}

const show = (v: number | null): string => (v === null ? '-' : Number.isInteger(v) ? String(v) : v.toPrecision(3))

function noBaseline(soakMs: number, intervalMs: number, rules: MetricRule[]): SoakResult {
  const reason = 'no baseline: no host of the run stays on the old release during the soak'
  return {
    verdict: { outcome: 'inconclusive', score: null, metrics: [], reason },
    samples: 0,
    soakMs,
    intervalMs,
    series: Object.fromEntries(rules.map((r) => [r.name, { canary: [], baseline: [] }])),
    gaps: {},
    values: {},
  }
}
