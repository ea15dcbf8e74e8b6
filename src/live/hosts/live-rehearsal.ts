/**
 * Where `svcops rehearse live` acts (on hosts): production's live hosts, read through each host's
 * transport and never written, and a copy of their settings and environment files in the run
 * folder (`rehearsal/`, one folder per host, 0700), on which the upgrade's own change plan is
 * applied and checked (live-rehearsal-steps.ts). Production's files as first read are kept beside
 * it (`live-files-before.json`, 0600) so the end can prove them unchanged, across a resume too.
 * Closing the context removes the copy whatever way the run ended, and that record too unless the
 * run was interrupted (its resume compares against it); a run killed outright leaves both until
 * `svcops resume ID` (or `--rollback`) ends it.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { requireSection } from '../../config/load.ts'
import type { Environment, LiveConfig } from '../../config/schema.ts'
import { BadInputError, OperationError } from '../../core/errors.ts'
import { packageDriver, readInstalledVersion } from '../../drivers/packages.ts'
import { transportFor } from '../../drivers/transports.ts'
import type { Journal } from '../../runs/journal.ts'
import type { Opened } from '../../runs/playbook.ts'
import { componentPackage, productOf } from '../layout.ts'
import type { LiveParams } from '../live-params.ts'
import { controllerHost, liveUnits, placedHosts } from '../live-placement.ts'
import type { ConfigHosts } from './config-change.ts'
import type { LiveHost } from './host-files.ts'
import { openHost } from './live-hosts-platform.ts'

/** What every step of a live rehearsal needs. */
export interface LiveRehearsalContext {
  env: Environment
  live: LiveConfig
  journal: Journal<LiveParams>
  /** Production's hosts: read, never written. */
  production: ConfigHosts
  /** The copy's hosts: one folder per host under `scratch`, made on first use. */
  copy(): ConfigHosts
  /** The copy's tree in the run folder. */
  scratch: string
  /** Production's files as the rehearsal first read them (0600 in the run folder). */
  before: string
}

/** The live section of `env` on hosts; a rehearsal on Kubernetes is refused in one sentence. */
export function hostsLive(env: Environment): LiveConfig {
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

/** The folder of host `name` in the copy's tree. */
function scratchRoot(scratch: string, name: string): string {
  return join(scratch, name.replace(/[^A-Za-z0-9._-]/g, '_'))
}

/** The rehearsal's context of run `journal`; nothing connects until used. */
function liveRehearsalContext(env: Environment, journal: Journal<LiveParams>): { ctx: LiveRehearsalContext; hosts: Map<string, LiveHost> } {
  const live = hostsLive(env)
  const opened = new Map<string, LiveHost>()
  const placed = new Map(placedHosts(live).map((p) => [p.config.name, p.config]))
  const scratch = journal.file('rehearsal')
  const openProduction = (name: string): LiveHost => {
    const config = placed.get(name) ?? controllerHost(live).config
    const host = opened.get(config.name) ?? openHost(live, config)
    opened.set(config.name, host)
    return host
  }
  const openCopy = (name: string): LiveHost => {
    const key = `copy:${name}`
    const config = { name, root: scratchRoot(scratch, name) }
    mkdirSync(config.root, { recursive: true, mode: 0o700 })
    const host = opened.get(key) ?? { name, config, transport: transportFor({ ...config, url: 'http://127.0.0.1:1', canary: false }) }
    opened.set(key, host)
    return host
  }
  let copy: ConfigHosts | undefined
  const ctx: LiveRehearsalContext = {
    env,
    live,
    journal,
    production: configHosts(live, openProduction),
    copy: () => (copy ??= configHosts(live, openCopy)),
    scratch,
    before: journal.file('live-files-before.json'),
  }
  return { ctx, hosts: opened }
}

async function closeHosts(hosts: Map<string, LiveHost>): Promise<void> {
  for (const h of hosts.values()) await h.transport.close().catch(() => undefined)
}

/** Opens a rehearsal's context; closing it removes the copy (and production's record unless interrupted). */
export function openLiveRehearsal(env: Environment, journal: Journal<LiveParams>): Promise<Opened<LiveRehearsalContext>> {
  const { ctx, hosts } = liveRehearsalContext(env, journal)
  const close = async (): Promise<void> => {
    rmSync(ctx.scratch, { recursive: true, force: true })
    if (journal.run.phase !== 'interrupted') rmSync(ctx.before, { force: true })
    await closeHosts(hosts)
  }
  return Promise.resolve({ ctx, close })
}

/** The context of a dry run: reads only, removes nothing. */
export function openLiveRehearsalToPlan(env: Environment, journal: Journal<LiveParams>): Promise<Opened<LiveRehearsalContext>> {
  const { ctx, hosts } = liveRehearsalContext(env, journal)
  return Promise.resolve({ ctx, close: () => closeHosts(hosts) })
}

/** The release the system controller's package says is installed on production. */
export async function installedRelease(ctx: LiveRehearsalContext): Promise<string> {
  const unit = ctx.production.units.find((u) => u.unit.component === 'system-controller') ?? ctx.production.units[0]
  if (!unit) throw new BadInputError('live: no component is placed on any host; expected the system controller somewhere.')
  const pkg = componentPackage(productOf(ctx.live), unit.unit.component)
  const found = await readInstalledVersion(packageDriver(ctx.live.packageDriver), unit.host.transport, unit.host.config, pkg)
  if (!found)
    throw new OperationError(
      `${pkg} is not installed on ${unit.host.name}, so svcops cannot tell which release to rehearse from.`,
      'Name it: --from VERSION',
    )
  return found
}
