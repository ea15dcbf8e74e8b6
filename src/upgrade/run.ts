/**
 * A run of the upgrade: lock, journal, preflight, verified backup, then the fleet — canary first,
 * batches after, concurrency inside a batch, `--max-fail` — and the final verification. Any failure
 * after the first stop rolls back automatically (unless `--no-auto-rollback`). `resumeRun` continues
 * (or rolls back) a run from its journal after a kill; `rollbackRun` rolls back a finished one.
 */
import { loadEnvironmentFile, requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError, LockedError, OperationError, RolledBackError, withFacts } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { batchFitsWindow, parseMaxFail, planBatches, runConcurrently } from '../runs/rollout.ts'
import { holderName, isFinished, Journal, newRunId, type RunRecord } from '../runs/journal.ts'
import { acquireEnvironmentLock, releaseHostLock, type EnvironmentLock } from '../runs/lock.ts'
import { onShutdown } from '../core/lifecycle.ts'
import { findDebFile, packageDriver } from '../drivers/packages.ts'
import { serviceDriver } from '../drivers/services.ts'
import { transportFor } from '../drivers/transports.ts'
import { writeReport, type RunReport } from '../runs/report.ts'
import { upgradeHost, installStep, startAndCheckSteps, stopStep, verifyHostStep } from './host-steps.ts'
import { backupStep, hostLockFile, lockHosts, preflight, readVersions, selectHosts } from './preflight.ts'
import { rollBack, saveContentBeforeStop, type RollbackOutcome } from './rollback-steps.ts'
import { HostFailure, runStep, settingsFor, type HostHandle, type RunContext } from '../runs/steps.ts'
import type { UpgradeDeps } from './deps.ts'

export interface UpgradeRequest {
  env: Environment
  to: string
  hosts?: string[]
  batch?: number
  maxFail?: string
  autoRollback?: boolean
  breakLock?: boolean
  /** Maintenance window from the start of the run, in ms (`--window`). */
  windowMs?: number
}

/** How a run ended. `report` is also written as report.json and report.md in the run folder. */
export interface RunOutcome {
  runId: string
  phase: RunRecord['phase']
  report: RunReport
}

export type DepsFactory = (env: Environment) => Promise<UpgradeDeps>

const SEMVER = /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/

/** Builds the run context: hosts and their transports, drivers, settings, dependencies. */
export async function openContext(env: Environment, journal: Journal, hostNames: string[], openDeps: DepsFactory): Promise<RunContext> {
  const rec = requireSection(env, 'recording')
  const allHosts: HostHandle[] = rec.hosts.map((config) => ({
    name: config.name,
    config,
    transport: transportFor(config),
    url: config.url,
  }))
  const hosts = hostNames.map((n) => allHosts.find((h) => h.name === n)).filter((h): h is HostHandle => !!h)
  const files = new Map<string, string>()
  return {
    env,
    rec,
    journal,
    hosts,
    allHosts,
    pkg: packageDriver(rec.packageDriver),
    svc: serviceDriver(rec.serviceDriver),
    deps: await openDeps(env),
    settings: settingsFor(env, rec),
    packageFile(version) {
      if (rec.packageDriver !== 'dpkg') return undefined
      if (!files.has(version)) files.set(version, findDebFile(rec.packageDir, rec.package, version))
      return files.get(version)
    },
  }
}

async function closeContext(ctx: RunContext): Promise<void> {
  await Promise.all(ctx.allHosts.map((h) => releaseHostLock(h.transport, hostLockFile(ctx, h), ctx.journal.run.id).catch(() => undefined)))
  await ctx.deps.close().catch((error: unknown) => events.warn(`Logging out of the manager failed: ${(error as Error).message}`))
  await Promise.all(ctx.allHosts.map((h) => h.transport.close()))
}

/**
 * Takes the environment lock for `run`. A run that died holding it must be resumed or rolled back
 * first: starting a new one on top of a half-upgraded fleet is refused (exit 3) unless `breakLock`.
 */
async function lockFor(
  env: Environment,
  run: Pick<RunRecord, 'id' | 'holder' | 'startedAt'>,
  options: { breakLock?: boolean; resuming?: string },
): Promise<{ lock: EnvironmentLock; takeOver: string[] }> {
  const rec = requireSection(env, 'recording')
  const lock = await acquireEnvironmentLock(rec.database, {
    environment: env.name,
    holder: { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt },
    ...options,
  })
  const dead = lock.deadHolder
  if (dead && !options.breakLock) {
    let unfinished = true
    let where = 'an unknown step'
    try {
      const journal = Journal.open(dead.runId)
      unfinished = !isFinished(journal.run)
      const last = journal.entries().at(-1)
      if (last) where = `${last.step}${last.host ? ` on ${last.host}` : ''}`
    } catch {
      // No local journal: the run was started elsewhere; treat it as unfinished.
    }
    if (unfinished) {
      await lock.release()
      throw withFacts(
        new LockedError(
          `Environment '${env.name}': run ${dead.runId} (${dead.holder}, since ${dead.since}) died during ${where} without finishing.`,
          `Resume it: svcops resume ${dead.runId}   or roll it back: svcops rollback recording --env ${env.name} --run ${dead.runId}   (or --break-lock to ignore it)`,
        ),
        { lockedBy: dead, unfinishedRun: dead.runId },
      )
    }
  }
  return { lock, takeOver: [dead?.runId, lock.broken?.runId].filter((x): x is string => !!x) }
}

/** Runs `fn` holding the environment lock and the host locks; always writes the report. */
async function withLockedRun(
  env: Environment,
  journal: Journal,
  lock: EnvironmentLock,
  takeOver: string[],
  breakLock: boolean,
  openDeps: DepsFactory,
  fn: (ctx: RunContext) => Promise<void>,
): Promise<RunOutcome> {
  const unregister = onShutdown(() => lock.release())
  const ctx = await openContext(env, journal, journal.run.hosts, openDeps).catch(async (error: unknown) => {
    await lock.release()
    unregister()
    throw error
  })
  let failure: unknown
  try {
    await lockHosts(ctx, takeOver, breakLock)
    await fn(ctx)
  } catch (error) {
    failure = error
    // A failure before any host stopped (preflight, backup, host locks) ends the run: nothing changed, nothing to resume.
    if (journal.run.phase === 'running')
      journal.update({
        phase: 'failed',
        finishedAt: new Date().toISOString(),
        cause: error instanceof Error ? error.message : String(error),
      })
  }
  const report = writeReport(journal)
  await closeContext(ctx)
  await lock.release()
  unregister()
  events.info(`Report: ${journal.file('report.md')}`)
  // A scheduler reading --json gets the same fields whether the run succeeded or not.
  if (failure !== undefined)
    throw withFacts(failure instanceof Error ? failure : new OperationError(`The run failed: ${JSON.stringify(failure)}.`), {
      runId: journal.run.id,
      phase: journal.run.phase,
      reportPath: journal.file('report.md'),
      report,
    })
  return { runId: journal.run.id, phase: journal.run.phase, report }
}

/** `svcops upgrade recording`: a new run. */
export async function upgradeRecording(req: UpgradeRequest, openDeps: DepsFactory): Promise<RunOutcome> {
  const rec = requireSection(req.env, 'recording')
  if (!SEMVER.test(req.to)) throw new BadInputError(`--to: '${req.to}' is not a version; expected a version like 2.0.0.`)
  const hosts = selectHosts(rec.hosts, req.hosts, req.env.file)
  const batch = req.batch ?? 1
  const maxFail = req.maxFail ?? '0'
  planBatches(hosts, batch)
  parseMaxFail(maxFail, hosts.length)
  const ordered = planBatches(hosts, batch).flat()
  const run: RunRecord = {
    id: newRunId(),
    kind: 'upgrade',
    environment: req.env.name,
    envFile: req.env.file,
    targetVersion: req.to,
    previousVersions: {},
    hosts: ordered.map((h) => h.name),
    batchSize: batch,
    maxFail,
    autoRollback: req.autoRollback ?? true,
    phase: 'running',
    startedAt: new Date().toISOString(),
    holder: holderName(),
    pid: process.pid,
    ...(req.windowMs ? { deadline: new Date(Date.now() + req.windowMs).toISOString() } : {}),
  }
  const { lock, takeOver } = await lockFor(req.env, run, { ...(req.breakLock ? { breakLock: true } : {}) })
  const journal = Journal.create(run)
  events.runId = run.id
  events.info(`Run ${run.id}: upgrade ${rec.package} to ${req.to} on ${run.hosts.join(', ')} (environment ${req.env.name}).`)
  return withLockedRun(req.env, journal, lock, takeOver, req.breakLock ?? false, openDeps, (ctx) =>
    executeUpgrade(ctx, { keepWindow: true }),
  )
}

/**
 * The upgrade itself (also what resume re-enters: finished steps are skipped by the journal).
 * `keepWindow`: hold to the run's maintenance window. A resume does not: the window was the
 * scheduler's, and a person resuming later chose to go on.
 */
async function executeUpgrade(ctx: RunContext, options: { keepWindow?: boolean } = {}): Promise<void> {
  const run = ctx.journal.run
  await preflight(ctx, run.targetVersion)
  await backupStep(ctx)
  const batches = planBatches(ctx.hosts, run.batchSize)
  const maxFail = parseMaxFail(run.maxFail, ctx.hosts.length)
  const failures: HostFailure[] = []
  const deadline = options.keepWindow && run.deadline ? Date.parse(run.deadline) : undefined
  let longestBatchMs = 0
  try {
    for (const [i, batch] of batches.entries()) {
      const name = i === 0 ? 'the canary' : `batch ${i}`
      if (deadline !== undefined && !batchFitsWindow(Date.now(), deadline, longestBatchMs)) {
        throw new OperationError(
          `The maintenance window ends at ${run.deadline ?? '?'}; ${name} (${batch.map((h) => h.name).join(', ')}) ${longestBatchMs ? `would not end before it (a batch has taken ${Math.round(longestBatchMs / 1000)} s)` : 'cannot start after it'}.`,
        )
      }
      const batchStarted = Date.now()
      await saveContentBeforeStop(ctx)
      events.info(`${i === 0 ? 'Canary' : `Batch ${i}`}: ${batch.map((h) => h.name).join(', ')}`)
      const results = await runConcurrently(batch, batch.length, (h) => upgradeHost(ctx, h, run.targetVersion))
      longestBatchMs = Math.max(longestBatchMs, Date.now() - batchStarted)
      const failedNow = results.flatMap((r, j) => (r.status === 'rejected' ? [asHostFailure(r.reason, batch[j] as HostHandle)] : []))
      failures.push(...failedNow)
      if (!failedNow.length) continue
      const first = failedNow[0] as HostFailure
      if (i === 0 || failures.length > maxFail || failedNow.some((f) => f.dataLoss)) throw first
      for (const f of failedNow) await toleratedFailure(ctx, f)
    }
    await runStep(ctx, 'verify', undefined, async () => {
      const fingerprintAfter = await ctx.deps.database.fingerprint()
      const versions = await readVersions(ctx)
      const wrong = ctx.hosts.filter((h) => versions[h.name] !== run.targetVersion && !failures.some((f) => f.host === h.name))
      if (wrong.length)
        throw new HostFailure(
          wrong[0]?.name ?? '?',
          'verify',
          `${wrong.map((h) => `${h.name} runs ${versions[h.name] ?? 'nothing'}`).join(', ')}; expected ${run.targetVersion}.`,
        )
      ctx.journal.update({ fingerprintAfter })
      return { data: { fingerprintAfter, versions, schemaChanged: fingerprintAfter !== run.fingerprintBefore } }
    })
  } catch (error) {
    await handleFailure(ctx, error, failures)
    return
  }
  if (failures.length) {
    ctx.journal.update({ phase: 'failed', finishedAt: new Date().toISOString(), cause: failures.map((f) => f.message).join(' ') })
    throw new OperationError(
      `Upgraded ${ctx.hosts.length - failures.length} of ${ctx.hosts.length} hosts to ${run.targetVersion}; ${failures.map((f) => f.host).join(', ')} failed (within --max-fail ${run.maxFail}): ${failures[0]?.message ?? ''}`,
      `See the report: ${ctx.journal.file('report.md')}`,
    )
  }
  ctx.journal.update({ phase: 'succeeded', finishedAt: new Date().toISOString() })
}

function asHostFailure(reason: unknown, h: HostHandle): HostFailure {
  if (reason instanceof HostFailure) return reason
  return new HostFailure(h.name, 'upgrade', reason instanceof Error ? reason.message : String(reason))
}

/**
 * A failure `--max-fail` tolerates: the host alone goes back to its previous version when the
 * schema did not change; when it did, the old version cannot run on it, so the host is left stopped.
 */
async function toleratedFailure(ctx: RunContext, f: HostFailure): Promise<void> {
  const h = ctx.hosts.find((x) => x.name === f.host) as HostHandle
  const now = await ctx.deps.database.fingerprint()
  if (now !== ctx.journal.run.fingerprintBefore) {
    await stopStep(ctx, h, 'host-rollback:')
    events.warn(`${h.name} failed and is left stopped: the schema changed, and its previous version cannot run on it.`, h.name)
    return
  }
  const previous = ctx.journal.run.previousVersions[h.name] as string
  await stopStep(ctx, h, 'host-rollback:')
  await installStep(ctx, h, previous, 'host-rollback:')
  await startAndCheckSteps(ctx, h, 'host-rollback:')
  await verifyHostStep(ctx, h, 'host-rollback:verify')
}

/** After a failure: nothing stopped yet -> the run failed, nothing changed; else roll back (or keep the broken state). */
async function handleFailure(ctx: RunContext, error: unknown, failures: HostFailure[]): Promise<void> {
  const run = ctx.journal.run
  const cause = error instanceof Error ? error.message : String(error)
  const stopped = ctx.journal.entries().some((e) => e.step === 'stop')
  if (!stopped) {
    ctx.journal.update({ phase: 'failed', finishedAt: new Date().toISOString(), cause })
    throw error
  }
  if (!run.autoRollback) {
    ctx.journal.update({ phase: 'failed', finishedAt: new Date().toISOString(), cause })
    throw new OperationError(
      `Upgrade to ${run.targetVersion} failed: ${cause} The hosts were left as they are (--no-auto-rollback).`,
      `Inspect, then roll back with: svcops rollback recording --env ${run.environment} --run ${run.id}`,
    )
  }
  ctx.journal.update({ phase: 'rolling-back', cause })
  const dataLoss = failures.some((f) => f.dataLoss) || (error instanceof HostFailure && error.dataLoss)
  const summary = await finishRollback(ctx, { dataLoss })
  throw new RolledBackError(
    `Upgrade to ${run.targetVersion} failed: ${cause} It was ${summary}.`,
    `See the report: ${ctx.journal.file('report.md')}`,
  )
}

/** Rolls back and records the outcome; returns a one-line summary of what it did. */
async function finishRollback(ctx: RunContext, options: { dataLoss?: boolean }): Promise<string> {
  const run = ctx.journal.run
  let outcome: RollbackOutcome
  try {
    outcome = await rollBack(ctx, options)
  } catch (error) {
    ctx.journal.update({ phase: 'rollback-failed', finishedAt: new Date().toISOString() })
    throw new OperationError(
      `The rollback of run ${run.id} failed: ${(error as Error).message}${run.cause ? ` (why it rolled back: ${run.cause})` : ''}`,
      `Fix the cause, then continue the rollback with: svcops resume ${run.id}`,
    )
  }
  ctx.journal.update({ phase: 'rolled-back', finishedAt: new Date().toISOString() })
  const versions = Object.entries(run.previousVersions)
    .map(([h, v]) => `${h} ${v}`)
    .join(', ')
  const summary = `rolled back to ${versions}${outcome.restored ? `; database restored from backup ${run.backupId ?? '?'} because ${outcome.reason}; ${outcome.recreated.length} recording(s) written after the backup re-created` : `; database kept (${outcome.reason})`}`
  events.info(`Run ${run.id}: ${summary}.`)
  return summary
}

/** `svcops resume ID`: continues an interrupted run, or rolls it back with `rollback: true`. */
export async function resumeRun(
  id: string,
  options: { rollback?: boolean; breakLock?: boolean },
  openDeps: DepsFactory,
): Promise<RunOutcome> {
  const journal = Journal.open(id)
  const run = journal.run
  if (isFinished(run) && !options.rollback)
    throw new BadInputError(
      `Run ${id} is finished (${run.phase}); there is nothing to resume.`,
      run.phase === 'succeeded' ? `To undo it: svcops rollback recording --env ${run.environment} --run ${id}` : undefined,
    )
  const env = loadEnvironmentFile(run.envFile, run.environment)
  const { lock, takeOver } = await lockFor(
    env,
    { ...run, startedAt: run.startedAt },
    { resuming: id, ...(options.breakLock ? { breakLock: true } : {}) },
  )
  journal.update({ pid: process.pid, holder: holderName() })
  journal.append({
    step: options.rollback ? 'resume-as-rollback' : 'resume',
    status: 'ok',
    detail: `resumed by ${holderName()} pid ${process.pid}`,
  })
  events.runId = id
  return withLockedRun(env, journal, lock, [...takeOver, id], options.breakLock ?? false, openDeps, async (ctx) => {
    if (options.rollback || run.phase === 'rolling-back') {
      if (!ctx.journal.entries().some((e) => e.step === 'stop')) {
        ctx.journal.update({
          phase: 'failed',
          finishedAt: new Date().toISOString(),
          cause: run.cause ?? 'interrupted before any host stopped',
        })
        events.info(`Run ${id} stopped no host before it was interrupted; nothing to roll back.`)
        return
      }
      // An automatic rollback that was interrupted still ends as "the upgrade failed and was rolled back" (exit 4).
      const automatic = run.phase === 'rolling-back' && !options.rollback
      ctx.journal.update({
        phase: 'rolling-back',
        cause:
          run.cause ??
          (run.phase === 'succeeded' ? `rolled back on request by ${holderName()}` : 'interrupted, then rolled back on request'),
      })
      const summary = await finishRollback(ctx, {})
      if (automatic)
        throw new RolledBackError(
          `Upgrade to ${run.targetVersion} failed: ${run.cause ?? 'unknown cause'} It was ${summary}.`,
          `See the report: ${ctx.journal.file('report.md')}`,
        )
      return
    }
    await executeUpgrade(ctx)
  })
}

/**
 * `svcops rollback recording`: rolls back run `runId` (default: the environment's newest upgrade
 * run), or with `to` moves every host to that version through the upgrade's own safe path.
 */
export async function rollbackRun(
  env: Environment,
  options: { runId?: string; to?: string; breakLock?: boolean },
  openDeps: DepsFactory,
): Promise<RunOutcome> {
  if (options.to) return upgradeRecording({ env, to: options.to, ...(options.breakLock ? { breakLock: true } : {}) }, openDeps)
  const id = await findRunToRollBack(env, options.runId)
  return resumeRun(id, { rollback: true, ...(options.breakLock ? { breakLock: true } : {}) }, openDeps)
}

/** The run `svcops rollback recording` acts on: `runId`, or the environment's newest upgrade run not yet rolled back. */
export async function findRunToRollBack(env: Environment, runId?: string): Promise<string> {
  const { listRuns } = await import('../runs/journal.ts')
  const id = runId ?? listRuns().find((r) => r.environment === env.name && r.kind === 'upgrade' && r.phase !== 'rolled-back')?.id
  if (!id)
    throw new BadInputError(
      `There is no upgrade run of environment '${env.name}' to roll back.`,
      `Give a version instead: svcops rollback recording --env ${env.name} --to VERSION`,
    )
  const run = Journal.open(id).run
  if (run.environment !== env.name) throw new BadInputError(`Run ${id} belongs to environment '${run.environment}', not '${env.name}'.`)
  if (run.phase === 'rolled-back') throw new BadInputError(`Run ${id} was already rolled back.`)
  return id
}
