/**
 * The live production system as the run engine runs it (src/runs/run-system.ts): how `svcops
 * upgrade live`'s request becomes a run (version, acknowledged gates and the TCP endpoint checked
 * before anything is read), how it is locked (the lock file of its platform), how its context is
 * opened and closed, and how its dry run reads. The playbook is given by playbooks/upgrade-live.ts
 * (`liveSystem(playbook)`), so this module never depends on a playbook file.
 */
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { assertVersion } from '../releases/versions.ts'
import { Journal } from '../runs/journal.ts'
import type { LockPolicy } from '../runs/lock-policy.ts'
import { listEnvironmentRuns, openRunToContinue, type RunAccess } from '../runs/run-listing.ts'
import type { Playbook } from '../runs/playbook.ts'
import { newRunRecord, type RunRecord } from '../runs/run-record.ts'
import type { RunSystem } from '../runs/run-system.ts'
import { assertAckIds } from './gates.ts'
import { LIVE_COMPONENTS } from './layout.ts'
import { liveContext, lockLiveEnvironment, openLiveRun, type LiveContext } from './live-context.ts'
import { liveDescription } from './live-description.ts'
import type { LiveParams } from './live-params.ts'
import { assertLiveSystem, liveUnitNames } from './live-platforms.ts'
import { parseMaxFail, planBatches } from '../runs/rollout.ts'
import { soakOf } from '../config/analysis.ts'

export interface LiveUpgradeRequest {
  env: Environment
  to: string
  /** Gates acknowledged by id (`--ack 6.0.0/send-message`). */
  acks?: string[]
  /** The one endpoint kept when the pipeline lists several (`--tcp-endpoint`). */
  tcpEndpoint?: string
  /** Instances of a type upgraded at once after its canary (`--batch`, default 1). */
  batch?: number
  /** Failed instances tolerated (`--max-fail N|P%`, default 0). */
  maxFail?: string
  /** The release a dry run plans from when the running one cannot be read (`--from`, dry run only). */
  from?: string
  autoRollback?: boolean
  lockPolicy?: LockPolicy
  /** `--soak`, in ms: each type's canary judged before its batches (default: the stack's `analysis.soak`). */
  soakMs?: number
  /** `--pause-after-canary`: wait for a person after the first type's verified canary. */
  pauseAfterCanary?: boolean
}

/** The live system as the engine runs it. */
export type LiveSystem = RunSystem<LiveParams, LiveUpgradeRequest, LiveContext>

export { liveDescription } from './live-description.ts'

const ENDPOINT = /^[^\s,;]+:\d{1,5}$/

/** The record of a check of the live system that changes nothing worth a journal (`svcops verify live`). */
export function newLiveCheckRecord(env: Environment): RunRecord<LiveParams> {
  return newRunRecord({
    kind: 'verify',
    system: 'live',
    environment: env.name,
    envFile: env.file,
    params: {
      components: env.live ? liveUnitNames(env) : [...LIVE_COMPONENTS],
      previousVersions: {},
      acks: [],
      batchSize: 1,
      maxFail: '0',
    },
  })
}

/** The live system as the engine runs it, every run following `playbook`. */
export function liveSystem(playbook: Playbook<LiveContext, LiveParams>): LiveSystem {
  return {
    ...liveDescription,
    newRun(req) {
      assertLiveSystem(req.env)
      assertVersion(req.to)
      if (req.from !== undefined) assertVersion(req.from, '--from')
      assertAckIds(req.acks ?? [])
      if (req.tcpEndpoint !== undefined && !ENDPOINT.test(req.tcpEndpoint))
        throw new BadInputError(`--tcp-endpoint: '${req.tcpEndpoint}' is not an endpoint; expected host:port like 127.0.0.1:7101.`)
      const units = liveUnitNames(req.env)
      const batch = req.batch ?? 1
      planBatches(
        units.map((name) => ({ name })),
        batch,
      ) // refuses a --batch that is not a whole number of at least 1
      const maxFail = req.maxFail ?? '0'
      parseMaxFail(maxFail, units.length)
      return {
        kind: 'upgrade',
        targetVersion: req.to,
        autoRollback: req.autoRollback ?? true,
        params: {
          components: units,
          previousVersions: {},
          acks: [...new Set(req.acks ?? [])],
          ...(req.tcpEndpoint ? { tcpEndpoint: req.tcpEndpoint } : {}),
          batchSize: batch,
          maxFail,
          ...(req.from ? { plannedFrom: req.from } : {}),
          ...soakParam(req),
          ...(req.pauseAfterCanary ? { pauseAfterCanary: true } : {}),
        },
      }
    },
    announce: (run, env) => `Run ${run.id}: upgrade the live production system of '${env.name}' to ${run.targetVersion}.`,
    async lock(env, run, options) {
      const lock = await lockLiveEnvironment(env, run, {
        ...(options.resuming ? { takeOver: [options.resuming] } : {}),
        lockPolicy: options.lockPolicy,
      })
      return { lock, takeOver: [] }
    },
    open: (env, journal) => openLiveRun(env)(journal),
    openToPlan(env, journal) {
      const ctx = liveContext(env, journal)
      return Promise.resolve({ ctx, close: () => ctx.platform.close() })
    },
    playbook: () => playbook,
    plan: {
      title: (plan) =>
        `Dry run: upgrade of the live production system of '${plan.environment}' to ${plan.target} (nothing will be changed).`,
      facts: (run) => {
        const rollout = rolloutOf(run.params)
        return rollout.length ? { rollout } : {}
      },
      lines: (plan) =>
        ((plan.rollout as ReturnType<typeof rolloutOf> | undefined) ?? []).map(
          (r) =>
            `Rollout of ${r.component}: ${r.batches.map((b, i) => `${i === 0 ? 'canary' : `batch ${i}`} [${b.join(', ')}]`).join(' -> ')}`,
        ),
      continuation: () => ({ what: 'live upgrade', unfinished: 'it did not finish', more: [] }),
      nothingToUndo: 'no component was stopped by this run',
    },
  }
}

/** The rollout of each type with several instances (across hosts): its canary and batches of `batchSize`, by unit name. */
function rolloutOf(params: LiveParams): Array<{ component: string; batches: string[][] }> {
  const types = [...new Set(params.components.map((u) => u.split('/')[1] ?? u))]
  return types.flatMap((component) => {
    const instances = params.components.filter((u) => (u.split('/')[1] ?? u) === component).map((name) => ({ name }))
    if (instances.length < 2) return []
    return [{ component, batches: planBatches(instances, params.batchSize).map((b) => b.map((u) => u.name)) }]
  })
}

/**
 * The run `svcops rollback live` acts on: `runId`, or the environment's newest live upgrade run not
 * yet rolled back; one kept only in the environment is checked, and copied here unless `access.dryRun`.
 */
export async function findLiveRunToRollBack(env: Environment, runId?: string, access: RunAccess = {}): Promise<Journal> {
  // This system's runs: the local folder and its own store in the environment.
  const systems = [liveDescription]
  const id =
    runId ??
    (await listEnvironmentRuns(env, systems)).find(
      (r) => r.environment === env.name && r.system === 'live' && r.kind === 'upgrade' && r.phase !== 'no-op',
    )?.id
  if (!id) throw new BadInputError(`There is no live upgrade run of environment '${env.name}' to roll back.`)
  // Neither here nor in the environment: the local folder's own sentence.
  const journal = (await openRunToContinue(env, systems, id, access)) ?? Journal.open(id)
  const run = journal.run
  if (run.system !== 'live')
    throw new BadInputError(
      `Run ${id} is not a run of the live production system; roll it back with: svcops rollback recording --run ${id}`,
    )
  if (run.environment !== env.name) throw new BadInputError(`Run ${id} belongs to environment '${run.environment}', not '${env.name}'.`)
  if (run.phase === 'rolled-back') throw new BadInputError(`Run ${id} was already rolled back.`)
  if (run.phase === 'no-op')
    throw new BadInputError(
      `Run ${id} changed nothing (every component was already on ${run.targetVersion}); there is nothing to roll back.`,
    )
  return journal
}

/**
 * The release every component of `env`'s live system runs now (what `svcops plan live --env E`
 * plans from when --from is not given); one sentence when a component is missing or they differ.
 */
export async function readInstalledLiveRelease(env: Environment): Promise<string> {
  assertLiveSystem(env)
  const ctx = liveContext(env, Journal.inMemory(newLiveCheckRecord(env)))
  try {
    const versions: [string, string | undefined][] = []
    for (const u of ctx.units) versions.push([u.name, await ctx.platform.installedVersion(u)])
    const distinct = [...new Set(versions.map(([, v]) => v))]
    const only = distinct[0]
    if (distinct.length === 1 && only) return only
    throw new BadInputError(
      `--from: not given, and the live system of '${env.name}' on ${ctx.platform.where} runs no single release (${versions.map(([c, v]) => `${c} ${v ?? 'not installed'}`).join(', ')}); expected --from VERSION.`,
    )
  } finally {
    await ctx.platform.close()
  }
}

/** The run's soak: `--soak`, else the stack's `analysis.soak`. */
function soakParam(req: LiveUpgradeRequest): { soakMs?: number } {
  const ms = soakOf(req.soakMs, req.env.upgrade?.analysis)
  return ms ? { soakMs: ms } : {}
}
