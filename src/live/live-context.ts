/**
 * What every step of the live playbooks shares: the environment's live section, its host with its
 * transport, the platform (how components are installed, started and checked), the components in
 * dependency order, and the journal. The run lock of a live environment is a file on its host
 * (one run per live system, wherever svcops runs); a run that died holding it is named, with the
 * commands that finish it.
 */
import { requireSection } from '../config/load.ts'
import type { Environment, LiveConfig } from '../config/schema.ts'
import { errorMessage, LockedError, withFacts } from '../core/errors.ts'
import { hostPath, transportFor } from '../drivers/transports.ts'
import { isFinished, Journal, type RunRecord } from '../runs/journal.ts'
import { acquireHostLock, releaseHostLock } from '../runs/lock.ts'
import type { HeldLock, Opened } from '../runs/playbook.ts'
import {
  clusterHost,
  clusterLiveConfig,
  clusterLock,
  clusterPlatform,
  openLiveCluster,
  type LiveCluster,
} from './kubernetes/live-cluster.ts'
import type { LiveHost } from './hosts/host-files.ts'
import { LIVE_COMPONENTS, productOf, type LiveComponentName, type LiveProduct } from './layout.ts'
import { hostsPlatform, type LivePlatform } from './live-platform.ts'

/** A component taking part in a run (the engine's "host" of a per-component step). */
export interface ComponentHandle {
  name: LiveComponentName
}

/** Everything a step of the live playbooks needs. */
export interface LiveContext {
  env: Environment
  live: LiveConfig
  product: LiveProduct
  journal: Journal
  host: LiveHost
  platform: LivePlatform
  /** The components in dependency order: the controller first. */
  components: ComponentHandle[]
  /** How long a started component may take to connect to the controller. */
  connectTimeoutMs: number
  /** The Kubernetes platform's stack and API (`svcops:live.platform: kubernetes`); absent on hosts. */
  cluster?: LiveCluster
}

/** The run lock's file on the live host. */
export const LIVE_LOCK_PATH = '/var/lib/svcops/live-upgrade.lock'

/** The live host of an environment, with a transport (connections are lazy). */
export function openLiveHost(live: LiveConfig): LiveHost {
  const config = { url: live.controllerUrl, canary: false, ...live.host }
  return { name: live.host.name, config: live.host, transport: transportFor(config) }
}

/** Builds the context of run `journal`; `close` releases the transport. */
export function liveContext(env: Environment, journal: Journal, host?: LiveHost): LiveContext {
  if (env.liveCluster) return liveClusterContext(env, journal)
  const live = requireSection(env, 'live')
  host ??= openLiveHost(live)
  return {
    env,
    live,
    product: productOf(live),
    journal,
    host,
    platform: hostsPlatform(live, host),
    components: LIVE_COMPONENTS.map((name) => ({ name })),
    connectTimeoutMs: (live.connectTimeoutSeconds ?? 30) * 1000,
  }
}

/** The context on the Kubernetes platform: the namespace as the run's host, the stack and the API as its platform. */
function liveClusterContext(env: Environment, journal: Journal): LiveContext {
  const section = env.liveCluster
  if (!section) throw new Error('liveClusterContext: the environment is not on the Kubernetes platform')
  const cluster = openLiveCluster(env, section)
  const live = clusterLiveConfig(env, section, cluster)
  const rotated = () => journal.entries().some((e) => e.status === 'ok' && !!e.data?.pskRotation)
  return {
    env,
    live,
    product: productOf(live),
    journal,
    host: clusterHost(cluster),
    platform: clusterPlatform(cluster, env, rotated),
    components: LIVE_COMPONENTS.map((name) => ({ name })),
    connectTimeoutMs: (live.connectTimeoutSeconds ?? 300) * 1000,
    cluster,
  }
}

/**
 * Takes the live environment's lock for `run` (the lock file on its host). A run that died holding
 * it is refused, naming it and how to finish it, unless it is the run being resumed (`takeOver`)
 * or `breakLock`.
 */
export async function lockLiveEnvironment(
  env: Environment,
  run: Pick<RunRecord, 'id' | 'holder' | 'startedAt'>,
  options: { takeOver?: string[]; breakLock?: boolean },
): Promise<HeldLock> {
  const { transport, path } = lockPlace(env)
  const host = { transport }
  const holder = { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt }
  try {
    await acquireHostLock(host.transport, path, holder, {
      ...(options.takeOver ? { takeOver: options.takeOver } : {}),
      ...(options.breakLock ? { breakLock: true } : {}),
    })
  } catch (error) {
    await host.transport.close()
    throw explainLock(env, error)
  }
  return {
    async release() {
      await releaseHostLock(host.transport, path, run.id).catch(() => undefined)
      await host.transport.close()
    },
  }
}

/** Where the lock is: a file on the live host; on Kubernetes a file where svcops runs (Pulumi refuses a second update of the stack besides). */
function lockPlace(env: Environment): { transport: LiveHost['transport']; path: string } {
  if (env.liveCluster) return clusterLock(env)
  const live = requireSection(env, 'live')
  return { transport: openLiveHost(live).transport, path: hostPath(live.host, LIVE_LOCK_PATH) }
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
      `Resume it: svcops resume ${runId}   or roll it back: svcops rollback live --env ${env.name} --run ${runId}   (or --break-lock to ignore it)`,
    ),
    { ...error.facts, unfinishedRun: runId },
  )
}

/** Opens the context of a run (the lock is the caller's). */
export function openLiveRun(env: Environment) {
  return (journal: Journal): Promise<Opened<LiveContext>> => {
    const ctx = liveContext(env, journal)
    return Promise.resolve({ ctx, close: () => ctx.host.transport.close() })
  }
}
