#!/usr/bin/env node
/**
 * Playbook: the checks of a live upgrade, without changing anything, on every component of the
 * live production system: installed release, running, no error lines in its recent log, connected
 * to the system controller, the controller answering on the prefix of its release, the metric
 * names of its release; and the files: the settings file where the release reads it, the PSK of
 * every component the controller's (never shown), strong enough where the release enforces it.
 *
 *   node playbooks/verify-live.ts --env lab [--json]
 *
 * A failed check never stops the others; `ok` says whether all passed (exit 1 naming what fails).
 */
import type { Environment } from '../src/config/schema.ts'
import { checkComponent, controllerStatus, type CheckResult } from '../src/live/hosts/live-host-checks.ts'
import { checkClusterComponent, liveClusterOf, verifyClusterFiles } from '../src/live/kubernetes/live-cluster-config.ts'
import { readConfigState } from '../src/live/hosts/config-change.ts'
import { liveContext, type LiveContext } from '../src/live/live-context.ts'
import { envValue } from '../src/live/hosts/host-files.ts'
import { controllerSettingsDirs, LIVE_COMPONENTS, type LiveComponentName } from '../src/live/layout.ts'
import { assessPsk } from '../src/releases/pre-shared-key.ts'
import { pskEntropyEnforced, pskRequired, pskVariable } from '../src/releases/versions.ts'
import { Journal, newRunRecord } from '../src/runs/journal.ts'
import { runAsCommand } from '../src/runs/script.ts'

export interface LiveVerification {
  ok: boolean
  environment: string
  version?: string
  components: Array<{ component: LiveComponentName; version?: string; ok: boolean; checks: CheckResult[] }>
  files: CheckResult[]
}

/** The checks of one component, in the order of the upgrade's. */
async function verifyComponent(ctx: LiveContext, component: LiveComponentName): Promise<LiveVerification['components'][number]> {
  const version = await ctx.platform.installedVersion(component) // the installed release
  if (!version) return { component, ok: false, checks: [{ check: 'installed', ok: false, detail: 'not installed' }] }
  const cluster = liveClusterOf(ctx) // on Kubernetes: pods, log lines, the pod template, the controller's Service
  const checks = cluster
    ? await checkClusterComponent(cluster, component, version, 0)
    : await checkComponent(ctx, component, version, { waitMs: 2000 }) // running, no errors, connected, prefix, metrics
  return { component, version, ok: checks.every((c) => c.ok), checks }
}

/** The files of release `version`: settings where it reads them, one PSK everywhere, strong where enforced. */
async function verifyFiles(ctx: LiveContext, version: string): Promise<CheckResult[]> {
  const cluster = liveClusterOf(ctx)
  if (cluster) return verifyClusterFiles(cluster, version) // the stack file is the record
  const state = await readConfigState(ctx.live, ctx.host, version, version)
  const dirs = controllerSettingsDirs(ctx.live, version, state.settingsPath)
  const where = state.settings?.path
  const checks: CheckResult[] = [
    {
      check: `settings file where ${version} reads it`,
      ok: !!where && dirs.some((d) => where.startsWith(`${d.replace(/\/+$/, '')}/`)),
      detail: where ?? `none in ${state.searched.join(', ')}`,
    },
  ]
  if (!pskRequired(version) || !state.settings) return checks
  const psk = (JSON.parse(state.settings.text) as { psk?: unknown }).psk
  const variable = pskVariable(ctx.live.prefix)
  const differing = LIVE_COMPONENTS.filter((c) => c !== 'system-controller' && envValue(state.envs[c].text, variable) !== psk)
  checks.push({
    check: `every component's ${variable} is the controller's PSK`,
    ok: typeof psk === 'string' && differing.length === 0,
    ...(differing.length ? { detail: `differs or is missing: ${differing.join(', ')}` } : {}),
  })
  if (pskEntropyEnforced(version) && typeof psk === 'string') {
    const verdict = assessPsk(psk)
    checks.push({
      check: 'the PSK passes the entropy check',
      ok: verdict.ok,
      detail: verdict.ok ? `${verdict.bits} estimated bits` : (verdict.reasons[0] ?? ''),
    })
  }
  return checks
}

/** Verifies the live system of `env`; never throws for a failed check (see `ok`). */
export async function verifyLiveSystem(env: Environment): Promise<LiveVerification> {
  const record = newRunRecord({ kind: 'verify', system: 'live', environment: env.name, envFile: env.file })
  const ctx = liveContext(env, Journal.inMemory(record))
  try {
    const components: LiveVerification['components'] = []
    for (const c of ctx.components) components.push(await verifyComponent(ctx, c.name))
    const version = components[0]?.version
    const files = version ? await verifyFiles(ctx, version) : [await controllerStatus(ctx, ctx.live.version)]
    const ok = components.every((c) => c.ok) && files.every((f) => f.ok)
    return { ok, environment: env.name, ...(version ? { version } : {}), components, files }
  } finally {
    await ctx.host.transport.close()
  }
}

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

if (import.meta.main) await runAsCommand(['verify', 'live'])
