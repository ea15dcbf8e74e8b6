/**
 * What every step of the live playbooks shares: the environment's live section, the platform the
 * system runs on (how components are installed, started, configured and checked), the units (each
 * component's instances on their hosts) in dependency order, and the journal. The run lock of a live environment is a file (on its host;
 * on Kubernetes where svcops runs): one run per live system; a run that died holding it is named,
 * with the commands that finish it.
 */
import type { Environment, LiveConfig } from '../config/schema.ts'
import { errorMessage, LockedError, withFacts } from '../core/errors.ts'
import { Journal } from '../runs/journal.ts'
import type { LockPolicy } from '../runs/lock-policy.ts'
import { isFinished, type RunRecord } from '../runs/run-record.ts'
import { acquireHostLock } from '../runs/lock.ts'
import { hostLeaseLost, releaseHostLease, renewHostLease } from '../runs/host-lease.ts'
import type { HeldLock, Opened } from '../runs/playbook.ts'
import { productOf, type LiveProduct } from './layout.ts'
import type { LiveUnit } from './live-placement.ts'
import type { LiveParams } from './live-params.ts'
import type { LivePlatform } from './live-platform.ts'
import { liveLockPlace, openLivePlatform } from './live-platforms.ts'

/** An instance of a component taking part in a run (the engine's "host" of a per-unit step). */
export type ComponentHandle = LiveUnit

/** Everything a step of the live playbooks needs. */
export interface LiveContext {
  env: Environment
  live: LiveConfig
  product: LiveProduct
  journal: Journal<LiveParams>
  /** The platform the system runs on (its host, Kubernetes): every step reaches the components through it. */
  platform: LivePlatform
  /** The run's units in dependency order: the controller first, then each type's instances on their hosts. */
  units: ComponentHandle[]
}

/** Builds the context of run `journal`; `ctx.platform.close()` releases what it opened. */
export function liveContext(env: Environment, journal: Journal<LiveParams>): LiveContext {
  const { live, platform } = openLivePlatform(env, journal)
  return { env, live, product: productOf(live), journal, platform, units: platform.units }
}

/**
 * Takes the live environment's lock for `run` (the lock file on its host, a lease renewed while the
 * run holds it). A run that died holding it is refused, naming it and how to finish it, unless it
 * is the run being resumed (`takeOver`) — and then only once its holder is proven gone — or `lockPolicy` is `break-any`.
 * The run stops at its next step once the lock holds another holder's line (`HeldLock.lost`).
 */
export async function lockLiveEnvironment(
  env: Environment,
  run: Pick<RunRecord, 'id' | 'holder' | 'startedAt'>,
  options: { takeOver?: string[]; lockPolicy?: LockPolicy },
): Promise<HeldLock> {
  const { transport, path } = liveLockPlace(env)
  const host = { transport }
  const holder = { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt }
  let line: string
  try {
    line = await acquireHostLock(host.transport, path, holder, {
      ...(options.takeOver ? { takeOver: options.takeOver } : {}),
      // A lock file left is an unfinished run's: --break-lock takes it only with --force.
      lockPolicy: options.lockPolicy,
      // A lease: a resume takes it over only once its holder is proven gone, never because it names the run.
      lease: true,
    })
  } catch (error) {
    await host.transport.close()
    throw explainLock(env, error)
  }
  // Renewed, released and checked by this taking's own line: a holder that outslept its lease and
  // was taken over (same run id, another machine) neither renews nor removes the new holder's lock.
  const lease = renewHostLease(host.transport, path, line)
  return {
    async release() {
      lease.stop()
      await releaseHostLease(host.transport, path, line).catch(() => undefined)
      await host.transport.close()
    },
    lost: () => hostLeaseLost(host.transport, path, line, `live system '${env.name}'`),
    async leave() {
      // The lock file stays, naming the interrupted run: the next run is refused until it is finished.
      lease.stop()
      await host.transport.close()
    },
  }
}

/** A lock held by a run that is not finished (killed): name the commands that finish it. */
function explainLock(env: Environment, error: unknown): unknown {
  if (!(error instanceof LockedError)) return error
  const runId = (error.facts.lockedBy as { runId?: string } | undefined)?.runId
  if (!runId) return error
  let unfinished = false
  try {
    unfinished = !isFinished(Journal.open(runId).run)
  } catch {
    // No local journal: the run was started from another machine; its holder's message stands.
    return error
  }
  if (!unfinished) return error
  return withFacts(
    new LockedError(
      `${errorMessage(error)} That run did not finish.`,
      `Continue it: svcops resume ${runId}   or roll it back: svcops resume ${runId} --rollback`,
    ),
    { ...error.facts, unfinishedRun: runId },
  )
}

/** Opens the context of a run (the lock is the caller's). */
export function openLiveRun(env: Environment) {
  return (journal: Journal<LiveParams>): Promise<Opened<LiveContext>> => {
    const ctx = liveContext(env, journal)
    return Promise.resolve({ ctx, close: () => ctx.platform.close() })
  }
}
