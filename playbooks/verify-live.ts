#!/usr/bin/env node
/**
 * Playbook: the checks of a live upgrade, without changing anything, on every component of the
 * live production system (every instance on every host): installed release, running, no error lines in its recent log, connected
 * to the system controller, the controller answering on the prefix of its release, the metric
 * names of its release; and the files: the settings file where the release reads it, the PSK of
 * every component the controller's (never shown), strong enough where the release enforces it.
 *
 *   npx zx playbooks/verify-live.ts --env lab [--json]
 *
 * A failed check never stops the others; `ok` says whether all passed (exit 1 naming what fails).
 * Run by node or zx, this file is `svcops verify live` (its options: playbooks/lib/live-commands.ts).
 */
import type { Environment } from '../src/config/schema.ts'
import { ExitCode } from '../src/core/errors.ts'
import { redact } from '../src/core/redact.ts'
import { sanitizeLine } from '../src/core/sanitize.ts'
import { liveContext, type LiveContext } from '../src/live/live-context.ts'
import type { CheckResult } from '../src/live/live-judge.ts'
import type { LiveUnit } from '../src/live/live-placement.ts'
import { newLiveCheckRecord } from '../src/live/live-system.ts'
import { Journal } from '../src/runs/journal.ts'
import { printOn, type CommandIO } from '../src/edge/command-io.ts'
import { VERIFY_LIVE } from './lib/live-commands.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'

export interface LiveVerification {
  ok: boolean
  environment: string
  version?: string
  /** Per unit: `component` is its name (`ingest` on one host, `live-2/ingest` across hosts). */
  components: Array<{ component: string; version?: string; ok: boolean; checks: CheckResult[] }>
  files: CheckResult[]
}

/** How long `svcops verify live` waits for a component to answer as running and connected. */
const VERIFY_WAIT_MS = 2000

/** The checks of one instance, in the order of the upgrade's. */
async function verifyComponent(ctx: LiveContext, unit: LiveUnit): Promise<LiveVerification['components'][number]> {
  const component = unit.name
  const version = await ctx.platform.installedVersion(unit) // the installed release
  if (!version) return { component, ok: false, checks: [{ check: 'installed', ok: false, detail: 'not installed' }] }
  // running, no errors, connected, prefix, metrics (on Kubernetes also the pod template, through the API and the Service)
  const checks = await ctx.platform.checkComponent(unit, version, { waitMs: VERIFY_WAIT_MS })
  return { component, version, ok: checks.every((c) => c.ok), checks }
}

/** Verifies the live system of `env`; never throws for a failed check (see `ok`). */
export async function verifyLiveSystem(env: Environment): Promise<LiveVerification> {
  const ctx = liveContext(env, Journal.inMemory(newLiveCheckRecord(env)))
  try {
    const components: LiveVerification['components'] = []
    for (const u of ctx.units) components.push(await verifyComponent(ctx, u))
    const version = components[0]?.version
    // The files of that release: settings where it reads them, one PSK everywhere, strong where enforced (on Kubernetes the stack file's record).
    const files = version ? await ctx.platform.verifyConfig(version) : [await ctx.platform.controllerStatus(ctx.live.version)]
    const ok = components.every((c) => c.ok) && files.every((f) => f.ok)
    return { ok, environment: env.name, ...(version ? { version } : {}), components, files }
  } finally {
    await ctx.platform.close()
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

/** `svcops verify live`, and this file run as a script: every check printed; exit 1 naming what failed. */
export async function verifyLiveCommand(_flags: unknown, io: CommandIO): Promise<void> {
  const env = await io.environment()
  const result = await verifyLiveSystem(env)
  printOn(io, result, () => renderLiveVerification(result))
  if (!result.ok) {
    process.stderr.write(`svcops: ${sanitizeLine(redact(failedSummary(result)))}\n`)
    io.exitWith(ExitCode.failed)
  }
}

if (startedAsScript(import.meta)) await runScript(import.meta, VERIFY_LIVE, verifyLiveCommand)
