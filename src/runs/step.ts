/**
 * A step of a playbook, declared once. The same declaration gives the run (`act`), the dry run
 * (`describe`: what it would do, with the exact commands, built by the same drivers `act` calls),
 * the journal's name for it, and the facts the failure policy needs (`disruptive`: from this step
 * on, a failure means a rollback, not "nothing changed").
 *
 *   export const stopService = defineStep({
 *     id: 'stop',
 *     title: 'stop the service',
 *     disruptive: true,
 *     describe: (ctx, h) => [showCommand(ctx.svc.stopCommand(h.config, ctx.settings.service))],
 *     act: async (ctx, h) => { await stopService(...); return { changed: ['stopped ...'] } },
 *   })
 */

import type { z } from 'zod'
import { BadInputError } from '../core/errors.ts'

/** What a step reports back: what it changed, facts for later steps, or why it had nothing to do. */
export interface StepResult {
  changed?: string[]
  data?: Record<string, unknown>
  /** The step had nothing to do (already done); the reason. */
  skipped?: string
}

/**
 * What a step's finished entry feeds in the run's report: `verified` ends its target's downtime
 * (the engine's own: the downtime runs from a disruptive step's start to it); any other value names
 * a section a system contributes (src/reports/report-section.ts), read from the journal by that name,
 * never by the step's.
 */
export type StepReport = string

/** The report value of a step whose success ends its target's downtime. */
export const VERIFIED: StepReport = 'verified'

/** A step's name in the journal: `stop`, or `rollback:stop` inside the rollback phase. */
export type StepName = `${PhasePrefix}${string}`

/** The phases of a run; a step keeps its id and gets the phase's prefix in the journal. */
export const Phase = { run: '', rollback: 'rollback:', hostRollback: 'host-rollback:' } as const
export type PhasePrefix = (typeof Phase)[keyof typeof Phase]

/**
 * One step. `C` is the playbook's context, `A` the step's arguments (a host step takes the host
 * first), `D` the shape of its journaled `data`. `act` must be idempotent when the step is not
 * `once`: a resumed run repeats it.
 */
export interface Step<C, A extends unknown[] = [], D extends Record<string, unknown> = Record<string, unknown>> {
  /** The step's name in the journal, the report and the progress display. */
  readonly id: string
  /** What it does, in a few words, for the dry run and the help. */
  readonly title: string
  /** It makes the service unavailable (a stop): a failure after it is rolled back. */
  readonly disruptive?: boolean
  /** What its finished entry adds to the report (read from the journal, never by the step's name). */
  readonly report?: StepReport
  /** Journaled once per run: on resume a finished step is not run again and its result is reused. */
  readonly once?: boolean
  /**
   * The shape of the `data` its finished entry holds, for a step whose data a resume or a rollback
   * reads: a journal kept with the environment can be written by others, so an entry that does not
   * match is refused (`stepData`), never followed.
   */
  readonly data?: z.ZodType<D>
  /** What it would do: the exact commands and calls, from the same drivers `act` uses. */
  describe(ctx: C, ...args: A): string[] | Promise<string[]>
  /** Does it. Throws to fail the step (the error's message is the journal's detail). */
  act(ctx: C, ...args: A): Promise<StepResult>
  /**
   * In the dry run: what the step can learn without changing anything (installed versions, the
   * schema fingerprint, the journal's decision), so later steps describe what they would really do.
   */
  preview?(ctx: C, ...args: A): Promise<StepResult>
}

/** Declares a step (typed: the context, the arguments and the data's shape are checked where it is used). */
export function defineStep<C, A extends unknown[] = [], D extends Record<string, unknown> = Record<string, unknown>>(
  step: Step<C, A, D>,
): Step<C, A, D> {
  return step
}

/** A finished journal entry as a step's reader sees it. */
export interface FinishedEntry {
  step: string
  host?: string
  data?: Record<string, unknown>
}

/** What a reader of step data needs of a journal: the run's id and a step's last finished entry. */
export interface FinishedSteps {
  readonly run: { readonly id: string }
  finished(step: string, host?: string): FinishedEntry | undefined
}

/**
 * The data of `entry` (a finished entry of `step` in run `runId`) checked by the step's schema; a
 * step without one gives its data as it is. An entry that does not match is refused with one
 * sentence naming the run, the step and the field, never followed.
 */
export function stepData<D extends Record<string, unknown>>(
  step: Pick<Step<never, never[], D>, 'id' | 'data'>,
  entry: FinishedEntry,
  runId: string,
): D {
  const data = entry.data ?? {}
  if (!step.data) return data as D
  const parsed = step.data.safeParse(data)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]
  const field = ['data', ...(issue?.path ?? []).map(String)].join('.')
  throw new BadInputError(
    `Run ${runId}: the journal's entry of step ${entry.step}${entry.host ? ` on ${entry.host}` : ''} is refused: ${field}: ${issue?.message ?? 'invalid'}; svcops did not write it so, and does not follow it.`,
    `Look at the run: svcops runs show ${runId} (its journal was changed by something other than svcops).`,
  )
}

/** The checked data of `step`'s last finished entry (in `phase`, on `host`), or undefined when it has not finished. */
export function finishedData<D extends Record<string, unknown>>(
  journal: FinishedSteps,
  step: Pick<Step<never, never[], D>, 'id' | 'data'>,
  where: { phase?: PhasePrefix; host?: string } = {},
): D | undefined {
  const entry = journal.finished(stepName(step, where.phase), where.host)
  return entry ? stepData(step, entry, journal.run.id) : undefined
}

/** The journal name of `step` in `phase`. */
export function stepName(step: Pick<Step<never, never[]>, 'id'>, phase: PhasePrefix = Phase.run): StepName {
  return `${phase}${step.id}`
}
