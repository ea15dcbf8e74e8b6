/**
 * A live rehearsal as the run engine runs it (src/runs/run-system.ts): a run of the live system of
 * kind `rehearse`, kept in the environment's live run store like its upgrades and locked by the same
 * lock file (a rehearsal and an upgrade of one live system never overlap). Interrupted, it lets go of
 * the lock: it changed nothing in production, and its close removed the copy. `svcops resume ID`
 * reaches it through the live system's entry (`withLiveRehearsals`), which hands a rehearsal's run
 * to this system. The playbook is given by playbooks/rehearse-live.ts.
 */
import type { Environment } from '../../config/schema.ts'
import { BadInputError } from '../../core/errors.ts'
import { assertVersion } from '../../releases/versions.ts'
import type { LockPolicy } from '../../runs/lock-policy.ts'
import type { Playbook } from '../../runs/playbook.ts'
import type { RunRecord } from '../../runs/run-record.ts'
import type { RunSystem } from '../../runs/run-system.ts'
import { lockLiveEnvironment } from '../live-context.ts'
import { liveDescription } from '../live-description.ts'
import type { LiveParams } from '../live-params.ts'
import { liveUnitNames } from '../live-platforms.ts'
import type { LiveSystem } from '../live-system.ts'
import { hostsLive, openLiveRehearsal, openLiveRehearsalToPlan, type LiveRehearsalContext } from './live-rehearsal.ts'

/** `svcops rehearse live --env E --to V [--from V] [--tcp-endpoint H:P]`. */
export interface LiveRehearsalRequest {
  env: Environment
  to: string
  /** The release the system runs (default: the system controller's installed package). */
  from?: string
  tcpEndpoint?: string
  lockPolicy?: LockPolicy
}

export type LiveRehearsalSystem = RunSystem<LiveParams, LiveRehearsalRequest, LiveRehearsalContext>

const ENDPOINT = /^[^\s,;]+:\d{1,5}$/

/** The live rehearsal system, following `playbook`. */
export function liveRehearsalSystem(playbook: Playbook<LiveRehearsalContext, LiveParams>): LiveRehearsalSystem {
  return {
    ...liveDescription,
    newRun(req) {
      hostsLive(req.env)
      assertVersion(req.to)
      if (req.from !== undefined) assertVersion(req.from, '--from')
      if (req.tcpEndpoint !== undefined && !ENDPOINT.test(req.tcpEndpoint))
        throw new BadInputError(`--tcp-endpoint: '${req.tcpEndpoint}' is not an endpoint; expected host:port like 127.0.0.1:7101.`)
      return {
        kind: 'rehearse',
        targetVersion: req.to,
        autoRollback: false,
        params: {
          components: liveUnitNames(req.env),
          previousVersions: {},
          acks: [],
          batchSize: 1,
          maxFail: '0',
          ...(req.from ? { plannedFrom: req.from } : {}),
          ...(req.tcpEndpoint ? { tcpEndpoint: req.tcpEndpoint } : {}),
        },
      }
    },
    announce: (run, env) =>
      `Run ${run.id}: rehearse the live upgrade of '${env.name}' to ${run.targetVersion} on a copy of its files (production is not changed).`,
    async lock(env, run, options) {
      const lock = await lockLiveEnvironment(env, run, {
        ...(options.resuming ? { takeOver: [options.resuming] } : {}),
        lockPolicy: options.lockPolicy,
      })
      // Nothing to finish in production: interrupted, it lets go of the lock (its close removed the copy).
      return { lock: { release: () => lock.release(), lost: () => lock.lost?.() ?? Promise.resolve(undefined) }, takeOver: [] }
    },
    open: (env, journal) => openLiveRehearsal(env, journal),
    openToPlan: (env, journal) => openLiveRehearsalToPlan(env, journal),
    playbook: () => playbook,
    plan: {
      title: (plan) =>
        `Dry run: rehearsal of the live upgrade of '${plan.environment}' to ${plan.target} on a copy of its files (nothing will be changed).`,
      facts: () => ({}),
      lines: () => [],
      continuation: () => ({ what: 'live rehearsal', unfinished: 'it did not finish; the copy is made again', more: [] }),
      nothingToUndo: 'a rehearsal changes nothing in production; its copy is removed',
    },
  }
}

const rehearsing = (run: Pick<RunRecord, 'kind'>): boolean => run.kind === 'rehearse'

/**
 * The live system as `svcops resume` finds it by name: its upgrades' runs as `live` runs them, a
 * rehearsal's run (its record's kind) by `rehearsal` — its lock, its context on the copy, its playbook.
 */
export function withLiveRehearsals(live: LiveSystem, rehearsal: LiveRehearsalSystem): LiveSystem {
  // One context type per run, picked by the run's own kind: the engine hands each method's context to that run's playbook only.
  const other = rehearsal as unknown as LiveSystem
  return {
    ...live,
    lock: (env, run, options) => (rehearsing(run) ? other : live).lock(env, run, options),
    open: (env, journal, options) => (rehearsing(journal.run) ? other : live).open(env, journal, options),
    openToPlan: (env, journal) => (rehearsing(journal.run) ? other : live).openToPlan(env, journal),
    playbook: (run) => (rehearsing(run) ? other : live).playbook(run),
    plan: {
      ...live.plan,
      continuation: (journal, env) => (rehearsing(journal.run) ? other : live).plan.continuation(journal, env),
    },
  }
}
