/**
 * The soak as a step of a run, for any system: planned (the dry run lists every request it would
 * make each interval), journaled (`soak`, once: a resumed run that finished it does not soak again;
 * one that was killed during it soaks again from the start), and acted on: a pass lets the rollout
 * go on; a fail is the canary's failure (thrown: the failure policy rolls back, exit 4), naming the
 * metric with both sides' figures; an inconclusive or marginal verdict waits for a person
 * (`runs promote|abort`, the pause after the canary) when `analysis.inconclusive` is `wait`, else
 * fails. Never a pass without the figures for one.
 */
import { z } from 'zod'
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { Journal } from '../runs/journal.ts'
import { defineStep, type Step } from '../runs/step.ts'
import type { AnalysisSettings } from '../config/analysis.ts'
import type { MetricRule } from './analysis-verdict.ts'
import type { Sampler } from './analysis-samplers.ts'
import { intervalOf, runSoak, type SoakResult } from './soak.ts'

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
  samplers: Sampler[]
}

/** The step's journaled data: what a resume and the rollout read back. */
export const soakDataSchema = z.looseObject({
  outcome: z.enum(['pass', 'marginal', 'fail', 'inconclusive']),
  score: z.number().nullable(),
  /** A person decides (inconclusive or marginal, with `inconclusive: wait`). */
  wait: z.boolean(),
})
export type SoakData = z.infer<typeof soakDataSchema>

const seconds = (ms: number): string => (ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`)

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
      const head = `for ${seconds(soakMs)}, every ${settings.interval}: ${subject.canary.join(', ')} (canary) against ${subject.baseline.join(', ') || 'no baseline host'} (baseline)`
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
        `Soak: the canary (${who}) against ${subject.baseline.join(', ') || 'no baseline'} for ${seconds(soakMs)}, a sample every ${settings.interval}.`,
      )
      const result: SoakResult = subject.baseline.length
        ? await runSoak({
            soakMs,
            settings,
            rules: subject.rules,
            samplers: subject.samplers,
            onSample: (p) =>
              journal.append({
                step: options.id ?? SOAK_STEP,
                status: 'start',
                report: SOAK_REPORT,
                detail: `sample ${p.sample} of ${p.of}: ${p.verdict.outcome}${p.verdict.score !== null ? `, score ${p.verdict.score}` : ''}; ${p.verdict.metrics.map((m) => `${m.name} ${m.outcome} (canary ${show(m.canary.median)}, baseline ${show(m.baseline.median)})`).join('; ')}`,
                data: {
                  progress: { sample: p.sample, of: p.of, outcome: p.verdict.outcome, score: p.verdict.score, metrics: p.verdict.metrics },
                },
              }),
          })
        : noBaseline(soakMs, intervalOf(settings), subject.rules)
      const { verdict } = result
      const wait = (verdict.outcome === 'inconclusive' || verdict.outcome === 'marginal') && settings.inconclusive === 'wait'
      const data = { outcome: verdict.outcome, score: verdict.score, wait, result }
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
  }
}
