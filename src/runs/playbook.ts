/**
 * A playbook run from start to end, the same for every playbook: its resources opened around the
 * procedure, the failure policy, the report, and the lock released — for a new run, a resumed one,
 * a rollback of a finished one, and the dry run (the same procedure in plan mode).
 *
 * The failure policy: before the first disruptive step (a stop) "failed, nothing changed"; after it
 * the playbook's lossless rollback runs, unless the run was started with `--no-auto-rollback`.
 */
import { chmodSync, copyFileSync, rmSync } from 'node:fs'
import { basename } from 'node:path'
import {
  BadInputError,
  BlockedError,
  ExitCode,
  InterruptedError,
  OperationError,
  RolledBackError,
  errorMessage,
  exitCodeFor,
  withFacts,
} from '../core/errors.ts'
import { events } from '../core/events.ts'
import { onInterrupt, onShutdown } from '../core/lifecycle.ts'
import { usePrivateFolder } from '../core/private-files.ts'
import { HostFailure, Run, ToleratedFailures, type PlannedStep } from './engine.ts'
import type { Journal } from './journal.ts'
import type { SiteHook } from './site-steps.ts'
import { decisionsOf } from './run-decision.ts'
import { END_DEADLINE_MS, RunMirror } from './run-mirror.ts'
import type { RunStore } from './run-store.ts'
import { runEndWriter, tellObservers } from './run-events.ts'
import type { RunReport } from './run-report.ts'
import { holderName, phaseToContinue, type RunKind, type RunParams, type RunRecord } from './run-record.ts'
import type { SystemDescription } from './system-description.ts'
import { Phase } from './step.ts'

/** A playbook: its procedure, and the way back its failure policy takes. `P`: the params of its system's runs. */
export interface Playbook<C, P extends RunParams = RunParams> {
  kind: RunKind
  /** What the run does, as the start of a failure sentence: "Upgrade to 2.0.0". */
  what(run: RunRecord<P>): string
  /** The command an operator runs to roll the run back by hand. */
  rollbackCommand(run: RunRecord<P>): string
  /**
   * What an interrupted run's last lines tell the operator to do next; without it, the two
   * `svcops resume` commands. A playbook whose runs are not resumed (they start over) says so here.
   */
  afterInterruption?(run: RunRecord<P>): string
  /** The procedure, top to bottom. */
  procedure(run: Run<C>): Promise<void>
  /** The lossless way back; returns what it did in one line ("rolled back to ...; database kept"). */
  rollback?(run: Run<C>, options: { dataLoss: boolean }): Promise<string>
  /**
   * The steps its site adds (playbooks/site/), each hooked on one of its steps (src/runs/site-steps.ts):
   * run with the procedure, and their undos after the rollback, the latest first.
   */
  site?: readonly SiteHook<C>[]
}

/** How a run ended. `report` is also written as report.json and report.md in the run folder. */
export interface RunOutcome {
  runId: string
  phase: RunRecord['phase']
  report: RunReport
}

/** A playbook's context, opened for a run and closed after it (connections, host locks, logout). */
export interface Opened<C> {
  ctx: C
  close(): Promise<void>
  /**
   * Files the run leaves a copy of in its run folder when it ends, whatever the outcome: on the
   * Kubernetes platform the stack file, the record to commit (in a scheduled job the only copy
   * that outlives the pod is the one on the runs volume).
   */
  records?: string[]
}

/** A lock the caller took for the run (refused before any run folder exists). */
export interface HeldLock {
  release(): Promise<void>
  /**
   * Lets go of the lock but leaves its record saying which run held it (an interrupted run): the
   * next run on the environment sees an unfinished holder and names the commands that finish it.
   */
  leave?(): Promise<void>
  /**
   * Undefined while the lock is still this holder's; otherwise the sentence saying who took it over.
   * The engine asks at each step boundary and stops the run there (a lease its holder outslept).
   */
  lost?(): Promise<string | undefined>
}

export interface RunSetup<C, P extends RunParams = RunParams> {
  playbook: Playbook<C, P>
  journal: Journal<P>
  lock: HeldLock
  open(journal: Journal<P>): Promise<Opened<C>>
  /** The system the run acts on, for its report and the observers (none: a report without targets or sections). */
  system?: SystemDescription<P>
  /** The environment's store the run is also written to as it goes (the local folder stays the first copy). */
  store?: RunStore
}

/** Starts a new run: the procedure under the failure policy. */
export function startRun<C, P extends RunParams>(setup: RunSetup<C, P>): Promise<RunOutcome> {
  return drive(setup, (run) => underFailurePolicy(setup.playbook, run))
}

/**
 * Continues run `setup.journal` after an interruption: the procedure again (finished steps are
 * skipped by the journal), or its rollback when asked, or when it was rolling back when it stopped.
 */
export function resumeRun<C, P extends RunParams>(setup: RunSetup<C, P>, options: { rollback?: boolean }): Promise<RunOutcome> {
  const { journal, playbook } = setup
  // An interrupted run continues in the phase it stopped in.
  if (journal.run.phase === 'interrupted') journal.update({ phase: phaseToContinue(journal.run) })
  const record = journal.run
  // A run killed while it waited after its canary waits again when it gets there (run-pause.ts).
  journal.update({ pid: process.pid, holder: holderName(), pausedAt: undefined })
  journal.append({
    step: options.rollback ? 'resume-as-rollback' : 'resume',
    status: 'ok',
    detail: `resumed by ${holderName()} pid ${process.pid}`,
  })
  return drive(
    setup,
    async (run) => {
      if (!options.rollback && record.phase !== 'rolling-back') return underFailurePolicy(playbook, run)
      if (!journal.disrupted()) {
        journal.update({
          phase: 'failed',
          finishedAt: new Date().toISOString(),
          cause: record.cause ?? 'interrupted before anything stopped',
        })
        events.info(`Run ${record.id} stopped nothing before it was interrupted; there is nothing to roll back.`)
        return
      }
      // An automatic rollback that was interrupted still ends as "failed and rolled back" (exit 4);
      // one that was asked for ends as asked for (exit 0), whether this process or a killed one
      // started it: the record says which, the phase alone does not.
      const requested = options.rollback === true || record.rollbackRequested === true
      const automatic = record.phase === 'rolling-back' && !requested
      const before = { phase: record.phase, ...(record.cause ? { cause: record.cause } : {}) }
      journal.update({
        phase: 'rolling-back',
        ...(record.phase !== 'rolling-back' ? { rollbackRequested: true } : {}),
        cause:
          record.cause ??
          (record.phase === 'succeeded' ? `rolled back on request by ${holderName()}` : 'interrupted, then rolled back on request'),
      })
      const summary = await rollBack(playbook, run, { dataLoss: false }, before)
      if (automatic) throw rolledBack(playbook, journal, summary)
    },
    { resumed: true },
  )
}

/**
 * The dry run: the procedure in plan mode, then the way back as the failure policy would take it.
 * `what` picks what is planned: a new run, a resume, or a rollback of the journal's run.
 */
export async function planRun<C, P extends RunParams>(
  playbook: Playbook<C, P>,
  ctx: C,
  journal: Journal<P>,
  what: 'start' | 'resume' | 'rollback',
): Promise<PlannedStep[]> {
  const run = new Run(ctx, journal, { mode: 'plan', resumed: what !== 'start' })
  if (what !== 'rollback') await procedureOf(playbook, run)
  if (what === 'rollback' && !journal.disrupted()) return run.planned
  if (playbook.rollback && (what === 'rollback' || journal.run.autoRollback))
    await rollbackOf(playbook, run.inPhase(Phase.rollback), { dataLoss: false })
  return run.planned
}

/** The playbook's procedure with its site's steps hooked on its own. */
function procedureOf<C, P extends RunParams>(playbook: Playbook<C, P>, run: Run<C>): Promise<void> {
  return playbook.procedure(playbook.site?.length ? run.withSiteSteps(playbook.site) : run)
}

/** The playbook's rollback (in the rollback phase), then the undo of what its site's steps changed, the latest first. */
async function rollbackOf<C, P extends RunParams>(playbook: Playbook<C, P>, run: Run<C>, options: { dataLoss: boolean }): Promise<string> {
  if (!playbook.rollback) throw new OperationError(`${playbook.what(run.journal.run as RunRecord<P>)} has no rollback.`)
  const summary = await playbook.rollback(run, options)
  if (playbook.site?.length) await run.undoSiteSteps(playbook.site)
  return summary
}

/** Runs `driveRun`, then closes the environment's store, which keeps its session open for the run's writes. */
async function drive<C, P extends RunParams>(
  setup: RunSetup<C, P>,
  body: (run: Run<C>) => Promise<void>,
  options: { resumed?: boolean } = {},
): Promise<RunOutcome> {
  try {
    return await driveRun(setup, body, options)
  } finally {
    // After the last write (or its deadline): an open session would keep the CLI from exiting.
    await setup.store?.close()
  }
}

/**
 * Opens the playbook's context, runs `body`, and always writes the report and releases the lock;
 * the run's observers (webhooks, metrics) hear of its start, and of its end once the report is written.
 */
async function driveRun<C, P extends RunParams>(
  setup: RunSetup<C, P>,
  body: (run: Run<C>) => Promise<void>,
  options: { resumed?: boolean } = {},
): Promise<RunOutcome> {
  const { journal, lock } = setup
  // Asked before anything happens: a run that acted always leaves its report (none wired: a programming error).
  const writeReport = await Promise.resolve()
    .then(runEndWriter)
    .catch(async (error: unknown) => {
      await lock.release()
      if (!options.resumed) await discardRun(journal)
      throw error
    })
  events.runId = journal.run.id
  if (setup.store) journal.keepCopy(new RunMirror(setup.store, journal.run, journal.entries()))
  usePrivateFolder(journal.dir) // secrets a child needs (the PostgreSQL tools' password file) go here
  // A second signal stops at once: the run is unfinished, so its lock's record stays to say so.
  const unregister = onShutdown(() => (lock.leave ? lock.leave() : lock.release()))
  const unlisten = onInterrupt((signal) => events.warn(`${signal}: run ${journal.run.id} stops after the step under way.`))
  const opened = await setup.open(journal).catch(async (error: unknown) => {
    await lock.release()
    unregister()
    if (!options.resumed && isRefusal(error)) await discardRun(journal)
    throw error
  })
  const { system } = setup
  const targets = system?.view(journal.run).targets ?? []
  await tellObservers({ kind: 'run-started', journal, resumed: options.resumed ?? false, targets })
  let failure: unknown
  try {
    const decisions = decisionsOf(journal, setup.store)
    const lockLost = lock.lost ? () => lock.lost?.() ?? Promise.resolve(undefined) : undefined
    await body(
      new Run(opened.ctx, journal, { mode: 'act', resumed: options.resumed ?? false, decisions, ...(lockLost ? { lockLost } : {}) }),
    )
  } catch (error) {
    failure = error
  }
  if (failure instanceof InterruptedError) recordInterruption(journal, failure)
  await opened.close()
  // A refusal before anything stopped (bad input, an open gate, a lock) is not a run: it leaves no
  // folder for `runs list` to show as failed; its sentence says what to change.
  if (failure !== undefined && !options.resumed && isRefusal(failure) && !journal.disrupted()) {
    // Whoever heard "started" hears how it ended; the run itself is forgotten.
    await tellObservers({ kind: 'run-refused', journal, cause: errorMessage(failure) })
    await discardRun(journal)
    await lock.release()
    unregister()
    throw failure instanceof Error ? failure : new OperationError(errorMessage(failure))
  }
  // The run's end is recorded only after its resources are released: a kill before this line
  // leaves a run that `svcops resume` finishes.
  if (journal.run.phase === 'running' || journal.run.phase === 'rolling-back') {
    journal.update(
      failure === undefined
        ? { phase: 'succeeded', finishedAt: new Date().toISOString() }
        : {
            phase: journal.run.phase === 'rolling-back' ? 'rollback-failed' : 'failed',
            finishedAt: new Date().toISOString(),
            cause: errorMessage(failure),
          },
    )
  }
  keepRecords(journal, opened.records ?? [])
  const report = writeReport(journal, system)
  // A record the environment's store refused even now is said, and fails the command below.
  const copyFailure = (await journal.finishCopy(END_DEADLINE_MS)) ? undefined : journal.copyFailure
  if (journal.run.phase === 'interrupted' && lock.leave) await lock.leave()
  else await lock.release()
  unregister()
  unlisten()
  events.info(`Report: ${journal.file('report.md')}`)
  await tellObservers({ kind: 'run-ended', journal, report })
  // A scheduler reading --json gets the same fields whether the run succeeded or not.
  if (failure instanceof InterruptedError) throw interrupted(journal, failure, setup.playbook)
  if (failure !== undefined) {
    const error = failure instanceof Error ? failure : new OperationError(`The run failed: ${errorMessage(failure)}.`)
    throw withFacts(error, { runId: journal.run.id, phase: journal.run.phase, reportPath: journal.file('report.md'), report })
  }
  if (copyFailure !== undefined)
    throw withFacts(
      new OperationError(
        `Run ${journal.run.id} ended ${journal.run.phase}, but ${copyFailure.replace(/^The run's/, 'its')}; only ${journal.dir} holds it whole.`,
      ),
      { runId: journal.run.id, phase: journal.run.phase, reportPath: journal.file('report.md'), report, runStore: 'failed' },
    )
  return { runId: journal.run.id, phase: journal.run.phase, report }
}

/** Journals the stop at a safe point: an `interrupted` entry and phase, and the phase a resume continues in. */
function recordInterruption(journal: Journal, error: InterruptedError): void {
  const before = phaseToContinue(journal.run) === 'rolling-back' ? 'rolling-back' : 'running'
  const last = journal.entries().findLast((e) => e.status !== 'start')
  const after = last ? ` after ${last.step}${last.host ? ` on ${last.host}` : ''}` : ''
  journal.append({
    step: 'interrupted',
    status: 'ok',
    detail: `${errorMessage(error).replace(/\.$/, '')}${after}.`,
    data: { ...error.facts },
  })
  journal.update({ phase: 'interrupted', interruptedIn: before })
}

/** The error an interrupted run ends with: its id, and what finishes it (the two resume commands, unless its playbook says otherwise). */
function interrupted<C, P extends RunParams>(journal: Journal<P>, error: InterruptedError, playbook: Playbook<C, P>): InterruptedError {
  const id = journal.run.id
  return withFacts(
    new InterruptedError(
      `Run ${id} was interrupted: ${journal.entries().at(-1)?.detail ?? errorMessage(error)} It stopped at a safe point${journal.run.interruptedIn === 'rolling-back' ? ' of its rollback' : ''}.`,
      playbook.afterInterruption?.(journal.run) ?? `Continue it: svcops resume ${id}\nRoll it back: svcops resume ${id} --rollback`,
    ),
    { ...error.facts, runId: id, phase: journal.run.phase, reportPath: journal.file('report.md') },
  )
}

/** A refusal: bad input, something that needs a person, or another run's lock — the run never began. */
function isRefusal(error: unknown): boolean {
  const code = exitCodeFor(error)
  return code === ExitCode.badInput || code === ExitCode.findings || code === ExitCode.locked
}

/** Removes the folder of a run that was refused before anything stopped, and its record in the environment. */
async function discardRun(journal: Journal): Promise<void> {
  await journal.discardCopy(END_DEADLINE_MS)
  rmSync(journal.dir, { recursive: true, force: true })
}

/** Copies each record into the run folder, owner-only, and journals where; a failed copy is journaled, never fatal. */
function keepRecords(journal: Journal, files: string[]): void {
  for (const file of files) {
    const copy = journal.file(basename(file))
    try {
      copyFileSync(file, copy)
      chmodSync(copy, 0o600)
      journal.append({ step: 'keep-record', status: 'ok', detail: `copied ${file} to ${copy}`, data: { record: { file, copy } } })
    } catch (error) {
      journal.append({ step: 'keep-record', status: 'failed', detail: `${file} was not copied to the run folder: ${errorMessage(error)}` })
    }
  }
}

/** Runs the procedure; on failure applies the policy (see the file's comment). */
async function underFailurePolicy<C, P extends RunParams>(playbook: Playbook<C, P>, run: Run<C>): Promise<void> {
  try {
    await procedureOf(playbook, run)
  } catch (error) {
    if (error instanceof InterruptedError) throw error
    const record = run.journal.run as RunRecord<P>
    const cause = errorMessage(error)
    if (!run.journal.disrupted() || !playbook.rollback || error instanceof ToleratedFailures) {
      run.journal.update({ phase: 'failed', finishedAt: new Date().toISOString(), cause })
      throw error
    }
    if (!record.autoRollback) {
      run.journal.update({ phase: 'failed', finishedAt: new Date().toISOString(), cause })
      throw new OperationError(
        `${playbook.what(record)} failed: ${cause} The hosts were left as they are (--no-auto-rollback).`,
        `Inspect, then roll back with: ${playbook.rollbackCommand(record)}`,
      )
    }
    run.journal.update({ phase: 'rolling-back', cause })
    const summary = await rollBack(playbook, run, { dataLoss: error instanceof HostFailure && error.dataLoss })
    throw rolledBack(playbook, run.journal, summary)
  }
}

/** Runs the playbook's rollback and records its outcome; returns its one-line summary. */
async function rollBack<C, P extends RunParams>(
  playbook: Playbook<C, P>,
  run: Run<C>,
  options: { dataLoss: boolean },
  before?: Pick<RunRecord<P>, 'phase' | 'cause'>,
): Promise<string> {
  const record = run.journal.run as RunRecord<P>
  if (!playbook.rollback) throw new OperationError(`${playbook.what(record)} has no rollback.`)
  let summary: string
  try {
    summary = await rollbackOf(playbook, run.inPhase(Phase.rollback), options)
  } catch (error) {
    // A rollback asked for that refused before anything stopped (a missing precondition, or what the
    // run's record or journal names refused as not svcops' own) leaves the run as it was.
    if (
      (error instanceof BlockedError || (error instanceof BadInputError && !rollbackDisrupted(run.journal))) &&
      before &&
      record.rollbackRequested
    ) {
      run.journal.update({ ...before, rollbackRequested: false })
      throw error
    }
    if (error instanceof InterruptedError) throw error
    run.journal.update({ phase: 'rollback-failed', finishedAt: new Date().toISOString() })
    throw new OperationError(
      `The rollback of run ${record.id} failed: ${errorMessage(error)}${record.cause ? ` (why it rolled back: ${record.cause})` : ''}`,
      `Fix the cause, then continue the rollback with: svcops resume ${record.id}`,
    )
  }
  run.journal.update({ phase: 'rolled-back', finishedAt: new Date().toISOString() })
  events.info(`Run ${record.id}: ${summary}.`)
  return summary
}

/** True once a disruptive step of the rollback phase has started (a stop): from there a refusal is a failed rollback. */
function rollbackDisrupted(journal: Journal): boolean {
  return journal.entries().some((e) => e.disruptive === true && e.step.startsWith(Phase.rollback))
}

function rolledBack<C, P extends RunParams>(playbook: Playbook<C, P>, journal: Journal<P>, summary: string): RolledBackError {
  const record = journal.run
  return new RolledBackError(
    `${playbook.what(record)} failed: ${record.cause ?? 'unknown cause'} It was ${summary}.`,
    `See the report: ${journal.file('report.md')}`,
  )
}
