/**
 * The step engine: runs a playbook's steps in one of two modes from the same code.
 *
 *   act   journals each step's start and end (synced, so a SIGKILL loses nothing), skips a `once`
 *         step the journal records as finished (resume), emits step events for the progress
 *         display, and marks disruptive steps so the failure policy knows what changed;
 *   plan  the dry run: each step describes what it would do with the exact commands, and may read
 *         (never change) what later steps need to say what they would really do.
 *
 * Fan-out lives here too: `everyHost` (all at once, the first failure reported after all ended)
 * and `rollout` (canary, batches, `--max-fail`, the maintenance window).
 */
import { InterruptedError, OperationError, SvcopsError, errorMessage, exitCodeFor, withFacts } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { interruptSignal } from '../core/lifecycle.ts'
import type { Journal } from './journal.ts'
import { waitForDecision, PAUSE_STEP } from './run-pause.ts'
import type { DecisionSource } from './run-decision.ts'
import { STEP_DEADLINE_MS } from './run-mirror.ts'
import { allOrFirstFailure, batchFitsWindow, runConcurrently } from './rollout.ts'
import type { SiteHook } from './site-steps.ts'
import { Phase, stepData, stepName, type PhasePrefix, type Step, type StepName, type StepResult } from './step.ts'

export type Mode = 'act' | 'plan'

/** One step of a dry run: where, what, and the exact commands or calls. */
export interface PlannedStep {
  step: StepName
  host?: string
  /** `canary`, `batch 1`, ... for the steps of a rollout. */
  batch?: string
  title: string
  actions: string[]
  /** The real run would stop here: why, the exit code it would end with, and the ids of what blocks it (gates). */
  blocked?: PlanBlocker
}

/** What a dry run found that would stop the real run at a step. */
export interface PlanBlocker {
  reason: string
  exitCode: number
  /** Ids a person acts on (a gate's id for --ack), when the refusal names some. */
  ids?: string[]
}

/** A step's refusal as the dry run records it: the real run's exit code, and the ids its facts name. */
function blockerOf(error: unknown): PlanBlocker {
  const facts = error instanceof SvcopsError ? error.facts : {}
  const listed = Array.isArray(facts.gates) ? (facts.gates as { id?: unknown }[]) : []
  const ids = listed.map((g) => g.id).filter((id): id is string => typeof id === 'string')
  return { reason: errorMessage(error), exitCode: exitCodeFor(error), ...(ids.length ? { ids } : {}) }
}

/** A host's step failed; what the failure policy needs to know about it. */
export class HostFailure extends OperationError {
  readonly host: string
  readonly step: string
  /** Data the service held was found missing: a restore is needed even if the schema did not change. */
  readonly dataLoss: boolean

  constructor(host: string, step: string, message: string, dataLoss = false) {
    super(message)
    this.host = host
    this.step = step
    this.dataLoss = dataLoss
  }
}

/**
 * The rollout ended with failed hosts that `--max-fail` tolerated: the run failed, and the hosts
 * stay as they are (each failed one was already put back on its own). No rollback follows.
 */
export class ToleratedFailures extends OperationError {}

/** How a rollout proceeds: batches in order, what it tolerates, and until when it may start one. */
export interface RolloutPolicy<H> {
  /** `[[canary], [batch 1...], ...]` (see `planBatches`). */
  batches: H[][]
  /** Failed hosts tolerated after the canary (`--max-fail`). */
  maxFail: number
  /** End of the maintenance window (ms since the epoch); no batch starts that would end after it. */
  deadline?: number
  /** Run before each batch (recording what is served before hosts stop). */
  beforeBatch?: (batch: H[]) => Promise<unknown>
  /** A failure `--max-fail` tolerates: put that one host back. */
  onTolerated?: (failure: HostFailure, host: H) => Promise<void>
  /** After the canary, wait for `svcops runs promote ID` (go on) or `svcops runs abort ID` (thrown: rolled back). */
  pauseAfterCanary?: boolean
  /**
   * After the verified canary, before batch 1: the soak's analysis of the canary against the hosts
   * still on the old release (src/analysis/). Throws when the canary fails it; `wait`: a person decides.
   */
  afterCanary?: (canary: H[], baseline: H[]) => Promise<{ wait: boolean }>
}

/** A run of a playbook in one mode, with its context `C` and journal, in one phase. */
export class Run<C> {
  readonly ctx: C
  readonly journal: Journal
  readonly mode: Mode
  readonly phase: PhasePrefix
  /** The dry run's steps, in order (shared by the phases of one run). */
  readonly planned: PlannedStep[]
  /** Continued from its journal (`svcops resume`): the maintenance window no longer applies. */
  readonly resumed: boolean
  private batch: string | undefined
  /** A failed write of the environment's copy said during a rollback (once). */
  private copyFailureSaid = false
  /** The site's steps hooked onto this run's steps (playbooks/site/), and those already run. */
  private site: readonly SiteHook<C>[] = []
  private readonly fired = new Map<SiteHook<C>, Promise<unknown>>()
  /** Where a pause after the canary looks for a person's decision (run-decision.ts). */
  private readonly decisions: DecisionSource | undefined
  /** Asked at each step boundary: why the run's lock is no longer its own (`HeldLock.lost`), then it stops. */
  private readonly lockLost: (() => Promise<string | undefined>) | undefined

  constructor(
    ctx: C,
    journal: Journal,
    options: {
      mode: Mode
      phase?: PhasePrefix
      planned?: PlannedStep[]
      resumed?: boolean
      decisions?: DecisionSource
      lockLost?: () => Promise<string | undefined>
    },
  ) {
    this.ctx = ctx
    this.journal = journal
    this.mode = options.mode
    this.phase = options.phase ?? Phase.run
    this.planned = options.planned ?? []
    this.resumed = options.resumed ?? false
    this.decisions = options.decisions
    this.lockLost = options.lockLost
  }

  /** True in the dry run. */
  get planning(): boolean {
    return this.mode === 'plan'
  }

  /** The same run in another phase (the rollback's steps are journaled as `rollback:<step>`). */
  inPhase(phase: PhasePrefix): Run<C> {
    return new Run(this.ctx, this.journal, {
      mode: this.mode,
      phase,
      planned: this.planned,
      resumed: this.resumed,
      ...(this.decisions ? { decisions: this.decisions } : {}),
      ...(this.lockLost ? { lockLost: this.lockLost } : {}),
    })
  }

  /** Runs a step of the whole run. */
  step<A extends unknown[]>(step: Step<C, A>, ...args: A): Promise<StepResult> {
    return this.hooked(step.id, () => this.execute(step, undefined, args))
  }

  /** Runs a step on one host (the host is the step's first argument). */
  onHost<H extends { name: string }, A extends unknown[]>(host: H, step: Step<C, [H, ...A]>, ...args: A): Promise<StepResult> {
    return this.hooked(step.id, () => this.execute(step, host.name, [host, ...args]))
  }

  /** Hooks the site's steps onto this run's (src/runs/site-steps.ts); the rollback phase runs none. */
  withSiteSteps(hooks: readonly SiteHook<C>[]): this {
    this.site = this.phase === Phase.run ? hooks : []
    return this
  }

  /** Runs the undo of every site step this run finished, the latest first (in the rollback phase). */
  async undoSiteSteps(hooks: readonly SiteHook<C>[]): Promise<void> {
    const done = hooks.filter((h) => h.step.undo && this.journal.finished(stepName(h.step), undefined) !== undefined)
    for (const h of done.reverse()) if (h.step.undo) await this.execute(h.step.undo, undefined, [])
  }

  /** Runs `fn` between the site steps hooked before and after step `id`, each once per run. */
  private async hooked(id: string, fn: () => Promise<StepResult>): Promise<StepResult> {
    await this.runSiteSteps('before', id)
    const result = await fn()
    await this.runSiteSteps('after', id)
    return result
  }

  private async runSiteSteps(when: SiteHook<C>['when'], id: string): Promise<void> {
    for (const h of this.site) {
      if (h.when !== when || h.at.id !== id) continue
      // Hosts run at once: the first one runs the hook, the others wait for it (and its failure).
      if (!this.fired.has(h)) this.fired.set(h, this.execute(h.step, undefined, []))
      await this.fired.get(h)
    }
  }

  /** True when the journal records `step` (in this phase) as finished, on `host` if given. */
  finished(step: Pick<Step<never, never[]>, 'id'>, host?: string): boolean {
    return this.journal.finished(stepName(step, this.phase), host) !== undefined
  }

  private async execute<A extends unknown[]>(step: Step<C, A>, host: string | undefined, args: A): Promise<StepResult> {
    const name = stepName(step, this.phase)
    const at = host ? { host } : {}
    if (this.planning) {
      const done = step.once ? this.journal.finished(name, host) : undefined
      if (done) {
        const data = done.data ? stepData(step, done, this.journal.run.id) : undefined
        this.planned.push({ step: name, ...at, title: step.title, actions: ['done before the interruption'] })
        return { ...(data ? { data } : {}), skipped: 'done before the interruption' }
      }
      const actions = await step.describe(this.ctx, ...args)
      let learned: StepResult = {}
      let blocked: PlanBlocker | undefined
      try {
        learned = step.preview ? await step.preview(this.ctx, ...args) : {}
      } catch (error) {
        // The dry run goes on to show the rest, and ends as the real run would have here.
        blocked = blockerOf(error)
      }
      const planned: PlannedStep = { step: name, ...at, title: step.title, actions }
      if (this.batch) planned.batch = this.batch
      if (learned.skipped) planned.actions = [...actions, `nothing to do: ${learned.skipped}`]
      if (blocked) {
        planned.blocked = blocked
        planned.actions = [...planned.actions, `BLOCKED: ${blocked.reason}`]
      }
      this.planned.push(planned)
      // The dry run's journal lives in memory: what a preview learned is there for later steps.
      this.journal.append({ step: name, status: 'ok', ...at, ...(learned.data ? { data: learned.data } : {}) })
      return learned
    }
    if (step.once) {
      const done = this.journal.finished(name, host)
      if (done) {
        // Reused, not redone: what it journaled is checked as the step would have written it.
        const data = done.data ? stepData(step, done, this.journal.run.id) : undefined
        events.emit({ kind: 'step', step: name, status: 'skipped', detail: 'done before the interruption', ...at })
        return {
          ...(done.changed ? { changed: done.changed } : {}),
          ...(data ? { data } : {}),
          skipped: 'done before the interruption',
        }
      }
    }
    // The safe point: a signal stops the run here, between steps, never inside one.
    const signal = interruptSignal()
    if (signal) throw withFacts(new InterruptedError(`Interrupted by ${signal}.`), { signal })
    // Fencing: a holder whose lock was taken over (it slept past its lease) acts no further.
    const lost = await this.lockLost?.()
    if (lost !== undefined) throw withFacts(new InterruptedError(lost), { lockLost: true })
    // The environment's copy (run-mirror.ts): a write its store refused is tried once more here;
    // refused again, the run stops before this step rather than go on with a record other machines
    // cannot read. A rollback goes on (stopping it would leave the service half-way), said once.
    const copyFailure = await this.journal.retryCopy(STEP_DEADLINE_MS)
    if (copyFailure !== undefined) {
      const where = `${name}${host ? ` on ${host}` : ''}`
      if (this.journal.run.phase !== 'rolling-back')
        throw withFacts(new OperationError(`${copyFailure}; the run stops before ${where} so that its record is not lost.`), {
          runStore: 'failed',
        })
      if (!this.copyFailureSaid) events.warn(`${copyFailure}; the rollback goes on with the local copy (${this.journal.dir}).`)
      this.copyFailureSaid = true
    }
    const started = Date.now()
    this.journal.append({ step: name, status: 'start', ...at, ...(step.disruptive ? { disruptive: true } : {}) })
    events.emit({ kind: 'step', step: name, status: 'start', ...at })
    // The environment's copy knows a step started before it acts (bounded: see run-mirror.ts).
    await this.journal.flushCopy(STEP_DEADLINE_MS)
    let result: StepResult
    try {
      result = await step.act(this.ctx, ...args)
    } catch (error) {
      const detail = errorMessage(error)
      const durationMs = Date.now() - started
      this.journal.append({ step: name, status: 'failed', detail, durationMs, ...at })
      events.emit({ kind: 'step', step: name, status: 'failed', detail, durationMs, ...at })
      await this.journal.flushCopy(STEP_DEADLINE_MS)
      throw error instanceof Error ? error : new OperationError(detail)
    }
    const durationMs = Date.now() - started
    // A skipped step still counts as finished for resume: the journal stores it as ok with the reason.
    this.journal.append({
      step: name,
      status: 'ok',
      durationMs,
      ...at,
      ...(result.changed?.length ? { changed: result.changed } : {}),
      ...(result.data ? { data: result.data } : {}),
      ...(result.skipped ? { detail: result.skipped } : {}),
      ...(step.report ? { report: step.report } : {}),
    })
    await this.journal.flushCopy(STEP_DEADLINE_MS)
    events.emit({
      kind: 'step',
      step: name,
      status: result.skipped ? 'skipped' : 'ok',
      durationMs,
      ...at,
      ...(result.skipped ? { detail: result.skipped } : result.changed?.length ? { detail: result.changed.join('; ') } : {}),
    })
    return result
  }

  /**
   * Runs `fn` on every host at once (one after the other in the dry run, so the plan reads in
   * order) and throws the first failure once all have ended: no host is left half-way unseen.
   */
  async everyHost<H extends { name: string }>(hosts: H[], fn: (host: H) => Promise<unknown>): Promise<void> {
    if (this.planning) {
      for (const h of hosts) await fn(h)
      return
    }
    await allOrFirstFailure(hosts, fn)
  }

  /**
   * The rollout: the canary alone, then each batch with its hosts at once. A batch starts only while
   * the maintenance window is open and, judged by the longest batch so far, ends inside it. The
   * canary's failure, a failure past `--max-fail`, or lost data stops the rollout (thrown); a
   * tolerated failure puts that one host back and the rollout goes on. Returns the tolerated ones.
   */
  async rollout<H extends { name: string }>(policy: RolloutPolicy<H>, fn: (host: H) => Promise<unknown>): Promise<HostFailure[]> {
    const failures: HostFailure[] = []
    let longestBatchMs = 0
    for (const [i, batch] of policy.batches.entries()) {
      const label = i === 0 ? 'canary' : `batch ${i}`
      const names = batch.map((h) => h.name).join(', ')
      // The canary is verified and more is to come: its soak, then a person decides when asked (both count against the window).
      if (i === 1) {
        const canary = policy.batches[0] ?? []
        const soaked = await policy.afterCanary?.(canary, policy.batches.slice(1).flat())
        if (policy.pauseAfterCanary || soaked?.wait) await this.pauseAfterCanary(canary.map((h) => h.name).join(', '))
      }
      if (!this.planning && policy.deadline !== undefined && !batchFitsWindow(Date.now(), policy.deadline, longestBatchMs)) {
        const why = longestBatchMs
          ? `would not end before it (a batch has taken ${Math.round(longestBatchMs / 1000)} s)`
          : 'cannot start after it'
        const which = i === 0 ? 'the canary' : label
        throw new OperationError(`The maintenance window ends at ${new Date(policy.deadline).toISOString()}; ${which} (${names}) ${why}.`)
      }
      const started = Date.now()
      this.batch = label
      try {
        await policy.beforeBatch?.(batch)
        if (!this.planning) events.info(`${i === 0 ? 'Canary' : `Batch ${i}`}: ${names}`)
        if (this.planning) {
          for (const h of batch) await fn(h)
          continue
        }
        const results = await runConcurrently(batch, batch.length, fn)
        longestBatchMs = Math.max(longestBatchMs, Date.now() - started)
        // A signal stops the rollout as it is: an interrupted host is not a failed one.
        const interrupted = results.find((r) => r.status === 'rejected' && r.reason instanceof InterruptedError)
        if (interrupted?.status === 'rejected') throw interrupted.reason
        const failedNow = results.flatMap((r, j) => (r.status === 'rejected' ? [asHostFailure(r.reason, batch[j] as H)] : []))
        failures.push(...failedNow)
        const first = failedNow[0]
        if (!first) continue
        if (i === 0 || failures.length > policy.maxFail || failedNow.some((f) => f.dataLoss)) throw first
        for (const f of failedNow) await policy.onTolerated?.(f, batch.find((h) => h.name === f.host) as H)
      } finally {
        this.batch = undefined
      }
    }
    return failures
  }

  /**
   * The canary is verified: the run waits, holding its lock, for a person's decision (run-pause.ts).
   * Journaled as the `pause` step: its start while it waits, `ok` once promoted (a resume does not
   * wait again), `failed` when aborted (thrown, so the failure policy rolls back what changed).
   */
  private async pauseAfterCanary(canary: string): Promise<void> {
    const promoted = this.journal.finished(PAUSE_STEP) !== undefined // before an interruption: no second wait
    if (this.planning) {
      const id = this.resumed ? this.journal.run.id : 'ID' // a new run's id is given when it starts
      this.planned.push({
        step: PAUSE_STEP,
        title: `pause after the canary (${canary}): wait for a person`,
        actions: promoted
          ? ['done before the interruption']
          : [`go on with: svcops runs promote ${id}`, `or roll back with: svcops runs abort ${id}`],
      })
      return
    }
    if (promoted) return
    if (!this.decisions) throw new OperationError('This run cannot pause after its canary: nothing reads a decision for it.')
    await waitForDecision(this.journal, this.decisions, canary)
  }
}

function asHostFailure(reason: unknown, host: { name: string }): HostFailure {
  if (reason instanceof HostFailure) return reason
  return new HostFailure(host.name, 'rollout', errorMessage(reason))
}
