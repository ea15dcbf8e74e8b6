/**
 * Runs of the live playbooks: a new upgrade run (its record, the lock on the live host, the
 * journal), a resume or a rollback of one from its journal, and the dry run of each — the same
 * playbook in plan mode with a journal kept in memory. The playbook is given by the caller
 * (playbooks/upgrade-live.ts), so this module never depends on a playbook file.
 */
import { requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { PlannedStep } from '../runs/engine.ts'
import { Journal, listRuns, newRunRecord, type RunRecord } from '../runs/journal.ts'
import {
  continuationOf,
  journalStep,
  planRun,
  rehearsalJournal,
  resumeRun,
  startRun,
  type Playbook,
  type RunOutcome,
} from '../runs/playbook.ts'
import { assertVersion } from '../recording/recording-runs.ts'
import { liveContext, lockLiveEnvironment, openLiveRun, type LiveContext } from './live-context.ts'
import { assertAckIds } from './gates.ts'
import { LIVE_COMPONENTS } from './layout.ts'

export interface LiveUpgradeRequest {
  env: Environment
  to: string
  /** Gates acknowledged by id (`--ack 6.0.0/send-message`). */
  acks?: string[]
  /** The one endpoint kept when the pipeline lists several (`--tcp-endpoint`). */
  tcpEndpoint?: string
  autoRollback?: boolean
  breakLock?: boolean
}

/** The dry run of a live run: what would be done, step by step, with the exact commands and diffs. */
export interface LivePlan {
  environment: string
  what: 'upgrade' | 'resume' | 'rollback'
  runId?: string
  target: string
  steps: PlannedStep[]
}

const ENDPOINT = /^[^\s,;]+:\d{1,5}$/

/** The record of a new live upgrade run (validated: version, acks, endpoint). */
export function newLiveRecord(req: LiveUpgradeRequest): RunRecord {
  if (!req.env.liveCluster) requireSection(req.env, 'live')
  assertVersion(req.to)
  assertAckIds(req.acks ?? [])
  if (req.tcpEndpoint !== undefined && !ENDPOINT.test(req.tcpEndpoint))
    throw new BadInputError(`--tcp-endpoint: '${req.tcpEndpoint}' is not an endpoint; expected host:port like 127.0.0.1:7101.`)
  return newRunRecord({
    kind: 'upgrade',
    system: 'live',
    environment: req.env.name,
    envFile: req.env.file,
    targetVersion: req.to,
    hosts: [...LIVE_COMPONENTS],
    autoRollback: req.autoRollback ?? true,
    acks: [...new Set(req.acks ?? [])],
    ...(req.tcpEndpoint ? { tcpEndpoint: req.tcpEndpoint } : {}),
  })
}

/** Starts a new run of `playbook` (`svcops upgrade live`). */
export async function startLiveRun(playbook: Playbook<LiveContext>, req: LiveUpgradeRequest): Promise<RunOutcome> {
  const record = newLiveRecord(req)
  const lock = await lockLiveEnvironment(req.env, record, req.breakLock ? { breakLock: true } : {})
  const journal = Journal.create(record)
  events.info(`Run ${record.id}: upgrade the live production system of '${req.env.name}' to ${req.to}.`)
  return startRun({ playbook, journal, lock, open: openLiveRun(req.env) })
}

/** Continues live run `id` from its journal, or rolls it back with `rollback: true` (`svcops resume`). */
export async function resumeLiveRun(
  playbook: Playbook<LiveContext>,
  id: string,
  options: { rollback?: boolean; breakLock?: boolean },
): Promise<RunOutcome> {
  const { journal, record, env } = continuationOf(playbook, id, options)
  const lock = await lockLiveEnvironment(env, record, { takeOver: [id], ...(options.breakLock ? { breakLock: true } : {}) })
  return resumeRun({ playbook, journal, lock, open: openLiveRun(env) }, options.rollback ? { rollback: true } : {})
}

/** The run `svcops rollback live` acts on: `runId`, or the environment's newest live upgrade run not yet rolled back. */
export function findLiveRunToRollBack(env: Environment, runId?: string): string {
  const id = runId ?? listRuns().find((r) => r.environment === env.name && r.system === 'live' && r.kind === 'upgrade')?.id
  if (!id) throw new BadInputError(`There is no live upgrade run of environment '${env.name}' to roll back.`)
  const run = Journal.open(id).run
  if (run.system !== 'live')
    throw new BadInputError(
      `Run ${id} is not a run of the live production system; roll it back with: svcops rollback recording --run ${id}`,
    )
  if (run.environment !== env.name) throw new BadInputError(`Run ${id} belongs to environment '${run.environment}', not '${env.name}'.`)
  if (run.phase === 'rolled-back') throw new BadInputError(`Run ${id} was already rolled back.`)
  return id
}

/** The dry run of a new live upgrade: reads the host, changes nothing. */
export async function planLiveUpgradeRun(playbook: Playbook<LiveContext>, req: LiveUpgradeRequest): Promise<LivePlan> {
  const journal = Journal.inMemory(newLiveRecord(req))
  return { environment: req.env.name, what: 'upgrade', target: req.to, steps: await planned(playbook, req.env, journal, 'start') }
}

/** The dry run of `svcops resume ID` or of a rollback of run `id`. */
export async function planLiveContinuation(playbook: Playbook<LiveContext>, id: string, options: { rollback: boolean }): Promise<LivePlan> {
  const continuation = continuationOf(playbook, id, options)
  const { env, record, rollingBack, nothingToUndo } = continuation
  const steps = nothingToUndo ? [] : await planned(playbook, env, rehearsalJournal(continuation), rollingBack ? 'rollback' : 'resume')
  return {
    environment: env.name,
    what: rollingBack ? 'rollback' : 'resume',
    runId: id,
    target: record.targetVersion,
    steps: [
      journalStep(continuation, 'live upgrade', { unfinished: 'it did not finish' }),
      ...(nothingToUndo ? [{ step: 'nothing to roll back' as const, title: 'no component was stopped by this run', actions: [] }] : steps),
    ],
  }
}

async function planned(
  playbook: Playbook<LiveContext>,
  env: Environment,
  journal: Journal,
  what: 'start' | 'resume' | 'rollback',
): Promise<PlannedStep[]> {
  const ctx = liveContext(env, journal)
  try {
    return await planRun(playbook, ctx, journal, what)
  } finally {
    await ctx.platform.close()
  }
}

/** The plan as text, one step per block. */
export function renderLivePlan(plan: LivePlan): string {
  const head =
    plan.what === 'upgrade'
      ? `Dry run: upgrade of the live production system of '${plan.environment}' to ${plan.target} (nothing will be changed).`
      : `Dry run: ${plan.what} of run ${plan.runId ?? '?'} in environment '${plan.environment}' (nothing will be changed).`
  const lines = [head, '']
  for (const s of plan.steps) {
    lines.push(`${s.host ? `[${s.host}] ` : ''}${s.step} — ${s.title}`)
    for (const a of s.actions) lines.push(`    ${a}`)
  }
  return lines.join('\n')
}
