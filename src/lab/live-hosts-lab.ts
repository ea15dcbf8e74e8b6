/**
 * The live part of `svcops lab up --live V --live-hosts N`: N sandboxed live hosts `live-1`..`live-N`
 * (src/lab/hosts.ts: each its own dpkg database and supervisord), all reached over the one loopback
 * sshd of the live part, with the components spread as `spreadComponents` says — the system
 * controller on live-1, an ingest, a pipeline and a control panel on each other host — installed
 * from the lab's packages, the settings file on live-1 and every instance's environment file
 * written as an operator would (the one PSK, the controller's URL, the name the instance connects
 * as), and the `svcops:live.hosts` section of the lab environment file.
 */
import { chmodSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { events } from '../core/events.ts'
import { registerSecret } from '../core/redact.ts'
import { generatePsk } from '../releases/pre-shared-key.ts'
import { pskEntropyEnforced, pskRequired, pskVariable, tcpEndpointVariable } from '../releases/versions.ts'
import { createLabHostTree, startSupervisord, stopLabHost, type LabHostInfo } from './hosts.ts'
import { startLabSshd } from './hosts-lab.ts'
import { installLiveRelease, liveLabPackagesDir, spreadComponents, weakPsk, writeLiveHostFile, type LabLiveOptions } from './live-lab.ts'
import { formatEnvFile } from './live/env-file.ts'
import { labLiveChecks, labLiveUuids } from './live/lab-contract.ts'
import { buildLivePackages } from './live/package.ts'
import {
  controllerUrlVariable,
  DEFAULT_LIVE_PRODUCT,
  instanceNameVariable,
  liveComponentPaths,
  livePackageName,
  liveSettingsFile,
  metricsPortVariable,
} from './live/paths.ts'
import type { LiveComponent } from './live/releases.ts'
import { logMarks, PortTakenError, waitForComponents } from './live-wait.ts'
import { freePortNotIn } from './ports.ts'
import type { SshdInfo } from './sshd.ts'
import type { LabEntry, LabSteps } from './state.ts'

const PRODUCT = DEFAULT_LIVE_PRODUCT

/** How often the hosts are started again on ports picked anew when one was taken before its component bound it. */
const PORT_ATTEMPTS = 3

/** One live host of the spread lab: the host, and the metrics port of each component it runs. */
export interface LabLiveHost {
  host: LabHostInfo
  components: Partial<Record<LiveComponent, number>>
  /** The pipeline's TCP endpoints on this host, when it runs one. */
  tcpEndpoints: string[]
}

/** What the spread live part started. */
export interface LabLiveHostsPart {
  version: string
  hosts: LabLiveHost[]
  sshd: SshdInfo
  packageDir: string
  controllerUrl: string
}

/** The instance name a component on a host connects as (`live-2/ingest`): the unit name svcops gives it. */
function instanceName(host: string, component: LiveComponent): string {
  return `${host}/${component}`
}

/** Free ports, each another, for the controller, every instance's `/metrics` and every pipeline's TCP endpoints. */
export async function pickPorts(hosts: LabLiveHost[], tcpEndpoints: number): Promise<number> {
  const given = new Set<number>()
  const next = async (): Promise<number> => {
    const port = await freePortNotIn(given)
    given.add(port)
    return port
  }
  for (const h of hosts) {
    for (const c of Object.keys(h.components) as LiveComponent[]) h.components[c] = await next()
    h.tcpEndpoints = []
    if (h.components.pipeline !== undefined) for (let i = 0; i < tcpEndpoints; i++) h.tcpEndpoints.push(`127.0.0.1:${await next()}`)
  }
  return next()
}

/** The settings file on the controller's host and each instance's environment file on its host. */
export function writeFiles(hosts: LabLiveHost[], version: string, controllerPort: number, psk: string | undefined): void {
  const controllerUrl = `http://127.0.0.1:${controllerPort}`
  for (const h of hosts) {
    if (h.components['system-controller'] !== undefined)
      writeLiveHostFile(
        h.host,
        liveSettingsFile(version, PRODUCT),
        `${JSON.stringify({ ...(psk ? { psk } : {}), listen: { port: controllerPort } }, null, 2)}\n`,
        0o600,
      )
    for (const [component, port] of Object.entries(h.components) as [LiveComponent, number][]) {
      const vars: Record<string, string> = {}
      if (component !== 'system-controller') {
        vars[controllerUrlVariable(PRODUCT.prefix)] = controllerUrl
        vars[instanceNameVariable(PRODUCT.prefix)] = instanceName(h.host.name, component)
        if (psk) vars[pskVariable(PRODUCT.prefix)] = psk
      }
      vars[metricsPortVariable(PRODUCT.prefix)] = String(port)
      if (component === 'pipeline' && h.tcpEndpoints.length > 0)
        vars[tcpEndpointVariable(version, PRODUCT.prefix)] = h.tcpEndpoints.join(',')
      writeLiveHostFile(
        h.host,
        liveComponentPaths(PRODUCT, component).envFile,
        formatEnvFile(vars, `${livePackageName(PRODUCT.prefix, component)} on ${h.host.name}: written by svcops lab up`),
        0o600,
      )
    }
  }
}

/**
 * Starts the live hosts, recording each thing before waiting on it; the controller's host starts
 * first. A port taken before its component bound it starts every host again on ports picked anew,
 * up to PORT_ATTEMPTS times (as the one-host lab does).
 */
export async function startLabLiveHosts(lab: LabSteps, options: Required<LabLiveOptions>): Promise<LabLiveHostsPart> {
  const version = options.live
  const hostsDir = mkdtempSync(join(tmpdir(), 'svcops-lab-live-'))
  chmodSync(hostsDir, 0o755)
  lab.record({ kind: 'files', name: 'live host trees', info: {}, paths: [hostsDir], stop: 'remove the files' })
  const sshdEntry: LabEntry = { kind: 'sshd', name: 'sshd (live)', info: {}, paths: [], stop: 'not started yet' }
  lab.record(sshdEntry)
  const packageDir = liveLabPackagesDir(lab.paths.dir)
  const [, sshd] = await Promise.all([
    events.step('build the live component packages', () => buildLivePackages(packageDir, PRODUCT)),
    events.step('start sshd for the live hosts', () => startLabSshd(lab, sshdEntry)),
  ])
  const hosts: Array<LabLiveHost & { entry: LabEntry }> = []
  for (const [i, components] of spreadComponents(options.liveHosts).entries()) {
    const name = `live-${i + 1}`
    const root = join(hostsDir, 'hosts', name)
    const entry: LabEntry = {
      kind: 'lab-host',
      name: `host ${name}`,
      info: { name, root, user: sshd.user, hostsDir },
      paths: [],
      stop: `SIGTERM to the supervisord of ${root} and its programs`,
    }
    lab.record(entry)
    const host = createLabHostTree({ name, root, user: sshd.user, openUpTo: hostsDir })
    hosts.push({ host, entry, components: Object.fromEntries(components.map((c) => [c, 0])), tcpEndpoints: [] })
  }
  await events.step(`install the live components ${version} on ${hosts.length} host${hosts.length === 1 ? '' : 's'}`, () =>
    Promise.all(hosts.map((h) => installLiveRelease(h.host, packageDir, version, Object.keys(h.components) as LiveComponent[]))),
  )
  const psk = !pskRequired(version) ? undefined : registerSecret(options.liveWeakPsk ? weakPsk() : generatePsk())
  const expected = { controllerRefuses: options.liveWeakPsk && pskEntropyEnforced(version) }
  let controllerPort = 0
  for (let attempt = 1; ; attempt++) {
    controllerPort = await pickPorts(hosts, options.liveTcpEndpoints)
    writeFiles(hosts, version, controllerPort, psk)
    try {
      for (const h of hosts) {
        const marks = logMarks(h.host)
        h.entry.pid = await startSupervisord(h.host)
        h.entry.info = { ...h.entry.info, version }
        await events.step(`host ${h.host.name}: wait for the live components`, () =>
          waitForComponents(h.host, version, h.components, expected, marks),
        )
      }
      break
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw error
      events.info(`${error.message} Starting the live hosts again on other ports (attempt ${attempt + 1} of ${PORT_ATTEMPTS}).`)
      for (const h of hosts) if (h.entry.pid) await stopLabHost(h.host, { pid: h.entry.pid })
    }
  }
  const controllerUrl = `http://127.0.0.1:${controllerPort}`
  for (const h of hosts)
    for (const [component, port] of Object.entries(h.components) as [LiveComponent, number][])
      lab.record({
        kind: 'live-component',
        name: `${h.host.name} ${component}`,
        info: { root: h.host.root, component, program: liveComponentPaths(PRODUCT, component).program, version },
        port,
        ...(component === 'system-controller' ? { url: controllerUrl } : {}),
        log: join(h.host.root, liveComponentPaths(PRODUCT, component).log),
        paths: [],
        stop: `stopped with the supervisord of ${h.host.name}`,
      })
  return {
    version,
    hosts: hosts.map((h) => ({ host: h.host, components: h.components, tcpEndpoints: h.tcpEndpoints })),
    sshd,
    packageDir,
    controllerUrl,
  }
}

/** The `svcops:live` section of the spread lab: `hosts`, each with its components' metrics ports. */
export function liveHostsSection(part: LabLiveHostsPart): Record<string, unknown> {
  return {
    ...liveHostsSectionOf(part, (h) => ({
      root: h.host.root,
      ssh: {
        host: part.sshd.host,
        port: part.sshd.port,
        user: part.sshd.user,
        keyFile: part.sshd.privateKeyPath,
        hostKey: part.sshd.hostKey,
      },
    })),
    packageDriver: 'dpkg',
    serviceDriver: 'supervisor',
    packageDir: part.packageDir,
  }
}

/** The section of either kind of live lab host: `reach` says how each host is reached (its root and ssh). */
export function liveHostsSectionOf(
  part: Pick<LabLiveHostsPart, 'version' | 'hosts' | 'controllerUrl'>,
  reach: (h: LabLiveHost) => Record<string, unknown>,
): Record<string, unknown> {
  return {
    version: part.version,
    prefix: PRODUCT.prefix,
    productDir: PRODUCT.dir,
    hosts: part.hosts.map((h) => ({ name: h.host.name, ...reach(h), components: h.components })),
    controllerUrl: part.controllerUrl,
    tcpEndpoints: part.hosts.flatMap((h) => h.tcpEndpoints),
    sdkSourceDirs: [],
    savedRequests: [],
    metricFiles: [],
    uuids: labLiveUuids(
      part.hosts.flatMap((h) =>
        (Object.keys(h.components) as LiveComponent[]).filter((c) => c !== 'system-controller').map((c) => instanceName(h.host.name, c)),
      ),
    ),
    checks: labLiveChecks(),
  }
}
