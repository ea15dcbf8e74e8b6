/**
 * The platforms the live production system runs on, by `live.platform` in the stack file (`hosts`,
 * the default, or `kubernetes`), as `recording.platform` picks the recording service's: the one
 * place a platform is chosen. A platform is a folder implementing LivePlatform (live-platform.ts);
 * adding one is that folder, its section's schema (src/config) and a row here.
 */
import { requireSection } from '../config/load.ts'
import { BadInputError } from '../core/errors.ts'
import type { LiveClusterConfig } from '../config/live-cluster.ts'
import type { Environment, LiveConfig, LiveHostsSection, LiveSection } from '../config/schema.ts'
import type { Journal } from '../runs/journal.ts'
import type { LiveParams } from './live-params.ts'
import { hostLockPlace, openHostsPlatform } from './hosts/live-hosts-platform.ts'
import { clusterLiveConfig, clusterLock, openLiveCluster } from './kubernetes/live-cluster-handle.ts'
import { openKubernetesLivePlatform } from './kubernetes/live-kubernetes-platform.ts'
import { LIVE_COMPONENTS, productOf } from './layout.ts'
import { liveUnits } from './live-placement.ts'
import type { LiveLockPlace, LivePlatform, LiveScope } from './live-platform.ts'

/** What a platform of the live system does with its own section of the stack file. */
interface PlatformEntry<S extends LiveSection> {
  /** The platform for the run of `journal`, and the live section its steps read. */
  open(env: Environment, section: S, journal: Journal<LiveParams>): { live: LiveConfig; platform: LivePlatform }
  /** Where the run lock is: a file on the live host; on Kubernetes a file where svcops runs (Pulumi refuses a second update of the stack besides). */
  lock(env: Environment, section: S): LiveLockPlace
  /** The names of the units a run acts on, in dependency order, read from the stack file alone. */
  units(section: S): string[]
}

const PLATFORMS: { readonly hosts: PlatformEntry<LiveHostsSection>; readonly kubernetes: PlatformEntry<LiveClusterConfig> } = {
  hosts: {
    open: (env, live, journal) => ({ live, platform: openHostsPlatform(scopeOf(env, live, journal)) }),
    lock: (_env, live) => hostLockPlace(live),
    units: (live) => liveUnits(live).map((u) => u.name),
  },
  kubernetes: {
    open(env, section, journal) {
      const cluster = openLiveCluster(env, section)
      const live = clusterLiveConfig(env, section, cluster)
      return { live, platform: openKubernetesLivePlatform(scopeOf(env, live, journal), cluster) }
    },
    lock: (env) => clusterLock(env),
    units: () => [...LIVE_COMPONENTS],
  },
}

function scopeOf(env: Environment, live: LiveConfig, journal: Journal<LiveParams>): LiveScope {
  return { env, live, product: productOf(live), journal }
}

/** Calls `use` with the entry of the platform `svcops:live` names and its section (bad input naming `svcops:live` when there is none). */
function onPlatform<T>(env: Environment, use: <S extends LiveSection>(entry: PlatformEntry<S>, section: S) => T): T {
  const section = requireSection(env, 'live')
  return section.platform === 'kubernetes' ? use(PLATFORMS.kubernetes, section) : use(PLATFORMS.hosts, section)
}

/** The live system's platform for the run of `journal`, and the live section its steps read. Nothing connects until used. */
export function openLivePlatform(env: Environment, journal: Journal<LiveParams>): { live: LiveConfig; platform: LivePlatform } {
  return onPlatform(env, (entry, section) => entry.open(env, section, journal))
}

/** Where the run lock of the environment's live system is. */
export function liveLockPlace(env: Environment): LiveLockPlace {
  return onPlatform(env, (entry, section) => entry.lock(env, section))
}

/** Refuses an environment without a live system (bad input naming `svcops:live`). */
export function assertLiveSystem(env: Environment): void {
  requireSection(env, 'live')
}

/** The names of the units a run of the environment's live system acts on, in dependency order (before any platform is opened). */
export function liveUnitNames(env: Environment): string[] {
  return onPlatform(env, (entry, section) => entry.units(section))
}

/** The live section of an environment whose live system runs on hosts; one sentence naming `live.platform` otherwise. */
export function liveHostsSection(env: Environment): LiveHostsSection {
  const section = requireSection(env, 'live')
  if (section.platform !== 'hosts')
    throw new BadInputError(
      `${env.file}: live.platform: "${section.platform}" is not valid here; expected hosts (this needs the live system's hosts).`,
    )
  return section
}
