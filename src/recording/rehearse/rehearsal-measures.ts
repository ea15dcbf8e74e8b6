/**
 * What the recording rehearsal's procedure (playbooks/rehearse.ts) measures and what it makes of
 * it: each part of the rehearsed upgrade timed, and the prediction built from those measures (or
 * from the failure, with the service's log lines since its start) for the stack's batches and the
 * window; and the prediction a finished rehearsal run journaled, for the command's output.
 */
import { errorMessage } from '../../core/errors.ts'
import type { Run } from '../../runs/engine.ts'
import { predict, type Measures, type Prediction } from './prediction.ts'
import type { RehearsalContext } from './rehearsal-context.ts'
import { recordPrediction, type ProductionFacts } from './rehearsal-steps.ts'
import { productionBatches } from './rehearsal-system.ts'

/** How long `fn` took, in ms. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = Date.now()
  await fn()
  return Date.now() - started
}

/** The prediction from what was measured (or the failure, with the service's log lines since its start). */
export async function predictionOf(
  run: Run<RehearsalContext>,
  production: ProductionFacts | undefined,
  m: Measures,
  failure?: unknown,
): Promise<Prediction> {
  const { ctx } = run
  const record = ctx.journal.run
  const windowMs = record.params.deadline ? Date.parse(record.params.deadline) - Date.parse(record.startedAt) : undefined
  const logLines = failure === undefined ? [] : await ctx.platform.logsSinceStart(ctx.host).catch(() => [])
  return predict(m, {
    from: production?.from ?? '',
    to: record.targetVersion,
    fingerprint: production?.fingerprint ?? '',
    databaseBytes: production?.databaseBytes ?? 0,
    batches: productionBatches(ctx.production, record.params.batchSize),
    ...(windowMs !== undefined ? { windowMs } : {}),
    ...(record.params.fingerprintAfter ? { schemaChanged: record.params.fingerprintAfter !== record.params.fingerprintBefore } : {}),
    ...(failure === undefined ? {} : { failure: { cause: errorMessage(failure), logLines } }),
  })
}

/** The prediction a rehearsal run journaled, if it got that far. */
export function predictionOfRun(journal: { entries(): { step: string; data?: Record<string, unknown> }[] }): Prediction | undefined {
  return journal.entries().findLast((e) => e.step === recordPrediction.id && e.data)?.data as Prediction | undefined
}
