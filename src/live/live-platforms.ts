/**
 * The platforms the live production system runs on, by what the stack file's `svcops:live` says
 * (a host, or `platform: kubernetes`): the one place a platform is chosen. A platform is a folder
 * implementing LivePlatform (live-platform.ts); adding one is that folder and a row here.
 */
import { requireSection } from '../config/load.ts'
import type { Environment, LiveConfig } from '../config/schema.ts'
import type { Journal } from '../runs/journal.ts'
import type { LiveParams } from './live-params.ts'
import { hostLockPlace, openHostsPlatform } from './hosts/live-hosts-platform.ts'
import { clusterLiveConfig, clusterLock, openLiveCluster } from './kubernetes/live-cluster-handle.ts'
import { openKubernetesLivePlatform } from './kubernetes/live-kubernetes-platform.ts'
import { LIVE_COMPONENTS, productOf } from './layout.ts'
import { liveUnits } from './live-placement.ts'
import type { LiveLockPlace, LivePlatform, LiveScope } from './live-platform.ts'

interface PlatformEntry {
  /** The platform for the run of `journal`, and the live section its steps read. */
  open(env: Environment, journal: Journal<LiveParams>): { live: LiveConfig; platform: LivePlatform }
  /** Where the run lock is: a file on the live host; on Kubernetes a file where svcops runs (Pulumi refuses a second update of the stack besides). */
  lock(env: Environment): LiveLockPlace
}

const PLATFORMS: Readonly<Record<'hosts' | 'kubernetes', PlatformEntry>> = {
  hosts: {
    open(env, journal) {
      const live = requireSection(env, 'live')
      return { live, platform: openHostsPlatform(scopeOf(env, live, journal)) }
    },
    lock: (env) => hostLockPlace(requireSection(env, 'live')),
  },
  kubernetes: {
    open(env, journal) {
      const section = env.liveCluster
      if (!section) throw new Error('the environment has no svcops:live with platform kubernetes')
      const cluster = openLiveCluster(env, section)
      const live = clusterLiveConfig(env, section, cluster)
      return { live, platform: openKubernetesLivePlatform(scopeOf(env, live, journal), cluster) }
    },
    lock: (env) => clusterLock(env),
  },
}

function scopeOf(env: Environment, live: LiveConfig, journal: Journal<LiveParams>): LiveScope {
  return { env, live, product: productOf(live), journal }
}

/** The platform `svcops:live` names (a host when it names none). */
function platformOf(env: Environment): PlatformEntry {
  return PLATFORMS[env.liveCluster ? 'kubernetes' : 'hosts']
}

/** The live system's platform for the run of `journal`, and the live section its steps read. Nothing connects until used. */
export function openLivePlatform(env: Environment, journal: Journal<LiveParams>): { live: LiveConfig; platform: LivePlatform } {
  return platformOf(env).open(env, journal)
}

/** Where the run lock of the environment's live system is. */
export function liveLockPlace(env: Environment): LiveLockPlace {
  return platformOf(env).lock(env)
}

/** Refuses an environment without a live system (bad input naming `svcops:live`). */
export function assertLiveSystem(env: Environment): void {
  if (!env.liveCluster) requireSection(env, 'live')
}

/** The names of the units a run of the environment's live system acts on, in dependency order (before any platform is opened). */
export function liveUnitNames(env: Environment): string[] {
  if (env.liveCluster) return [...LIVE_COMPONENTS]
  return liveUnits(requireSection(env, 'live')).map((u) => u.name)
}
