/**
 * A soak's progress in the journal: one entry per sample (`runs watch` shows its detail) holding
 * that sample's readings, so a run killed midway resumes the soak counting the samples it had
 * taken (soak.ts, `earlier`). The journal can be written by others: an entry of another shape is
 * refused, naming it, never followed.
 */
import { z } from 'zod'
import { OperationError } from '../core/errors.ts'
import type { Journal } from '../runs/journal.ts'
import type { EarlierSamples, SoakProgress, TimedReading } from './soak.ts'

const readingSchema = z.object({
  metric: z.string(),
  side: z.enum(['canary', 'baseline']),
  value: z.number(),
  at: z.number(),
})
// An entry without readings (a run of an earlier svcops) is not counted: its samples are taken again.
const progressSchema = z.looseObject({ sample: z.number().int().min(1), readings: z.array(readingSchema).max(100_000).optional() })

/** The journal's progress entry of one sample of step `step` (its `start` status: the step is still running). */
export function appendProgress(
  journal: Journal,
  step: string,
  p: SoakProgress,
  detail: string,
  extra: Record<string, unknown> = {},
  report?: string,
): void {
  const readings: TimedReading[] = p.readings
  journal.append({
    step,
    status: 'start',
    ...(report ? { report } : {}),
    detail,
    data: { progress: { sample: p.sample, of: p.of, ...extra, readings } },
  })
}

/** The samples step `step` journaled before this attempt (a killed run's), or undefined when none. */
export function earlierSamples(journal: Journal, step: string): EarlierSamples | undefined {
  const readings: TimedReading[] = []
  let samples = 0
  for (const e of journal.entries()) {
    if (e.step !== step || e.status !== 'start' || e.data?.progress === undefined) continue
    const parsed = progressSchema.safeParse(e.data.progress)
    if (!parsed.success)
      throw new OperationError(
        `Run ${journal.run.id}: the journal's progress entry of step ${step} at ${e.time} is refused (${parsed.error.issues[0]?.message ?? 'invalid'}); svcops did not write it so, and does not follow it.`,
        `Look at the run: svcops runs show ${journal.run.id}`,
      )
    if (!parsed.data.readings) continue
    samples = Math.max(samples, parsed.data.sample)
    readings.push(...parsed.data.readings)
  }
  return samples ? { samples, readings } : undefined
}
