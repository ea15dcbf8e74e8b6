/**
 * Which host runs which instance of the live production system, from `svcops:live`: one host
 * (`host`, every component on it) or several (`hosts`, the system controller on one of them and
 * ingest, pipeline and control panel instances on any). A run's units are these instances, in
 * dependency order: the controller first, then every ingest, every pipeline, every control panel
 * (each type in the order of its hosts). On one host a unit is named as its component
 * (`ingest`), as runs have always named it; across hosts as `<host>/<component>` (`live-2/ingest`).
 */
import type { LiveConfig, LiveHostConfig } from '../config/schema.ts'
import { LIVE_COMPONENTS, type LiveComponentName } from './layout.ts'

/** One instance of a component on its host: what a run stops, installs, starts and checks. */
export interface LiveUnit {
  /** `ingest` on one host; `live-2/ingest` across hosts (the journal's and the reports' name). */
  name: string
  component: LiveComponentName
  /** The name of the host it runs on. */
  host: string
}

/** A host with the instances it runs and where their `/metrics` answer. */
export interface PlacedHost {
  config: LiveHostConfig
  /** The host name (or address) its components' `/metrics` answer on. */
  address: string
  /** The port of each component's `/metrics` on this host. */
  ports: Partial<Record<LiveComponentName, number>>
}

/** The hosts of the live section, each with its components (the one-host form as one such host). */
export function placedHosts(live: LiveConfig): PlacedHost[] {
  const fallback = hostnameOf(live.controllerUrl)
  if (live.hosts)
    return live.hosts.map(({ components, address, ...config }) => ({
      config,
      address: address ?? config.ssh?.host ?? fallback,
      ports: Object.fromEntries(Object.entries(components).filter(([, p]) => p !== undefined)),
    }))
  // The schema requires host with metricsPorts when hosts is absent; a section built in code (Kubernetes) has them too.
  if (!live.host || !live.metricsPorts) throw new Error('svcops:live has neither host nor hosts')
  return [{ config: live.host, address: fallback, ports: { ...live.metricsPorts } }]
}

function hostnameOf(url: string): string {
  return new URL(url).hostname
}

/** True when the section places the components on several hosts (`live.hosts`): units are then named by host. */
export function isSpread(live: LiveConfig): boolean {
  return live.hosts !== undefined
}

/** The run's units in dependency order: the controller, then each type's instances in the order of their hosts. */
export function liveUnits(live: LiveConfig): LiveUnit[] {
  const hosts = placedHosts(live)
  const named = isSpread(live)
  return LIVE_COMPONENTS.flatMap((component) =>
    hosts
      .filter((h) => h.ports[component] !== undefined)
      .map((h) => ({ name: named ? `${h.config.name}/${component}` : component, component, host: h.config.name })),
  )
}

/** The host that runs the system controller (its settings file and the run lock are there). */
export function controllerHost(live: LiveConfig): PlacedHost {
  const hosts = placedHosts(live)
  return hosts.find((h) => h.ports['system-controller'] !== undefined) ?? (hosts[0] as PlacedHost)
}

/** The units grouped by component, in dependency order (the controller's group first); types without an instance are left out. */
export function unitsByType<U extends { component: LiveComponentName }>(units: readonly U[]): U[][] {
  return LIVE_COMPONENTS.map((c) => units.filter((u) => u.component === c)).filter((g) => g.length > 0)
}
