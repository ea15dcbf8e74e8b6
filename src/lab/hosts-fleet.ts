/**
 * Provisioning the lab's recording hosts, several at once: each host gets its sandbox and supervisord,
 * the chosen release installed from the lab's .deb files with real dpkg, its conffile edited the
 * way an operator would (own port, the lab's database and manager), and the service started by
 * supervisor; then the lab waits until every host answers its health check.
 */
import { chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { readServiceStatus, supervisorDriver } from '../drivers/services.ts'
import { dpkgArgv, transportFor } from '../drivers/transports.ts'
import { registerSecret } from '../core/redact.ts'
import { runCommand, type Transport } from '../core/runner.ts'
import { createLabHostTree, labHostPaths, startSupervisord, stopLabHost, type LabHostInfo } from './hosts.ts'
import { freePortNotIn } from './ports.ts'
import { recordingPackageName, recordingPackagePaths, type PackageOptions } from './recording/index.ts'
import { lookupUser } from './sshd.ts'

/** A provisioned lab host (serialisable into the lab state). */
export interface LabRecordingHost extends LabHostInfo {
  supervisordPid: number
  /** Base URL of its recording service. */
  url: string
  port: number
  version: string
}

export interface ProvisionHostsOptions {
  /** Lab directory; hosts go to `<dir>/hosts/<name>`. */
  dir: string
  count: number
  version: string
  /** `{ version: path of the .deb }` from the recording package builder. */
  packages: Record<string, string>
  product: PackageOptions
  /** Owner of the host trees and user of their supervisord (the SSH test user). */
  user: string
  database: { host: string; port: number; name: string; user: string; password: string }
  /** Base URL of the manager: the tokens' issuer; its signing keys are at /.well-known/jwks.json. */
  managerUrl: string
  /** Host names are `<namePrefix>-<n>`. */
  namePrefix?: string
  /**
   * Directory every host keeps its recordings in (the lab's stand-in for a shared mount): hosts
   * share one database, so a recording created on one host must be readable on all of them.
   */
  sharedStorage?: string
  /** How long a started service may take to answer GET / (ms). */
  healthTimeoutMs?: number
}

/** Hosts are named rec-1, rec-2, ... */
export function labHostName(index: number, prefix = 'rec'): string {
  return `${prefix}-${index + 1}`
}

/** Edits the installed config file as an operator would: port, database, auth; keeps everything else. */
function configureService(host: LabHostInfo, port: number, options: ProvisionHostsOptions, uid: number, gid: number): void {
  const paths = recordingPackagePaths(options.product)
  const file = join(host.root, paths.config)
  const config = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
  const passwordFile = `/etc/opt/${options.product.dir}/recording.dbpass`
  config.listen = { ...(config.listen as object), host: '127.0.0.1', port }
  config.database = {
    host: options.database.host,
    port: options.database.port,
    name: options.database.name,
    user: options.database.user,
    passwordFile,
  }
  config.auth = { ...(config.auth as object), jwksUrl: `${options.managerUrl}/.well-known/jwks.json`, issuer: options.managerUrl }
  if (options.sharedStorage) {
    // Like mounting shared storage at /srv/<dir>/recordings and pointing the config at it.
    const mount = `/srv/${options.product.dir}/recordings`
    mkdirSync(join(host.root, dirname(mount)), { recursive: true })
    symlinkSync(options.sharedStorage, join(host.root, mount))
    if (process.getuid?.() === 0) chownSync(join(host.root, 'srv'), uid, gid)
    config.storage = { ...(config.storage as object), path: mount }
  }
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`)
  // The password lives in its own 0600 file beside the config, readable only by the service's user.
  const secretFile = join(host.root, passwordFile)
  writeFileSync(secretFile, `${options.database.password}\n`, { mode: 0o600 })
  if (process.getuid?.() === 0) chownSync(secretFile, uid, gid)
}

async function waitHealthy(url: string, timeoutMs: number, host: LabHostInfo, log: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = ''
  while (Date.now() < deadline) {
    try {
      const answer = await fetch(`${url}/`, { signal: AbortSignal.timeout(2000) })
      if (answer.ok) return
      last = `GET / answered ${answer.status}`
    } catch (error) {
      last = errorMessage(error)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new OperationError(
    `The recording service on lab host ${host.name} did not become healthy at ${url} within ${timeoutMs} ms (${last}).`,
    `tail ${log}`,
  )
}

/**
 * Waits until supervisord counts the program as RUNNING: it answers health before its `startsecs`
 * have passed, and a lab that is "up" must show the state an operator expects.
 */
async function waitRunning(host: LabHostInfo, program: string, timeoutMs: number): Promise<void> {
  const t = transportFor({ name: host.name, url: 'http://127.0.0.1:1', root: host.root, canary: false })
  const deadline = Date.now() + timeoutMs
  let status = ''
  try {
    while (Date.now() < deadline) {
      const state = await readServiceStatus(supervisorDriver, t, host, program)
      if (state.running) return
      status = state.status
      // Each look is a curl on this machine; supervisord's startsecs (1 s) sets the pace, not the poll.
      await new Promise((r) => setTimeout(r, 250))
    }
  } finally {
    await t.close()
  }
  throw new OperationError(`${program} on lab host ${host.name} answers but supervisord still reports ${status} after ${timeoutMs} ms.`)
}

/** What installing needs: everything but the database and the manager (so it can run before they are up). */
export type InstallHostsOptions = Pick<
  ProvisionHostsOptions,
  'dir' | 'count' | 'version' | 'packages' | 'product' | 'user' | 'namePrefix' | 'sharedStorage'
>

/** Creates one host's tree and installs `version` into it with dpkg; nothing runs yet. */
export async function installHost(name: string, options: InstallHostsOptions): Promise<LabHostInfo> {
  const deb = options.packages[options.version]
  if (!deb)
    throw new OperationError(
      `No package of recording release ${options.version} was built; known: ${Object.keys(options.packages).join(', ')}.`,
    )
  const owner = lookupUser(options.user)
  if (!owner) throw new OperationError(`The lab host user '${options.user}' does not exist.`)
  const root = join(options.dir, 'hosts', name)
  const host = createLabHostTree({ name, root, user: options.user, openUpTo: options.dir })
  const t: Transport = transportFor({ name, url: 'http://127.0.0.1:1', root, canary: false })
  try {
    const cached = join(labHostPaths(root).packageCache, basename(deb))
    copyFileSync(deb, cached)
    if (process.getuid?.() === 0) chownSync(cached, owner.uid, owner.gid)
    await runCommand(t, dpkgArgv(host, ['--force-confdef', '--force-confold', '-i', cached]))
    return host
  } finally {
    await t.close()
  }
}

/** Points an installed host at the database and manager and its own `port`, starts its supervisord, waits for health. */
export async function startHost(host: LabHostInfo, options: ProvisionHostsOptions, port: number): Promise<LabRecordingHost> {
  const owner = lookupUser(options.user)
  if (!owner) throw new OperationError(`The lab host user '${options.user}' does not exist.`)
  configureService(host, port, options, owner.uid, owner.gid)
  // supervisord starts after the install, so it reads the package's program section at once and
  // autostarts it (no `supervisorctl update`: one Python start less per host).
  const supervisordPid = await startSupervisord(host)
  const url = `http://127.0.0.1:${port}`
  await waitHealthy(url, options.healthTimeoutMs ?? 30_000, host, join(host.root, recordingPackagePaths(options.product).log))
  await waitRunning(host, recordingPackageName(options.product.prefix), options.healthTimeoutMs ?? 30_000)
  return { ...host, supervisordPid, url, port, version: options.version }
}

/**
 * Hosts installed or started at once. A start is a supervisord (Python) and a Node service starting
 * on this machine: 50 at once on 2 cores took ~58 s, every start waiting for the CPU while its
 * health timeout ran down, and every waiting host polling. Four per core keep the cores busy (a
 * start also waits out supervisord's `startsecs`) without that.
 */
const HOSTS_AT_ONCE = Math.max(4, availableParallelism() * 4)

/**
 * Runs `fn` for every item, `HOSTS_AT_ONCE` at a time; once one fails no further item starts, and
 * when all running ones ended every host of `dir` is stopped and the first error thrown.
 */
async function allOrStop<I, O>(items: I[], dir: string, fn: (item: I) => Promise<O>): Promise<O[]> {
  const results: O[] = []
  let failure: { reason: unknown } | undefined
  let next = 0
  const worker = async (): Promise<void> => {
    while (!failure && next < items.length) {
      const i = next++
      try {
        results[i] = await fn(items[i] as I)
      } catch (reason) {
        failure ??= { reason }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(HOSTS_AT_ONCE, items.length) }, worker))
  if (failure) {
    const hosts = join(dir, 'hosts')
    const roots = existsSync(hosts) ? readdirSync(hosts).map((n) => join(hosts, n)) : []
    await Promise.all(roots.map((root) => stopLabHost({ root })))
    throw failure.reason
  }
  return results
}

/** Creates `count` host trees with `version` installed, several at once (needs neither database nor manager). */
export async function installHosts(options: InstallHostsOptions): Promise<LabHostInfo[]> {
  if (options.sharedStorage) createSharedStorage(options.sharedStorage, options.user)
  const names = Array.from({ length: options.count }, (_, i) => labHostName(i, options.namePrefix))
  return allOrStop(names, options.dir, (name) =>
    events.step(
      `host ${name}: install ${recordingPackageName(options.product.prefix)} ${options.version}`,
      () => installHost(name, options),
      name,
    ),
  )
}

/** Starts installed hosts, several at once, each on a port of its own; on any failure stops them all and throws. */
export async function startHosts(hosts: LabHostInfo[], options: ProvisionHostsOptions): Promise<LabRecordingHost[]> {
  registerSecret(options.database.password)
  // Picked as each host starts (not all up front, where a late host's port would wait long for its
  // service to bind it), and never one an earlier host of this lab was given.
  const given = new Set<number>()
  return allOrStop(hosts, options.dir, (host) =>
    events.step(
      `host ${host.name}: start ${recordingPackageName(options.product.prefix)} ${options.version}`,
      async () => {
        const port = await freePortNotIn(given)
        given.add(port)
        return startHost(host, options, port)
      },
      host.name,
    ),
  )
}

/** Installs and starts `count` hosts (both phases several hosts at once). */
export async function provisionHosts(options: ProvisionHostsOptions): Promise<LabRecordingHost[]> {
  return startHosts(await installHosts(options), options)
}

/** The shared recordings directory with the default storage location, owned by the hosts' user. */
function createSharedStorage(dir: string, user: string): void {
  mkdirSync(join(dir, 'main'), { recursive: true })
  const owner = lookupUser(user)
  if (owner && process.getuid?.() === 0) {
    chownSync(dir, owner.uid, owner.gid)
    chownSync(join(dir, 'main'), owner.uid, owner.gid)
  }
}
