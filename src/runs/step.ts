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
 * first). `act` must be idempotent when the step is not `once`: a resumed run repeats it.
 */
export interface Step<C, A extends unknown[] = []> {
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

/** Declares a step (typed: the context and the arguments are checked where it is used). */
export function defineStep<C, A extends unknown[] = []>(step: Step<C, A>): Step<C, A> {
  return step
}

/** The journal name of `step` in `phase`. */
export function stepName(step: Pick<Step<never, never[]>, 'id'>, phase: PhasePrefix = Phase.run): StepName {
  return `${phase}${step.id}`
}
