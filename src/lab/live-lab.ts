/**
 * The live part of `svcops lab up --live V`: one sandboxed host `live-1` (src/lab/hosts.ts: its own
 * dpkg database and supervisord, reached over a loopback sshd) with the four components of release
 * V installed from the lab's packages (src/lab/live/), the controller's settings file and every
 * component's environment file written the way an operator would, supervisord started, and the
 * `svcops:live` section of the lab environment file. `liveStoppers`/`liveCheckers` tell lab.ts how
 * `lab down`/`lab status` handle what it records.
 */
import { randomInt } from 'node:crypto'
import { chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, chmodSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { registerSecret } from '../core/redact.ts'
import { runCommand } from '../core/runner.ts'
import { dpkgArgv, transportFor } from '../drivers/transports.ts'
import { generatePsk } from '../releases/pre-shared-key.ts'
import { pskEntropyEnforced, pskRequired, pskVariable, tcpEndpointSingleValue, tcpEndpointVariable } from '../releases/versions.ts'
import { createLabHostTree, labHostPaths, startSupervisord, stopLabHost, supervisordPid, type LabHostInfo } from './hosts.ts'
import { startLabSshd } from './hosts-lab.ts'
import { formatEnvFile } from './live/env-file.ts'
import { buildLivePackages } from './live/package.ts'
import { labLiveChecks, labLiveUuids } from './live/lab-contract.ts'
import {
  controllerUrlVariable,
  DEFAULT_LIVE_PRODUCT,
  liveComponentPaths,
  livePackageFile,
  livePackageName,
  liveSettingsFile,
  metricsPortVariable,
  type LiveProduct,
} from './live/paths.ts'
import { findLiveLabRelease, LIVE_COMPONENTS, LIVE_LAB_RELEASES, type LiveComponent } from './live/releases.ts'
import { freePort } from './ports.ts'
import { descendantsOf } from '../core/process.ts'
import { lookupUser, type SshdInfo } from './sshd.ts'
import { logMarks, PortTakenError, readComponentHealth, waitForComponents } from './live-wait.ts'
import type { LabEntry, LabSteps } from './state.ts'

/** The options `lab up` adds for the live production system. */
export interface LabLiveOptions {
  /** Release of the live production system installed on `live-1`; no live host without it. */
  live?: string
  /** Write a low-entropy PSK (what a 6.x controller refuses). */
  liveWeakPsk?: boolean
  /** Number of TCP control panel endpoints the pipeline is configured with (default 1). */
  liveTcpEndpoints?: number
  /**
   * Live hosts `live-1`..`live-N` (`svcops:live.hosts`): the system controller on live-1, an ingest,
   * a pipeline and a control panel on each of the others (all four on live-1 when N is 1). Without
   * it, the one host `live-1` of `svcops:live.host` (0 once checked).
   */
  liveHosts?: number
}

export const LIVE_HOST_NAME = 'live-1'
export const MAX_LIVE_TCP_ENDPOINTS = 8
export const MAX_LIVE_HOSTS = 8
const PRODUCT: LiveProduct = DEFAULT_LIVE_PRODUCT

/** The live options checked (one sentence per refusal, before anything starts); undefined without --live. */
export function checkLabLiveOptions(options: LabLiveOptions): Required<LabLiveOptions> | undefined {
  if (options.live === undefined) {
    for (const [flag, given] of [
      ['--live-weak-psk', options.liveWeakPsk],
      ['--live-tcp-endpoints', options.liveTcpEndpoints],
      ['--live-hosts', options.liveHosts],
    ] as const)
      if (given !== undefined && given !== false) throw new BadInputError(`${flag} needs --live V: it configures the live lab host.`)
    return undefined
  }
  const version = options.live
  if (!findLiveLabRelease(version))
    throw new BadInputError(
      `--live: ${version} is not a live lab release; expected one of ${LIVE_LAB_RELEASES.map((r) => r.version).join(', ')}.`,
    )
  const endpoints = options.liveTcpEndpoints ?? 1
  if (!Number.isInteger(endpoints) || endpoints < 0 || endpoints > MAX_LIVE_TCP_ENDPOINTS)
    throw new BadInputError(
      `--live-tcp-endpoints: ${String(options.liveTcpEndpoints)} is not allowed; expected an integer from 0 to ${MAX_LIVE_TCP_ENDPOINTS}.`,
    )
  if (endpoints > 1 && tcpEndpointSingleValue(version))
    throw new BadInputError(
      `--live-tcp-endpoints: ${endpoints} is not allowed with --live ${version}: from that release the pipeline reads one endpoint (${tcpEndpointVariable(version, PRODUCT.prefix)}).`,
    )
  if (options.liveWeakPsk && !pskRequired(version))
    throw new BadInputError(`--live-weak-psk is not allowed with --live ${version}: that release has no pre-shared key.`)
  const hosts = options.liveHosts ?? 0
  if (options.liveHosts !== undefined && (!Number.isInteger(hosts) || hosts < 1 || hosts > MAX_LIVE_HOSTS))
    throw new BadInputError(
      `--live-hosts: ${String(options.liveHosts)} is not allowed; expected an integer from 1 to ${MAX_LIVE_HOSTS} (live hosts live-1 to live-N).`,
    )
  return { live: version, liveWeakPsk: options.liveWeakPsk ?? false, liveTcpEndpoints: endpoints, liveHosts: hosts }
}

/** The components each of `n` live hosts runs: the controller alone on live-1, the others on live-2.. (all four on live-1 when n is 1). */
export function spreadComponents(n: number): LiveComponent[][] {
  if (n <= 1) return [[...LIVE_COMPONENTS]]
  return Array.from({ length: n }, (_, i) => (i === 0 ? ['system-controller'] : LIVE_COMPONENTS.filter((c) => c !== 'system-controller')))
}

function spreadWords(n: number): string {
  return n <= 1
    ? 'the four components on live-1'
    : `the system controller on live-1, an ingest, a pipeline and a control panel on each of live-2 to live-${n}`
}

/** Steps of the live part, for `lab up --dry-run`. */
export function labLivePlan(options: LabLiveOptions): string[] {
  const o = checkLabLiveOptions(options)
  if (!o) return []
  const psk = !pskRequired(o.live) ? 'no PSK (before 2.0)' : o.liveWeakPsk ? 'a low-entropy PSK' : 'a generated PSK (256 bits)'
  if (o.liveHosts > 0)
    return [
      `build the live component packages (${LIVE_COMPONENTS.map((c) => livePackageName(PRODUCT.prefix, c)).join(', ')}; releases ${LIVE_LAB_RELEASES.map((r) => r.version).join(', ')}) unless cached`,
      `start sshd on a free loopback port for the live hosts`,
      `create hosts live-1 to live-${o.liveHosts}: sandboxes with their own dpkg database and supervisord; ${spreadWords(o.liveHosts)}, ${o.live}`,
      `write the settings file ${liveSettingsFile(o.live, PRODUCT)} on live-1 (${psk}, 0600) and each instance's environment file (0600, the one PSK) with ${o.liveTcpEndpoints} TCP endpoint${o.liveTcpEndpoints === 1 ? '' : 's'} per pipeline`,
      `start supervisord on every live host (live-1 first) and wait for the components`,
    ]
  return [
    `build the live component packages (${LIVE_COMPONENTS.map((c) => livePackageName(PRODUCT.prefix, c)).join(', ')}; releases ${LIVE_LAB_RELEASES.map((r) => r.version).join(', ')}) unless cached`,
    `start sshd on a free loopback port for the live host`,
    `create host ${LIVE_HOST_NAME}: sandbox with its own dpkg database and supervisord, install the four components ${o.live}`,
    `write the settings file ${liveSettingsFile(o.live, PRODUCT)} (${psk}, 0600) and each component's environment file (0600) with ${o.liveTcpEndpoints} TCP endpoint${o.liveTcpEndpoints === 1 ? '' : 's'}`,
    `start supervisord on ${LIVE_HOST_NAME} and wait for the components`,
  ]
}

/** Where the live packages are kept between labs. */
export function liveLabPackagesDir(labDir: string): string {
  const shared = process.env.SVCOPS_LAB_PACKAGES_DIR
  return shared ? join(shared, 'live') : join(dirname(labDir), 'cache', 'live-packages')
}

/** What the live part started. */
export interface LabLivePart {
  version: string
  host: LabHostInfo
  sshd: SshdInfo
  packageDir: string
  controllerUrl: string
  metricsPorts: Record<LiveComponent, number>
  tcpEndpoints: string[]
}

/** Writes a file on a lab host as its owner would (path in the host's terms): parents made, mode set, owned by the host's user. */
export function writeLiveHostFile(host: LabHostInfo, path: string, text: string, mode: number): void {
  const file = join(host.root, path)
  const owner = lookupUser(host.user)
  const made = mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, text, { mode })
  chmodSync(file, mode)
  if (process.getuid?.() === 0 && owner) {
    chownSync(file, owner.uid, owner.gid)
    // Directories this made (e.g. /etc/opt/<dir>, /etc/default) belong to the host's user too.
    for (let dir = dirname(file); made && dir.startsWith(made) && dir.length >= made.length; dir = dirname(dir))
      chownSync(dir, owner.uid, owner.gid)
  }
}

/** A PSK that `svcops psk check` refuses (a dictionary word and a short key), random enough to be told apart. */
export function weakPsk(): string {
  return `studio-password-${randomInt(1000, 10000)}`
}

/** The ports the live components listen on, picked free by `lab up`: the controller's, each `/metrics`, the pipeline's TCP endpoints. */
interface LivePorts {
  controllerPort: number
  metricsPorts: Record<LiveComponent, number>
  tcpEndpoints: string[]
}

/** How often `lab up` picks the ports again when one was taken before its component bound it. */
const PORT_ATTEMPTS = 3

async function pickLivePorts(tcpEndpoints: number): Promise<LivePorts> {
  const [controllerPort = 0, ...ports] = await Promise.all([freePort(), ...LIVE_COMPONENTS.map(() => freePort())])
  return {
    controllerPort,
    metricsPorts: Object.fromEntries(LIVE_COMPONENTS.map((c, i) => [c, ports[i] ?? 0])) as Record<LiveComponent, number>,
    tcpEndpoints: await Promise.all(Array.from({ length: tcpEndpoints }, async () => `127.0.0.1:${await freePort()}`)),
  }
}

/** The settings file and every component's environment file, as an operator writes them, for these ports. */
function writeLiveFiles(host: LabHostInfo, version: string, ports: LivePorts, psk: string | undefined): void {
  writeLiveHostFile(
    host,
    liveSettingsFile(version, PRODUCT),
    `${JSON.stringify({ ...(psk ? { psk } : {}), listen: { port: ports.controllerPort } }, null, 2)}\n`,
    0o600,
  )
  for (const component of LIVE_COMPONENTS) {
    const vars: Record<string, string> = {}
    if (component !== 'system-controller') {
      vars[controllerUrlVariable(PRODUCT.prefix)] = controllerUrlOf(ports)
      if (psk) vars[pskVariable(PRODUCT.prefix)] = psk
    }
    vars[metricsPortVariable(PRODUCT.prefix)] = String(ports.metricsPorts[component])
    if (component === 'pipeline' && ports.tcpEndpoints.length > 0)
      vars[tcpEndpointVariable(version, PRODUCT.prefix)] = ports.tcpEndpoints.join(',')
    writeLiveHostFile(
      host,
      liveComponentPaths(PRODUCT, component).envFile,
      formatEnvFile(vars, `${livePackageName(PRODUCT.prefix, component)}: written by svcops lab up`),
      0o600,
    )
  }
}

function controllerUrlOf(ports: LivePorts): string {
  return `http://127.0.0.1:${ports.controllerPort}`
}

/**
 * Starts the live host; records each thing before waiting on it. Its ports are picked free, but
 * the components bind them only once supervisord starts them: a port another process took in
 * between stops its component (EADDRINUSE in its log), and then the host is stopped and started
 * again on ports picked anew, up to PORT_ATTEMPTS times. The components are recorded with the
 * ports they answer on, once they do (they stop with their host's supervisord, recorded first).
 */
export async function startLabLive(lab: LabSteps, options: Required<LabLiveOptions>): Promise<LabLivePart> {
  const version = options.live
  const hostsDir = mkdtempSync(join(tmpdir(), 'svcops-lab-live-'))
  chmodSync(hostsDir, 0o755)
  lab.record({ kind: 'files', name: 'live host tree', info: {}, paths: [hostsDir], stop: 'remove the files' })
  const sshdEntry: LabEntry = { kind: 'sshd', name: 'sshd (live)', info: {}, paths: [], stop: 'not started yet' }
  lab.record(sshdEntry)
  const packageDir = liveLabPackagesDir(lab.paths.dir)
  const [, sshd] = await Promise.all([
    events.step('build the live component packages', () => buildLivePackages(packageDir, PRODUCT)),
    events.step('start sshd for the live host', () => startLabSshd(lab, sshdEntry)),
  ])
  const root = join(hostsDir, 'hosts', LIVE_HOST_NAME)
  const hostEntry: LabEntry = {
    kind: 'lab-host',
    name: `host ${LIVE_HOST_NAME}`,
    info: { name: LIVE_HOST_NAME, root, user: sshd.user, hostsDir },
    paths: [],
    stop: `SIGTERM to the supervisord of ${root} and its programs`,
  }
  lab.record(hostEntry)
  const host = createLabHostTree({ name: LIVE_HOST_NAME, root, user: sshd.user, openUpTo: hostsDir })
  await events.step(`host ${LIVE_HOST_NAME}: install the live components ${version}`, () => installLiveRelease(host, packageDir, version))

  const psk = !pskRequired(version) ? undefined : registerSecret(options.liveWeakPsk ? weakPsk() : generatePsk())
  const expected = { controllerRefuses: options.liveWeakPsk && pskEntropyEnforced(version) }
  let ports: LivePorts
  for (let attempt = 1; ; attempt++) {
    ports = await pickLivePorts(options.liveTcpEndpoints)
    writeLiveFiles(host, version, ports, psk)
    const marks = logMarks(host)
    hostEntry.pid = await startSupervisord(host)
    hostEntry.info = { ...hostEntry.info, version }
    try {
      const metricsPorts = ports.metricsPorts
      await events.step(`host ${LIVE_HOST_NAME}: wait for the live components`, () =>
        waitForComponents(host, version, metricsPorts, expected, marks),
      )
      break
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw error
      events.info(`${error.message} Starting ${LIVE_HOST_NAME} again on other ports (attempt ${attempt + 1} of ${PORT_ATTEMPTS}).`)
      await stopLabHost(host, { pid: hostEntry.pid })
    }
  }
  const controllerUrl = controllerUrlOf(ports)
  for (const component of LIVE_COMPONENTS)
    lab.record({
      kind: 'live-component',
      name: `${LIVE_HOST_NAME} ${component}`,
      info: { root, component, program: liveComponentPaths(PRODUCT, component).program, version },
      port: ports.metricsPorts[component],
      ...(component === 'system-controller' ? { url: controllerUrl } : {}),
      log: join(root, liveComponentPaths(PRODUCT, component).log),
      paths: [],
      stop: `stopped with the supervisord of ${LIVE_HOST_NAME}`,
    })
  return { version, host, sshd, packageDir, controllerUrl, metricsPorts: ports.metricsPorts, tcpEndpoints: ports.tcpEndpoints }
}

/** Installs the components (default: the four) of `version` on a host with dpkg, as the host's user (one dpkg run). */
export async function installLiveRelease(
  host: LabHostInfo,
  packageDir: string,
  version: string,
  components: readonly LiveComponent[] = LIVE_COMPONENTS,
): Promise<void> {
  const owner = lookupUser(host.user)
  const cached = components.map((c) => {
    const file = join(labHostPaths(host.root).packageCache, livePackageFile(PRODUCT.prefix, c, version))
    copyFileSync(join(packageDir, livePackageFile(PRODUCT.prefix, c, version)), file)
    if (process.getuid?.() === 0 && owner) chownSync(file, owner.uid, owner.gid)
    return file
  })
  const t = transportFor({ name: host.name, url: 'http://127.0.0.1:1', root: host.root, canary: false })
  try {
    await runCommand(t, dpkgArgv(host, ['--force-confdef', '--force-confold', '-i', ...cached]))
  } finally {
    await t.close()
  }
}

/** The `svcops:live` section for the lab. */
export function liveSection(part: LabLivePart): Record<string, unknown> {
  return {
    version: part.version,
    prefix: PRODUCT.prefix,
    productDir: PRODUCT.dir,
    packageDriver: 'dpkg',
    serviceDriver: 'supervisor',
    packageDir: part.packageDir,
    host: {
      name: part.host.name,
      root: part.host.root,
      ssh: {
        host: part.sshd.host,
        port: part.sshd.port,
        user: part.sshd.user,
        keyFile: part.sshd.privateKeyPath,
        hostKey: part.sshd.hostKey,
      },
    },
    controllerUrl: part.controllerUrl,
    metricsPorts: part.metricsPorts,
    tcpEndpoints: part.tcpEndpoints,
    sdkSourceDirs: [],
    savedRequests: [],
    metricFiles: [],
    uuids: labLiveUuids(LIVE_COMPONENTS.filter((c) => c !== 'system-controller')),
    checks: labLiveChecks(),
  }
}

/** Whether a component's program runs under its host's supervisord (read from the process table). */
function componentRuns(entry: LabEntry): boolean {
  const root = String(entry.info.root)
  const pid = supervisordPid({ root })
  if (!pid) return false
  const program = String(entry.info.program)
  return descendantsOf(pid).some((child) => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, 'utf8')
        .split('\0')
        .some((arg) => arg.endsWith(program))
    } catch {
      return false
    }
  })
}

/** `lab down`: the components stop with their host's supervisord (its `lab-host` entry). */
export const liveStoppers: Record<string, (entry: LabEntry) => Promise<void>> = {
  'live-component': () => Promise.resolve(),
}

/** `lab status`: a component runs when its program is a child of its host's supervisord. */
export const liveCheckers: Record<string, (entry: LabEntry) => boolean> = {
  'live-component': componentRuns,
}

/** What `lab status` adds for each live component: the version and connection its `/health` reports. */
export async function liveComponentDetails(
  entries: Array<Pick<LabEntry, 'kind' | 'name' | 'port'>>,
): Promise<Record<string, { version?: string; connected: boolean }>> {
  const out: Record<string, { version?: string; connected: boolean }> = {}
  for (const entry of entries) {
    if (entry.kind !== 'live-component' || entry.port === undefined) continue
    const health = await readComponentHealth(entry.port)
    out[entry.name] = health ? { version: health.version, connected: health.connected } : { connected: false }
  }
  return out
}
