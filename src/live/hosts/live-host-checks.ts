/**
 * The checks of a started component of the live production system, the same for the upgrade, its
 * rollback and `svcops verify live`: it runs, it logged no error line since its start, and the
 * checks of src/live/live-checks.ts pass — the seed's endpoint of its type for its release, and
 * the site's declared checks (`svcops:live.checks`) — read here over HTTP and the host's transport.
 */
import { sendRequest } from '../../core/http.ts'
import { errorMessage } from '../../core/errors.ts'
import { runCommand } from '../../core/runner.ts'
import type { LiveConfig } from '../../config/schema.ts'
import type { LiveProduct } from '../layout.ts'
import type { LiveUnit } from '../live-placement.ts'
import type { LivePlatform } from '../live-platform.ts'
import type { Answer, CheckResult } from '../live-judge.ts'
import { describeUnitChecks, runUnitChecks, type CheckPlan, type CheckReader } from '../live-checks.ts'
import type { LiveHost } from './host-files.ts'

export type { CheckResult } from '../live-judge.ts'

/** What the checks on a host read: the live section (the controller's URL, the checks), each unit's port and host, the service manager. */
export interface HostChecks {
  live: LiveConfig
  product: LiveProduct
  platform: Pick<LivePlatform, 'status' | 'errorLines'>
  /** The base URL of a unit's own port (its host's address and its metrics port). */
  unitUrl: (unit: LiveUnit) => string
  /** The host a unit runs on. */
  hostOf: (unit: LiveUnit) => LiveHost
}

/** States a supervisor or systemd reports for a program that will not come up by itself. */
const GAVE_UP = /\b(EXITED|FATAL|STOPPED|BACKOFF|failed|inactive)\b/

async function getAnswer(url: string): Promise<Answer> {
  try {
    const r = await sendRequest({ peer: 'live-check', method: 'GET', url })
    return { status: r.status, body: r.body }
  } catch (error) {
    return { error: errorMessage(error) }
  }
}

/** The longest output of a command check kept for its detail. */
const COMMAND_OUTPUT_CHARS = 200

/** The reader of the checks on hosts: HTTP to the controller and the units' ports, commands over each host's transport. */
export function hostCheckReader(ctx: Pick<HostChecks, 'live' | 'unitUrl' | 'hostOf'>): CheckReader {
  const controller = ctx.live.controllerUrl.replace(/\/+$/, '')
  return {
    controllerGet: (path) => getAnswer(`${controller}${path}`),
    componentGet: (unit, path) => getAnswer(`${ctx.unitUrl(unit)}${path}`),
    async run(unit, argv) {
      try {
        const r = await runCommand(ctx.hostOf(unit).transport, argv, { check: false })
        return { code: r.code ?? -1, output: (r.stderr.trim() || r.stdout.trim()).slice(0, COMMAND_OUTPUT_CHARS) }
      } catch (error) {
        return { code: -1, output: errorMessage(error) }
      }
    },
    rootOf: (unit) => ctx.hostOf(unit).config.root ?? '',
    describeController: () => controller,
    describeComponent: (unit) => ctx.unitUrl(unit),
  }
}

/** The checks the stack gives (the site's and the UUIDs of the seed's). */
export function checkPlanOf(ctx: Pick<HostChecks, 'live' | 'product'>): CheckPlan {
  return { checks: ctx.live.checks, uuids: ctx.live.uuids, product: ctx.product }
}

/** The seed's and the declared checks of one unit of `version`, asked once. */
export function unitChecks(
  ctx: Omit<HostChecks, 'platform'>,
  unit: LiveUnit,
  version: string,
  only?: 'http' | 'commands',
  untilFailure = false,
): Promise<CheckResult[]> {
  return runUnitChecks(hostCheckReader(ctx), checkPlanOf(ctx), unit, version, only, untilFailure)
}

/** What `unitChecks` asks, for the dry run. */
export function describeHostUnitChecks(ctx: HostChecks, unit: LiveUnit, version: string): string[] {
  return describeUnitChecks(hostCheckReader(ctx), checkPlanOf(ctx), unit, version)
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** How often a waiting check asks again: a component connects within a few hundred ms of its start. */
const CHECK_POLL_MS = 250

/**
 * Every check of one started component of `version`. Waits (up to `waitMs`) for it to run and for
 * its HTTP checks to pass, then asks its command checks once; a component the service manager
 * reports as exited is not waited for.
 */
export async function checkComponent(
  ctx: HostChecks,
  unit: LiveUnit,
  version: string,
  options: { cursor?: string | undefined; waitMs: number },
): Promise<CheckResult[]> {
  const deadline = Date.now() + options.waitMs
  let status = await ctx.platform.status(unit)
  for (;;) {
    const first = await unitChecks(ctx, unit, version, 'http', true)
    const up = status.running && first.every((c) => c.ok)
    if (up || Date.now() >= deadline || (!status.running && GAVE_UP.test(status.status))) break
    await sleep(CHECK_POLL_MS)
    status = await ctx.platform.status(unit)
  }
  // Every HTTP check once more, to the end: what the report shows.
  const checks = await unitChecks(ctx, unit, version, 'http')
  // The commands once, after the wait: each is a round trip over the host's transport.
  checks.push(...(await unitChecks(ctx, unit, version, 'commands')))
  const errors = await ctx.platform.errorLines(unit, options.cursor)
  return [
    { check: 'running', ok: status.running, detail: status.status },
    { check: 'no error lines since its start', ok: errors.length === 0, ...(errors.length ? { detail: errors.at(-1) } : {}) },
    ...checks,
  ]
}
