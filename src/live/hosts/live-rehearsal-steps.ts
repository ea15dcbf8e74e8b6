/**
 * The steps of `svcops rehearse live` on hosts (playbooks/rehearse-live.ts): production's release
 * and files read (never written), copied into the run folder, the real upgrade's pure change plan
 * (config-change.ts) applied to the copy — the settings file moved where the target reads it, a new
 * PSK where the target needs one or enforces its entropy (the same key in every connecting
 * component's environment), the TCP endpoint variable renamed and cut to one endpoint — then the
 * checks `verify live` runs on the target's files (live-host-config.ts) run on the copy, with the
 * TCP endpoint rule beside them, and production's files read again: they must be as they were.
 * None is disruptive: a rehearsal stops nothing, so it never rolls back.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { z } from 'zod'
import { BadInputError, errorMessage } from '../../core/errors.ts'
import { hostPath } from '../../drivers/transports.ts'
import { listEndpoints } from '../../releases/env.ts'
import { generatePsk } from '../../releases/pre-shared-key.ts'
import { compareVersions, tcpEndpointSingleValue, tcpEndpointVariable } from '../../releases/versions.ts'
import { defineStep } from '../../runs/step.ts'
import { productOf } from '../layout.ts'
import type { CheckResult } from '../live-judge.ts'
import type { LiveScope } from '../live-platform.ts'
import { planConfig, readConfigState, type ConfigState } from './config-change.ts'
import { envValue } from './host-files.ts'
import { verifyHostConfig } from './live-host-config.ts'
import { installedRelease, type LiveRehearsalContext } from './live-rehearsal.ts'
import { LIVE_REHEARSAL_REPORT, type LiveRehearsal } from './live-rehearsal-report.ts'

type Ctx = LiveRehearsalContext

/** A file the upgrade would write or remove, with why (never its content). */
export interface RehearsedChange {
  host: string
  path: string
  change: 'written' | 'removed'
  why: string[]
}

const target = (ctx: Ctx): string => ctx.journal.run.targetVersion

/** The files svcops reads, as text by host and path, to compare production before and after. */
function filesOf(state: ConfigState): string {
  return JSON.stringify([state.settings ?? null, Object.entries(state.envs).map(([u, e]) => [u, e.host, e.path, e.text ?? null])])
}

/** The paths read on production, for the dry run. */
function describeReads(ctx: Ctx): string[] {
  const hosts = [ctx.production.controller, ...ctx.production.units.map((u) => u.host)].map((h) => h.name)
  return [`read the settings file and every component's environment file on ${[...new Set(hosts)].join(', ')} (never written)`]
}

export const readLiveProduction = defineStep<Ctx, [], { from: string }>({
  id: 'read-production',
  title: "production's release and files read, never written",
  once: true,
  data: z.object({ from: z.string() }),
  describe: (ctx) => [
    ctx.journal.run.params.plannedFrom
      ? `from ${ctx.journal.run.params.plannedFrom} (--from)`
      : "read the system controller's installed package",
    ...describeReads(ctx),
  ],
  preview: async (ctx) => ({ data: { from: ctx.journal.run.params.plannedFrom ?? (await installedRelease(ctx)) } }),
  async act(ctx) {
    const from = ctx.journal.run.params.plannedFrom ?? (await installedRelease(ctx))
    if (compareVersions(target(ctx), from) <= 0)
      throw new BadInputError(
        `--to: ${target(ctx)} is not newer than ${from}, the release the live system runs; expected a later release to rehearse.`,
      )
    const state = await readConfigState(ctx.live, ctx.production, from, target(ctx))
    writeFileSync(ctx.before, filesOf(state), { mode: 0o600 })
    return { data: { from } }
  },
})

/** Writes `text` (or removes the file) at `path` of host `host` in the copy's tree. */
function putCopy(ctx: Ctx, host: string, path: string, text: string | undefined): void {
  const hosts = ctx.copy()
  const copy = [hosts.controller, ...hosts.units.map((u) => u.host)].find((h) => h.name === host) ?? hosts.controller
  const file = hostPath(copy.config, path)
  if (text === undefined) return rmSync(file, { force: true })
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  writeFileSync(file, text, { mode: 0o600 })
}

export const copyLiveFiles = defineStep<Ctx, [from: string], { changes: RehearsedChange[] } | { refused: string }>({
  id: 'copy-files',
  title: "production's files copied into the run folder, the upgrade's change plan applied to the copy",
  describe: (ctx, from) => [
    ...describeReads(ctx),
    `copy them into ${ctx.scratch} (0700, removed when the run ends)`,
    `apply the upgrade ${from} -> ${target(ctx)}'s change plan to the copy (settings file, PSK, TCP endpoint); a new PSK for the copy only`,
  ],
  async act(ctx, from) {
    rmSync(ctx.scratch, { recursive: true, force: true })
    mkdirSync(ctx.scratch, { recursive: true, mode: 0o700 })
    chmodSync(ctx.scratch, 0o700)
    const before = await readConfigState(ctx.live, ctx.production, from, target(ctx))
    let plan
    try {
      const tcpEndpoint = ctx.journal.run.params.tcpEndpoint
      plan = planConfig(ctx.live, before, from, target(ctx), { newPsk: () => generatePsk(), tcpEndpoint })
    } catch (error) {
      // The real upgrade refuses here too, before it changes anything: that is the rehearsal's finding.
      return { data: { refused: errorMessage(error) } }
    }
    const controller = ctx.production.controller.name
    if (before.settings) putCopy(ctx, controller, before.settings.path, before.settings.text)
    for (const e of Object.values(before.envs)) if (e.text !== undefined) putCopy(ctx, e.host, e.path, e.text)
    for (const c of plan.changes) putCopy(ctx, c.host || controller, c.path, c.after)
    const changes = plan.changes.map((c): RehearsedChange => ({
      host: c.host || controller,
      path: c.path,
      change: c.after === undefined ? 'removed' : 'written',
      why: c.why,
    }))
    return { changed: [`copy of ${changes.length} file change(s) in ${ctx.scratch}`], data: { changes } }
  },
})

/** The TCP endpoint rule of `to` on the pipelines' environments of the copy. */
function tcpChecks(state: ConfigState, from: string, to: string, prefix: string): CheckResult[] {
  const oldVar = tcpEndpointVariable(from, prefix)
  const newVar = tcpEndpointVariable(to, prefix)
  return Object.entries(state.envs)
    .filter(([, e]) => e.component === 'pipeline')
    .flatMap(([unit, e]): CheckResult[] => {
      const value = envValue(e.text, newVar)
      const left = oldVar !== newVar && envValue(e.text, oldVar) !== undefined
      if (value === undefined && !left) return []
      const endpoints = value === undefined ? [] : listEndpoints(value)
      const ok = !left && (!tcpEndpointSingleValue(to) || endpoints.length === 1)
      return [
        {
          check: `${unit}: ${newVar}${tcpEndpointSingleValue(to) ? ' holds one endpoint' : ''}${oldVar !== newVar ? `, ${oldVar} gone` : ''}`,
          ok,
          detail: `${newVar}=${value ?? '(unset)'}${left ? `; ${oldVar} still set` : ''}`,
        },
      ]
    })
}

export const checkLiveCopy = defineStep<Ctx, [from: string], { checks: CheckResult[] }>({
  id: 'check-copy',
  title: "the copy checked as verify live checks the target's files",
  describe: (ctx) => [
    `on the copy: the settings file where ${target(ctx)} reads it, one PSK in every connecting component, its entropy where enforced, the TCP endpoint rule`,
  ],
  async act(ctx, from) {
    const scope = { env: ctx.env, live: ctx.live, product: productOf(ctx.live) } as LiveScope // verifyHostConfig reads the live section only
    const after = await readConfigState(ctx.live, ctx.copy(), target(ctx), target(ctx))
    const checks = [
      ...(await verifyHostConfig({ scope, hosts: ctx.copy() }, target(ctx))),
      ...tcpChecks(after, from, target(ctx), ctx.live.prefix),
    ]
    return { data: { checks } }
  },
})

export const checkLiveProductionUnchanged = defineStep<Ctx, [from: string], { checks: CheckResult[] }>({
  id: 'check-production',
  title: "production's files read again: as they were",
  describe: (ctx) => describeReads(ctx),
  async act(ctx, from) {
    const again = filesOf(await readConfigState(ctx.live, ctx.production, from, target(ctx)))
    const ok = existsSync(ctx.before) && readFileSync(ctx.before, 'utf8') === again
    const check = "production's settings and environment files as they were"
    return { data: { checks: [{ check, ok, ...(ok ? {} : { detail: 'changed during the rehearsal (by another process)' }) }] } }
  },
})

export const recordLiveRehearsal = defineStep<Ctx, [result: LiveRehearsal]>({
  id: 'record-rehearsal',
  title: "the rehearsal's verdict and what it did not rehearse, for the report",
  report: LIVE_REHEARSAL_REPORT,
  describe: () => ['journal the verdict, the file changes, the checks and what is not rehearsed'],
  act: (_ctx, result) => Promise.resolve({ data: { ...result } }),
})
