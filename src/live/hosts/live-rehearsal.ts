/**
 * `svcops rehearse live` on hosts: what a live upgrade changes in the system's own files — the
 * settings file moved where the target reads it, the PSK (a new one where the target needs one or
 * enforces its entropy, the same key in every connecting component's environment), the TCP
 * endpoint variable renamed and cut to one endpoint — rehearsed on a copy. Production's files are
 * read (never written) through each host's transport; the real upgrade's pure plan
 * (config-change.ts) is applied to copies of them in a scratch directory on this machine (0700,
 * removed at the end), and the checks `verify live` runs on the target's files (live-host-config.ts)
 * run on that copy, with the TCP endpoint rule beside them; production's files are read again at
 * the end and must be as they were. Not rehearsed: the target's packages and processes (no
 * controller of the target is started on the copy), which the real upgrade's canary and checks cover.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { requireSection } from '../../config/load.ts'
import type { Environment, LiveConfig } from '../../config/schema.ts'
import { BadInputError, OperationError, errorMessage } from '../../core/errors.ts'
import { packageDriver, readInstalledVersion } from '../../drivers/packages.ts'
import { hostPath, transportFor } from '../../drivers/transports.ts'
import { listEndpoints } from '../../releases/env.ts'
import { generatePsk } from '../../releases/pre-shared-key.ts'
import { apiPrefix, assertVersion, compareVersions, tcpEndpointSingleValue, tcpEndpointVariable } from '../../releases/versions.ts'
import { componentPackage, productOf } from '../layout.ts'
import type { CheckResult } from '../live-judge.ts'
import { controllerHost, liveUnits, placedHosts } from '../live-placement.ts'
import type { LiveScope } from '../live-platform.ts'
import { planConfig, readConfigState, type ConfigHosts, type ConfigState } from './config-change.ts'
import { envValue, type LiveHost } from './host-files.ts'
import { verifyHostConfig } from './live-host-config.ts'
import { openHost } from './live-hosts-platform.ts'

/** `svcops rehearse live --env E --to V [--from V] [--tcp-endpoint H:P]`. */
export interface LiveRehearsalRequest {
  env: Environment
  to: string
  /** The release the system runs (default: the system controller's installed package). */
  from?: string
  tcpEndpoint?: string
}

/** What a live rehearsal found. */
export interface LiveRehearsal {
  environment: string
  from: string
  to: string
  verdict: 'passed' | 'failed'
  /** Why it failed, when the upgrade's plan itself refused (several endpoints, no settings file). */
  cause?: string
  /** The files the upgrade would write or remove, with why (never their content). */
  changes: Array<{ host: string; path: string; change: 'written' | 'removed'; why: string[] }>
  checks: CheckResult[]
  /** The system controller's REST prefix before and after (its callers' saved requests are the upgrade's gates). */
  api: { from: string; to: string }
  /** What this rehearsal does not cover. */
  notRehearsed: string
}

const NOT_REHEARSED =
  "the target's packages and processes: no system controller of the target is started on the copy (the real upgrade's canary and checks cover them)"

/** The live section of `env` on hosts; a rehearsal on Kubernetes is refused in one sentence. */
function hostsLive(env: Environment): LiveConfig {
  const live = requireSection(env, 'live')
  if (live.platform !== 'hosts')
    throw new BadInputError(
      `${env.file}: live.platform: "${live.platform}" cannot be rehearsed yet; expected hosts (svcops rehearse live copies the files of the live hosts).`,
    )
  return live
}

/** The controller's host and each unit's host, as the real upgrade reads them. */
function configHosts(live: LiveConfig, open: (name: string) => LiveHost): ConfigHosts {
  return {
    controller: open(controllerHost(live).config.name),
    units: liveUnits(live).map((unit) => ({ unit, host: open(unit.host) })),
  }
}

/** The release the system controller's package says is installed. */
async function installedRelease(live: LiveConfig, hosts: ConfigHosts): Promise<string> {
  const unit = hosts.units.find((u) => u.unit.component === 'system-controller') ?? hosts.units[0]
  if (!unit) throw new BadInputError('live: no component is placed on any host; expected the system controller somewhere.')
  const pkg = componentPackage(productOf(live), unit.unit.component)
  const found = await readInstalledVersion(packageDriver(live.packageDriver), unit.host.transport, unit.host.config, pkg)
  if (!found)
    throw new OperationError(
      `${pkg} is not installed on ${unit.host.name}, so svcops cannot tell which release to rehearse from.`,
      'Name it: --from VERSION',
    )
  return found
}

/** Writes `text` (or removes the file) at the host's `path` under the scratch tree of `host`. */
function putScratch(root: (host: string) => string, host: string, path: string, text: string | undefined): void {
  const file = hostPath({ root: root(host) }, path)
  if (text === undefined) {
    rmSync(file, { force: true })
    return
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  writeFileSync(file, text, { mode: 0o600 })
}

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

/** The files svcops reads, as text by host and path, to compare production before and after. */
function filesOf(state: ConfigState): string {
  return JSON.stringify([state.settings ?? null, Object.entries(state.envs).map(([u, e]) => [u, e.path, e.text ?? null])])
}

/**
 * Rehearses the live upgrade's file changes from the running release to `to` on a copy; production
 * is only read. Bad input (a version, the platform) is refused before anything is read.
 */
export async function rehearseLiveSettings(req: LiveRehearsalRequest): Promise<LiveRehearsal> {
  assertVersion(req.to)
  if (req.from !== undefined) assertVersion(req.from, '--from')
  const live = hostsLive(req.env)
  const opened = new Map<string, LiveHost>()
  const placed = new Map(placedHosts(live).map((p) => [p.config.name, p.config]))
  const open = (name: string): LiveHost => {
    const config = placed.get(name) ?? controllerHost(live).config
    const host = opened.get(config.name) ?? openHost(live, config)
    opened.set(config.name, host)
    return host
  }
  const scratch = mkdtempSync(join(tmpdir(), 'svcops-live-rehearsal-'))
  chmodSync(scratch, 0o700)
  const scratchHosts = new Map<string, LiveHost>()
  const rootOf = (name: string): string => join(scratch, name.replace(/[^A-Za-z0-9._-]/g, '_'))
  const openScratch = (name: string): LiveHost => {
    const config = { name, root: rootOf(name) }
    mkdirSync(config.root, { recursive: true, mode: 0o700 })
    const host = scratchHosts.get(name) ?? {
      name,
      config,
      transport: transportFor({ ...config, url: 'http://127.0.0.1:1', canary: false }),
    }
    scratchHosts.set(name, host)
    return host
  }
  try {
    const production = configHosts(live, open)
    const from = req.from ?? (await installedRelease(live, production))
    if (compareVersions(req.to, from) <= 0)
      throw new BadInputError(
        `--to: ${req.to} is not newer than ${from}, the release the live system runs; expected a later release to rehearse.`,
      )
    const base = {
      environment: req.env.name,
      from,
      to: req.to,
      api: { from: apiPrefix(from), to: apiPrefix(req.to) },
      notRehearsed: NOT_REHEARSED,
    }
    const before = await readConfigState(live, production, from, req.to)
    let plan
    try {
      plan = planConfig(live, before, from, req.to, { newPsk: () => generatePsk(), tcpEndpoint: req.tcpEndpoint })
    } catch (error) {
      // The real upgrade refuses here too, before it changes anything: that is the rehearsal's finding.
      return { ...base, verdict: 'failed', cause: errorMessage(error), changes: [], checks: [] }
    }
    const controllerName = production.controller.name
    if (before.settings) putScratch(rootOf, controllerName, before.settings.path, before.settings.text)
    for (const e of Object.values(before.envs)) if (e.text !== undefined) putScratch(rootOf, e.host, e.path, e.text)
    for (const c of plan.changes) putScratch(rootOf, c.host || controllerName, c.path, c.after)
    const copy = configHosts(live, openScratch)
    const scope = { env: req.env, live, product: productOf(live) } as LiveScope // verifyHostConfig reads the live section only
    const after = await readConfigState(live, copy, req.to, req.to)
    const checks = [...(await verifyHostConfig({ scope, hosts: copy }, req.to)), ...tcpChecks(after, from, req.to, live.prefix)]
    const again = await readConfigState(live, production, from, req.to)
    checks.push({
      check: "production's settings and environment files as they were",
      ok: filesOf(again) === filesOf(before),
      ...(filesOf(again) === filesOf(before) ? {} : { detail: 'another process changed them during the rehearsal' }),
    })
    return {
      ...base,
      verdict: checks.every((c) => c.ok) ? 'passed' : 'failed',
      changes: plan.changes.map((c) => ({
        host: c.host || controllerName,
        path: c.path,
        change: c.after === undefined ? 'removed' : 'written',
        why: c.why,
      })),
      checks,
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
    for (const h of [...opened.values(), ...scratchHosts.values()]) await h.transport.close().catch(() => undefined)
  }
}

/** The rehearsal in lines, for a terminal. */
export function describeLiveRehearsal(r: LiveRehearsal): string[] {
  return [
    `Live rehearsal of ${r.from} -> ${r.to} on a copy of ${r.environment}'s files: ${r.verdict.toUpperCase()}${r.cause ? ` — ${r.cause}` : ''}`,
    ...r.changes.map((c) => `  ${c.change} ${c.host}:${c.path}${c.why.length ? ` (${c.why.join('; ')})` : ''}`),
    ...r.checks.map((c) => `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.check}${c.detail ? `: ${c.detail}` : ''}`),
    `  API prefix ${r.api.from} -> ${r.api.to}${r.api.from === r.api.to ? '' : ' (callers move: the upgrade gates their saved requests, see svcops plan live)'}`,
    `Not rehearsed: ${r.notRehearsed}. Production's files were only read.`,
  ]
}
