/**
 * The checks of a started component of the live production system, the same for the upgrade, its
 * rollback and `svcops verify live`: it runs, it logged no error line since its start, it is
 * connected to the system controller (which answers on the prefix of its release), and its
 * metrics have the names of its release.
 */
import { sendRequest } from '../../core/http.ts'
import { errorMessage } from '../../core/errors.ts'
import { apiPrefix, connectedMetricName } from '../../releases/versions.ts'
import type { LiveConfig } from '../../config/schema.ts'
import type { LiveProduct } from '../layout.ts'
import type { LiveUnit } from '../live-placement.ts'
import type { LivePlatform } from '../live-platform.ts'
import { judgeConnection, judgeControllerStatus, judgeMetrics, type Answer, type CheckResult } from '../live-judge.ts'

export type { CheckResult } from '../live-judge.ts'

/** What the checks on a host read: the live section (the controller's URL), each unit's `/metrics`, the product, the service manager. */
export interface HostChecks {
  live: LiveConfig
  product: LiveProduct
  platform: Pick<LivePlatform, 'status' | 'errorLines'>
  /** The URL of a unit's `/metrics` (its host's address and its port). */
  metricsUrl: (unit: LiveUnit) => string
}

/** States a supervisor or systemd reports for a program that will not come up by itself. */
const GAVE_UP = /\b(EXITED|FATAL|STOPPED|BACKOFF|failed|inactive)\b/

async function getJson(url: string): Promise<Answer> {
  try {
    const r = await sendRequest({ peer: 'live-check', method: 'GET', url })
    return { status: r.status, body: r.body }
  } catch (error) {
    return { error: errorMessage(error) }
  }
}

/** The controller's answer on the prefix of `version`: its status, or why not. */
export async function controllerStatus(ctx: HostChecks, version: string): Promise<CheckResult> {
  const url = `${ctx.live.controllerUrl.replace(/\/+$/, '')}${apiPrefix(version)}/status`
  return judgeControllerStatus(`the system controller answers on ${apiPrefix(version)}`, version, await getJson(url))
}

/** Whether the controller lists the unit (by its name) connected at `version`. */
export async function connectionStatus(ctx: HostChecks, unit: LiveUnit, version: string): Promise<CheckResult> {
  const url = `${ctx.live.controllerUrl.replace(/\/+$/, '')}${apiPrefix(version)}/components`
  return judgeConnection(unit.name, version, await getJson(url))
}

/** The metric names the unit's component of `version` must expose, and its connection metric. */
export async function metricsStatus(ctx: HostChecks, unit: LiveUnit, version: string): Promise<CheckResult> {
  return judgeMetrics(ctx.product, unit.component, version, await getJson(ctx.metricsUrl(unit)))
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** How often a waiting check asks again: a component connects within a few hundred ms of its start. */
const CHECK_POLL_MS = 250

/**
 * Whether the component's own `/metrics` answers and, for a connecting component, reports itself
 * connected: what tells the process just started from the one before it, which the controller may
 * still list as connected for a moment after a restart (its connection timeout).
 */
async function reportsItselfUp(ctx: HostChecks, unit: LiveUnit): Promise<boolean> {
  const r = await getJson(ctx.metricsUrl(unit))
  if ('error' in r || r.status !== 200) return false
  if (unit.component === 'system-controller') return true
  const text = typeof r.body === 'string' ? r.body : ''
  return text.split('\n').some((l) => l.trim() === `${connectedMetricName(ctx.product.prefix)} 1`)
}

/**
 * Every check of one started component of `version`. Waits (up to `waitMs`) for it to run and
 * connect — as the controller lists it and as it reports itself; a component the supervisor
 * reports as exited is not waited for.
 */
export async function checkComponent(
  ctx: HostChecks,
  unit: LiveUnit,
  version: string,
  options: { cursor?: string | undefined; waitMs: number },
): Promise<CheckResult[]> {
  const deadline = Date.now() + options.waitMs
  const controller = unit.component === 'system-controller'
  let status = await ctx.platform.status(unit)
  let link: CheckResult
  for (;;) {
    link = controller ? await controllerStatus(ctx, version) : await connectionStatus(ctx, unit, version)
    const up = status.running && link.ok && (await reportsItselfUp(ctx, unit))
    if (up || Date.now() >= deadline || (!status.running && GAVE_UP.test(status.status))) break
    await sleep(CHECK_POLL_MS)
    status = await ctx.platform.status(unit)
  }
  const errors = await ctx.platform.errorLines(unit, options.cursor)
  const results: CheckResult[] = [
    { check: 'running', ok: status.running, detail: status.status },
    { check: 'no error lines since its start', ok: errors.length === 0, ...(errors.length ? { detail: errors.at(-1) } : {}) },
    link,
  ]
  if (!controller) results.push(await controllerStatus(ctx, version))
  results.push(await metricsStatus(ctx, unit, version))
  return results
}
