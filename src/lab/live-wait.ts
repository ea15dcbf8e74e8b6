/**
 * Waiting for the live components of a lab host to come up: supervisord's state of each, its
 * `/health`, and the log lines since a start — which tell a component that stopped because another
 * process had taken its port (src/lab/live-lab.ts then starts the host again on other ports).
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { OperationError } from '../core/errors.ts'
import { readServiceStatus, supervisorDriver } from '../drivers/services.ts'
import { transportFor } from '../drivers/transports.ts'
import type { LabHostInfo } from './hosts.ts'
import { DEFAULT_LIVE_PRODUCT, liveComponentPaths, livePackageName } from './live/paths.ts'
import { CONNECTING_COMPONENTS, findLiveLabRelease, LIVE_COMPONENTS, type LiveComponent } from './live/releases.ts'

const PRODUCT = DEFAULT_LIVE_PRODUCT

interface HealthAnswer {
  component: string
  version: string
  connected: boolean
}

/** A component's `/health`, or undefined when it does not answer. */
export async function readComponentHealth(port: number): Promise<HealthAnswer | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) })
    return response.ok ? ((await response.json()) as HealthAnswer) : undefined
  } catch {
    // Not listening (stopped, or not started yet).
    return undefined
  }
}

function lastLogLine(host: LabHostInfo, component: LiveComponent): string {
  const file = join(host.root, liveComponentPaths(PRODUCT, component).log)
  return existsSync(file) ? (readFileSync(file, 'utf8').trim().split('\n').at(-1) ?? '') : 'no log'
}

/** Where each component's log ends now: what a start writes comes after. */
export function logMarks(host: LabHostInfo): Record<LiveComponent, number> {
  const size = (c: LiveComponent): number => {
    const file = join(host.root, liveComponentPaths(PRODUCT, c).log)
    return existsSync(file) ? statSync(file).size : 0
  }
  return Object.fromEntries(LIVE_COMPONENTS.map((c) => [c, size(c)])) as Record<LiveComponent, number>
}

/** The component's log line since `mark` saying it could not bind its port, if any. */
function portTakenLine(host: LabHostInfo, component: LiveComponent, mark: number): string | undefined {
  const file = join(host.root, liveComponentPaths(PRODUCT, component).log)
  if (!existsSync(file)) return undefined
  return readFileSync(file)
    .subarray(mark)
    .toString('utf8')
    .split('\n')
    .find((line) => line.includes('EADDRINUSE'))
}

/** A component stopped because another process had taken its port before it bound it. */
export class PortTakenError extends OperationError {}

/**
 * Waits until supervisord reports every component of the host (those `metricsPorts` names) RUNNING
 * and each connecting one is connected —
 * except what the lab set up to fail: a controller that refuses its weak PSK (then the others
 * cannot connect), and a fault release that never connects. The wait is generous: labs of parallel
 * test files start at once on a busy machine, which makes the components slower, never wrong.
 */
export async function waitForComponents(
  host: LabHostInfo,
  version: string,
  metricsPorts: Partial<Record<LiveComponent, number>>,
  expect: { controllerRefuses: boolean },
  marks: Record<LiveComponent, number>,
  timeoutMs = 90_000,
): Promise<void> {
  const connects = !expect.controllerRefuses && findLiveLabRelease(version)?.fault !== 'never-connects'
  const t = transportFor({ name: host.name, url: 'http://127.0.0.1:1', root: host.root, canary: false })
  const deadline = Date.now() + timeoutMs
  let waiting: string[] = []
  try {
    while (Date.now() < deadline) {
      waiting = []
      for (const component of LIVE_COMPONENTS.filter((c) => metricsPorts[c] !== undefined)) {
        const status = await readServiceStatus(supervisorDriver, t, host, livePackageName(PRODUCT.prefix, component))
        if (component === 'system-controller' && expect.controllerRefuses) {
          if (status.running || /STARTING/.test(status.status)) waiting.push(`${component} (expected to refuse its PSK: ${status.status})`)
          continue
        }
        const health = await readComponentHealth(metricsPorts[component] ?? 0)
        const taken = status.running || /STARTING/.test(status.status) ? undefined : portTakenLine(host, component, marks[component])
        if (taken) throw new PortTakenError(`${component} on ${host.name} could not bind its port: ${taken}`)
        if (!status.running) waiting.push(`${component} (${status.status}; ${lastLogLine(host, component)})`)
        else if (connects && CONNECTING_COMPONENTS.includes(component) && !health?.connected)
          waiting.push(`${component} (not connected; ${lastLogLine(host, component)})`)
      }
      if (waiting.length === 0) return
      await new Promise((r) => setTimeout(r, 200))
    }
  } finally {
    await t.close()
  }
  throw new OperationError(`The live components on ${host.name} did not come up within ${timeoutMs} ms: ${waiting.join('; ')}.`)
}
