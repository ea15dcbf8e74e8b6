/**
 * The metric names each component of a live release exposes on `/metrics`, derived from the
 * catalog's metric effects (src/releases): a release has the names of the first release with
 * every rename and split up to it applied. The seed names `queueing_video_frames` without the
 * prefix; the lab's pipeline carries the prefix like every other product metric
 * (`svc_queueing_video_frames`), which `svcops migrate metrics` rewrites the same way.
 */
import { changesWithEffect, expandName } from '../../releases/live.ts'
import { compareVersions } from '../../releases/versions.ts'
import type { LiveComponent } from './releases.ts'

/** Every component that connects reports whether it is connected to the controller (the lab's metric). */
export function connectedMetricName(prefix: string): string {
  return `${prefix}_controller_connected`
}

/** The product metrics of the first release, per component, before any rename or split. */
function firstReleaseMetrics(component: LiveComponent, prefix: string): string[] {
  const product = { prefix, dir: prefix }
  if (component === 'pipeline') return changesWithEffect('metric-rename').map((c) => `${prefix}_${expandName(c.effect.from, product)}`)
  if (component === 'ingest') return changesWithEffect('metric-split').map((c) => expandName(c.effect.from, product))
  return []
}

/** The product metric names `component` of `version` exposes (besides the connection metric). */
export function liveMetricNames(version: string, component: LiveComponent, prefix: string): string[] {
  const product = { prefix, dir: prefix }
  let names = firstReleaseMetrics(component, prefix)
  const reached = (release: string): boolean => compareVersions(version, release) >= 0
  for (const c of changesWithEffect('metric-rename')) {
    if (!reached(c.release)) continue
    const from = expandName(c.effect.from, product)
    names = names.map((n) => (n.endsWith(`_${from}`) ? n.slice(0, n.length - from.length) + expandName(c.effect.to, product) : n))
  }
  for (const c of changesWithEffect('metric-split')) {
    if (!reached(c.release)) continue
    const from = expandName(c.effect.from, product)
    names = names.flatMap((n) => (n === from ? c.effect.into.map((t) => expandName(t, product)) : [n]))
  }
  return names
}
