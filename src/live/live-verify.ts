/**
 * `svcops verify live` as a run of the live system (src/runs/read-only-system.ts): the checks of a
 * live upgrade, changing nothing, on every instance — installed release, running, no error lines in
 * its recent log, connected to the system controller, the controller on the prefix of its release,
 * the metric names of its release — and the files of that release (settings where it reads them,
 * one PSK everywhere, strong where enforced). One step journals the whole verification; the next
 * fails the run, naming what failed, when a check did.
 */
import type { Environment } from '../config/schema.ts'
import { OperationError } from '../core/errors.ts'
import type { Journal } from '../runs/journal.ts'
import type { Opened } from '../runs/playbook.ts'
import { defineStep } from '../runs/step.ts'
import { liveContext, type LiveContext } from './live-context.ts'
import type { CheckResult } from './live-judge.ts'
import type { LiveParams } from './live-params.ts'
import type { LiveUnit } from './live-placement.ts'
import { newLiveCheckRecord } from './live-system.ts'

export interface LiveVerification {
  ok: boolean
  environment: string
  version?: string
  /** Per unit: `component` is its name (`ingest` on one host, `live-2/ingest` across hosts). */
  components: Array<{ component: string; version?: string; ok: boolean; checks: CheckResult[] }>
  files: CheckResult[]
}

/** A verify run's context: the live system's, and what the run found. */
export interface LiveVerifyContext {
  live: LiveContext
  found?: LiveVerification
}

/** How long `svcops verify live` waits for a component to answer as running and connected. */
const VERIFY_WAIT_MS = 2000

/** The params of a verify run: every unit of the environment. */
export const liveVerifyParams = (env: Environment): LiveParams => newLiveCheckRecord(env).params

/** Opens a verify run's context; `into` is given what it found once the run ends. */
export function openLiveVerify(into: { found?: LiveVerification }) {
  return (env: Environment, journal: Journal<LiveParams>): Promise<Opened<LiveVerifyContext>> => {
    const ctx: LiveVerifyContext = { live: liveContext(env, journal) }
    const close = async () => {
      if (ctx.found) into.found = ctx.found
      await ctx.live.platform.close()
    }
    return Promise.resolve({ ctx, close })
  }
}

/** The checks of one instance, in the order of the upgrade's. */
async function verifyComponent(ctx: LiveContext, unit: LiveUnit): Promise<LiveVerification['components'][number]> {
  const component = unit.name
  const version = await ctx.platform.installedVersion(unit) // the installed release
  if (!version) return { component, ok: false, checks: [{ check: 'installed', ok: false, detail: 'not installed' }] }
  // running, no errors, connected, prefix, metrics (on Kubernetes also the pod template, through the API and the Service)
  const checks = await ctx.platform.checkComponent(unit, version, { waitMs: VERIFY_WAIT_MS })
  return { component, version, ok: checks.every((c) => c.ok), checks }
}

export const verifyEveryComponent = defineStep<LiveVerifyContext>({
  id: 'verify',
  title: 'every instance installed, running, without error lines, connected, on its prefix, its metrics; the files of its release',
  describe: (ctx) => [`on ${ctx.live.units.map((u) => u.name).join(', ')}`],
  async act(ctx) {
    const { live } = ctx
    const components: LiveVerification['components'] = []
    for (const u of live.units) components.push(await verifyComponent(live, u))
    const version = components[0]?.version
    // The files of that release: settings where it reads them, one PSK everywhere, strong where enforced (on Kubernetes the stack file's record).
    const files = version ? await live.platform.verifyConfig(version) : [await live.platform.controllerStatus(live.live.version)]
    const ok = components.every((c) => c.ok) && files.every((f) => f.ok)
    ctx.found = { ok, environment: live.env.name, ...(version ? { version } : {}), components, files }
    return { data: { ...ctx.found } }
  },
})

export const everyLiveCheckPassed = defineStep<LiveVerifyContext>({
  id: 'checks-passed',
  title: 'every check passed',
  describe: () => ['the run fails, naming each failed check, when one did'],
  act: (ctx) => (ctx.found && !ctx.found.ok ? Promise.reject(new OperationError(failedSummary(ctx.found))) : Promise.resolve({})),
})

/** The verification as text: a block per component, each check on a line. */
export function renderLiveVerification(v: LiveVerification): string {
  const lines = [
    `Live production system of '${v.environment}' (${v.version ?? 'version unknown'}): ${v.ok ? 'every check passed' : 'CHECKS FAILED'}`,
  ]
  const show = (c: CheckResult) => `    ${c.ok ? 'ok  ' : 'FAIL'} ${c.check}${c.detail ? `: ${c.detail}` : ''}`
  for (const c of v.components) {
    lines.push(`[${c.component}] ${c.version ?? 'not installed'}: ${c.ok ? 'ok' : 'FAILED'}`)
    lines.push(...c.checks.map(show))
  }
  lines.push('[files]', ...v.files.map(show))
  return lines.join('\n')
}

/** The failed checks in one sentence (the error of `svcops verify live`). */
export function failedSummary(v: LiveVerification): string {
  const failed = [
    ...v.components.flatMap((c) => c.checks.filter((x) => !x.ok).map((x) => `${c.component}: ${x.check}`)),
    ...v.files.filter((x) => !x.ok).map((x) => x.check),
  ]
  return `The live production system of '${v.environment}' fails ${failed.length} check${failed.length === 1 ? '' : 's'}: ${failed.join('; ')}.`
}
