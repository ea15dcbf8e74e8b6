/**
 * A rehearsal as the run engine runs it (src/runs/run-system.ts): a run of the recording service
 * of kind `rehearse`, kept in the environment's run store like its upgrades and locked by the same
 * environment lock (a rehearsal and an upgrade of one environment never overlap), whose one target
 * is the stack's rehearsal host and whose database is the scratch copy (rehearsal-context.ts). The
 * playbook is given by playbooks/rehearse.ts.
 */
import type { Environment } from '../../config/schema.ts'
import { assertVersion } from '../../releases/versions.ts'
import type { LockPolicy } from '../../runs/lock-policy.ts'
import type { Playbook } from '../../runs/playbook.ts'
import { planBatches } from '../../runs/rollout.ts'
import type { NewRun, RunSystem } from '../../runs/run-system.ts'
import { lockRecordingEnvironment } from '../recording-context.ts'
import { recordingDescription } from '../recording-description.ts'
import { emptyRecordingParams, type RecordingParams } from '../recording-params.ts'
import { recordingTargets } from '../recording-platforms.ts'
import {
  openRehearsal,
  openRehearsalToPlan,
  rehearsalEnvironment,
  rehearsalTargetName,
  type RehearsalContext,
} from './rehearsal-context.ts'

/** `svcops rehearse recording --env E --to V [--batch N] [--window D]`. */
export interface RehearseRequest {
  env: Environment
  to: string
  /** The real rollout's batch size, for the prediction (default 1). */
  batch?: number
  /** The maintenance window the prediction is set beside, in ms. */
  windowMs?: number
  lockPolicy?: LockPolicy
}

export type RehearsalSystem = RunSystem<RecordingParams, RehearseRequest, RehearsalContext>

/** A new rehearsal's fields: validated (version, the rehearsal section) before anything is read. */
export function newRehearsalRun(req: RehearseRequest): NewRun<RecordingParams> {
  assertVersion(req.to)
  rehearsalEnvironment(req.env) // refused here, before anything is read, where a rehearsal cannot run
  const host = rehearsalTargetName(req.env)
  return {
    kind: 'rehearse',
    targetVersion: req.to,
    autoRollback: false,
    params: {
      ...emptyRecordingParams(),
      hosts: [host],
      batchSize: req.batch ?? 1,
      ...(req.windowMs ? { deadline: new Date(Date.now() + req.windowMs).toISOString() } : {}),
    },
  }
}

/** The production rollout's batches the prediction is made for (canary first). */
export function productionBatches(env: Environment, batchSize: number): string[][] {
  return planBatches(recordingTargets(env), Math.max(1, batchSize)).map((b) => b.map((h) => h.name))
}

/** The rehearsal system, following `playbook`. */
export function rehearsalSystem(playbook: Playbook<RehearsalContext, RecordingParams>): RehearsalSystem {
  return {
    ...recordingDescription,
    newRun: newRehearsalRun,
    announce: (run, env) =>
      `Run ${run.id}: rehearse ${env.recording?.package ?? ''} ${run.targetVersion} on ${run.params.hosts.join(', ')} against a copy of ${env.name}'s database (production is not changed).`,
    async lock(env, run, options) {
      const { lock, takeOver } = await lockRecordingEnvironment(env, run, options)
      // A rehearsal has nothing to finish: interrupted, it lets go of the lock (its close cleaned up).
      return { lock: { release: () => lock.release() }, takeOver }
    },
    open: (env, journal, options) => openRehearsal(env, journal, options),
    openToPlan: (env, journal) => openRehearsalToPlan(env, journal),
    playbook: () => playbook,
    plan: {
      title: (plan) => `Dry run: rehearsal of ${plan.target} for environment '${plan.environment}' (nothing will be changed).`,
      facts: (run, req) => ({ batches: req ? productionBatches(req.env, run.params.batchSize) : [] }),
      lines: (plan) => [
        `Predicted for the rollout: ${((plan.batches as string[][] | undefined) ?? []).map((b, i) => `${i === 0 ? 'canary' : `batch ${i}`} [${b.join(', ')}]`).join(' -> ')}`,
      ],
      continuation: () => ({ what: 'rehearse', unfinished: 'a rehearsal starts over', more: [] }),
      nothingToUndo: 'a rehearsal changes nothing in production',
    },
  }
}
