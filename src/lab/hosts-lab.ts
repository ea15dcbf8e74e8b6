/**
 * The recording part of `svcops lab up`: the loopback sshd, N sandboxed hosts with one release of
 * the recording service installed from the lab's packages, K recordings created through the
 * recording client, and the `svcops:recording` section of the lab environment file. Each start
 * function records what it starts in the lab state (src/lab/state.ts) before waiting on it, so
 * `lab down` and Ctrl-C stop exactly that; `hostStoppers`/`hostCheckers` tell lab.ts how.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { ManagerClient } from '../clients/manager-client.ts'
import { RecordingClient } from '../clients/recording-client.ts'
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { readSecret } from '../config/secrets.ts'
import { installHosts, labHostName, startHosts, type LabRecordingHost } from './hosts-fleet.ts'
import { stopLabHost, supervisordPid, type LabHostInfo } from './hosts.ts'
import type { LabManager } from './manager/lab-users.ts'
import type { PostgresCluster } from './lab-postgres.ts'
import {
  buildRecordingPackages,
  RECORDING_RELEASES,
  recordingPackageName,
  recordingPackagePaths,
  type PackageOptions,
} from './recording/index.ts'
import { writeLabState, type LabEntry, type LabSteps } from './state.ts'
import { isAlive } from '../core/process.ts'
import { startSshd, stopSshd, type Sshd, type SshdInfo } from './sshd.ts'

/** The options `lab up` adds for the recording hosts. */
export interface LabHostsOptions {
  /** Number of hosts (default 3). */
  hosts?: number
  /** Release installed on every host (default the oldest). */
  version?: string
  /** Recordings created through the API once the hosts are up (default 6). */
  recordings?: number
  /** `sandbox` (default): dpkg --root trees and supervisord; `systemd`: Debian machines booted with systemd (src/lab/systemd-lab.ts). */
  hostKind?: 'sandbox' | 'systemd'
}

export const DEFAULT_LAB_HOSTS = 3
export const DEFAULT_LAB_RECORDINGS = 6
export const MAX_LAB_HOSTS = 50
/** Booted machines are heavier than sandboxes: at most this many systemd hosts. */
export const MAX_SYSTEMD_LAB_HOSTS = 8
/** The recording service's package as the lab builds it (package svc-recording, files under /etc/opt/svc, ...). */
export const LAB_RECORDING_PRODUCT: PackageOptions = { prefix: 'svc', dir: 'svc' }
const PRODUCT = LAB_RECORDING_PRODUCT
const DATABASE = { name: 'recordings', user: 'recording' }

/** The options with defaults applied; bad values are refused before anything starts. */
export function checkLabHostsOptions(options: LabHostsOptions): Required<LabHostsOptions> {
  const hosts = options.hosts ?? DEFAULT_LAB_HOSTS
  const recordings = options.recordings ?? DEFAULT_LAB_RECORDINGS
  const version = options.version ?? RECORDING_RELEASES[0]?.version ?? ''
  const hostKind = options.hostKind ?? 'sandbox'
  if (hostKind !== 'sandbox' && hostKind !== 'systemd')
    throw new BadInputError(`--host-kind: ${String(hostKind)} is not a kind of lab host; expected sandbox or systemd.`)
  const most = hostKind === 'systemd' ? MAX_SYSTEMD_LAB_HOSTS : MAX_LAB_HOSTS
  if (!Number.isInteger(hosts) || hosts < 0 || hosts > most)
    throw new BadInputError(
      `--hosts: ${String(options.hosts)} is not allowed${hostKind === 'systemd' ? ' with --host-kind systemd' : ''}; expected an integer from 0 (no recording hosts) to ${most}.`,
    )
  if (!Number.isInteger(recordings) || recordings < 0)
    throw new BadInputError(`--recordings: ${String(options.recordings)} is not allowed; expected an integer of at least 0.`)
  if (!RECORDING_RELEASES.some((r) => r.version === version)) {
    throw new BadInputError(
      `--version: ${version} is not a lab release; expected one of ${RECORDING_RELEASES.map((r) => r.version).join(', ')}.`,
    )
  }
  return { hosts, recordings, version, hostKind }
}

/** Steps of the recording part, for `lab up --dry-run`. */
export function labHostsPlan(options: LabHostsOptions): string[] {
  const o = checkLabHostsOptions(options)
  if (o.hosts === 0) return []
  const names = Array.from({ length: o.hosts }, (_, i) => labHostName(i))
  if (o.hostKind === 'systemd')
    return [
      `build the recording service packages unless cached, put them in an apt repository signed with a key made for this lab, serve it on loopback`,
      `boot ${names.join(', ')} with systemd (systemd-nspawn, an overlay of this machine's root, its own sshd on a loopback port for the unprivileged user svcops with the sudo rules of svcops render sudoers), install ${recordingPackageName(PRODUCT.prefix)} ${o.version} there with apt-get`,
      `create database ${DATABASE.name} owned by role ${DATABASE.user}; point each host's config at it and the manager, systemctl start ${recordingPackageName(PRODUCT.prefix)}, wait for health`,
      `create ${o.recordings} recording${o.recordings === 1 ? '' : 's'} through the recording API`,
    ]
  return [
    `create database ${DATABASE.name} owned by role ${DATABASE.user} (random password in a 0600 file)`,
    `build the recording service packages (${recordingPackageName(PRODUCT.prefix)} ${RECORDING_RELEASES.map((r) => r.version).join(', ')}) unless cached`,
    `start sshd on a free loopback port for the test user, with its own host and client keys`,
    `create ${o.hosts} host${o.hosts === 1 ? '' : 's'} (${names.join(', ')}), several at once: sandbox with its own dpkg database and supervisord, install ${recordingPackageName(PRODUCT.prefix)} ${o.version}, set its port/database/manager in the config, start it, wait for health`,
    `create ${o.recordings} recording${o.recordings === 1 ? '' : 's'} through the recording API`,
  ]
}

/**
 * Where built packages are kept between labs (building them takes seconds; `lab down` keeps
 * them): `$SVCOPS_LAB_PACKAGES_DIR`, else `cache/recording-packages` beside the lab dir.
 */
export function labPackagesDir(labDir: string): string {
  return process.env.SVCOPS_LAB_PACKAGES_DIR ?? join(dirname(labDir), 'cache', 'recording-packages')
}

/**
 * Starts the lab's sshd and fills in `entry` (recorded by the caller before anything started, so
 * that the order of the lab state, and of `lab down`, does not depend on timing).
 */
export async function startLabSshd(lab: LabSteps, entry: LabEntry): Promise<Sshd> {
  const sshd = await startSshd()
  const info: SshdInfo = {
    host: sshd.host,
    port: sshd.port,
    user: sshd.user,
    privateKeyPath: sshd.privateKeyPath,
    hostKey: sshd.hostKey,
    dir: sshd.dir,
    pidFile: sshd.pidFile,
    logFile: sshd.logFile,
  }
  Object.assign(entry, {
    info: { ...info },
    port: sshd.port,
    url: `ssh://${sshd.user}@${sshd.host}:${sshd.port}`,
    log: sshd.logFile,
    paths: [sshd.dir],
    stop: `SIGTERM to the pid in ${sshd.pidFile} and its sessions`,
  })
  writeLabState(lab.paths, lab.state)
  return sshd
}

/** What the recording part started (for the summary and the environment file). */
export interface LabRecordingPart {
  version: string
  hosts: LabRecordingHost[]
  sshd: SshdInfo
  packageDir: string
  database: { host: string; port: number; name: string; user: string; passwordFile: string }
  recordingsCreated: number
}

/** What `prepareLabRecording` made: sshd up, host trees with the release installed, nothing serving yet. */
export interface PreparedLabRecording {
  options: Required<LabHostsOptions>
  sshd: SshdInfo
  hostsDir: string
  hosts: LabHostInfo[]
}

/**
 * The part that needs neither PostgreSQL nor the manager, so `lab up` runs it while they start:
 * packages, sshd, host trees with the release installed. Records every host before creating it.
 */
export async function prepareLabRecording(lab: LabSteps, options: LabHostsOptions): Promise<PreparedLabRecording> {
  const o = checkLabHostsOptions(options)
  // Recorded at once, before PostgreSQL and the manager (this runs synchronously up to the first
  // await): lab down goes newest first, so trees and sshd go after the hosts and the servers.
  // Host trees live in /tmp, which every user can reach; the project dir may not be readable by the test user.
  const hostsDir = mkdtempSync(join(tmpdir(), 'svcops-lab-hosts-'))
  chmodSync(hostsDir, 0o755)
  lab.record({ kind: 'files', name: 'host trees', info: {}, paths: [hostsDir], stop: 'remove the files' })
  const sshdEntry: LabEntry = { kind: 'sshd', name: 'sshd', info: {}, paths: [], stop: 'not started yet' }
  lab.record(sshdEntry)
  const [packages, sshd] = await Promise.all([
    events.step('build the recording service packages', () => buildRecordingPackages(labPackagesDir(lab.paths.dir), PRODUCT)),
    events.step('start sshd', () => startLabSshd(lab, sshdEntry)),
  ])
  const hosts = await events.step(
    `install ${recordingPackageName(PRODUCT.prefix)} ${o.version} on ${o.hosts} host${o.hosts === 1 ? '' : 's'}`,
    () =>
      installHosts({
        dir: hostsDir,
        sharedStorage: join(hostsDir, 'shared-recordings'),
        count: o.hosts,
        version: o.version,
        packages,
        product: PRODUCT,
        user: sshd.user,
      }),
  )
  return { options: o, sshd, hostsDir, hosts }
}

/** The rest, once PostgreSQL and the manager run: database, services started and healthy, recordings. */
export async function finishLabRecording(
  lab: LabSteps,
  prepared: PreparedLabRecording,
  cluster: PostgresCluster,
  manager: LabManager,
): Promise<LabRecordingPart> {
  const { options: o, sshd, hostsDir } = prepared
  // Recorded before any supervisord starts (nothing of the hosts runs before this phase).
  const entries = prepared.hosts.map((host): LabEntry => ({
    kind: 'lab-host',
    name: `host ${host.name}`,
    info: { name: host.name, root: host.root, user: host.user, hostsDir },
    paths: [],
    stop: `SIGTERM to the supervisord of ${host.root} and its programs`,
  }))
  for (const entry of entries) lab.record(entry)
  const password = randomBytes(24).toString('base64url')
  const passwordFile = lab.secret('recording-db-password', password)
  await lab.step(`create database ${DATABASE.name}`, () =>
    cluster.createDatabase(DATABASE.name, { user: DATABASE.user, password, createdb: true }),
  )
  const database = { host: cluster.info.host, port: cluster.info.port, ...DATABASE }
  const hosts = await lab.step(
    `start ${o.hosts} recording host${o.hosts === 1 ? '' : 's'} with ${recordingPackageName(PRODUCT.prefix)} ${o.version}`,
    () =>
      startHosts(prepared.hosts, {
        dir: hostsDir,
        sharedStorage: join(hostsDir, 'shared-recordings'),
        count: o.hosts,
        version: o.version,
        packages: {},
        product: PRODUCT,
        user: sshd.user,
        database: { ...database, password },
        managerUrl: manager.url,
      }),
  )
  for (const [i, host] of hosts.entries()) {
    const entry = entries[i]
    if (!entry) continue
    entry.url = host.url
    entry.port = host.port
    entry.log = join(host.root, recordingPackagePaths(PRODUCT).log)
    // The pid too: if the tree (and so the pid file) were removed first, lab down still finds supervisord.
    entry.pid = host.supervisordPid
    entry.info = { ...entry.info, version: host.version }
  }
  writeLabState(lab.paths, lab.state)
  const created =
    o.recordings > 0
      ? await lab.step(`create ${o.recordings} recordings through the API`, () => createLabRecordings(manager, hosts, o.recordings))
      : 0
  return {
    version: o.version,
    hosts,
    sshd,
    packageDir: labPackagesDir(lab.paths.dir),
    database: { ...database, passwordFile },
    recordingsCreated: created,
  }
}

/** Both phases one after the other (for callers that start PostgreSQL and the manager first). */
export async function startLabRecording(
  lab: LabSteps,
  cluster: PostgresCluster,
  manager: LabManager,
  options: LabHostsOptions,
): Promise<LabRecordingPart> {
  const prepared = await lab.step('prepare the recording hosts', () => prepareLabRecording(lab, options))
  return finishLabRecording(lab, prepared, cluster, manager)
}

/** Creates `count` recordings through the recording client, spread over the hosts, as the lab operator. */
export async function createLabRecordings(manager: LabManager, hosts: Pick<LabRecordingHost, 'url'>[], count: number): Promise<number> {
  const operator = manager.users.operator
  const auth = new ManagerClient({
    url: manager.url,
    email: operator.email,
    password: () => readSecret({ file: operator.passwordFile }, 'manager.password'),
  })
  const clients = hosts.map((h) => new RecordingClient({ url: h.url, auth }))
  const now = Math.floor(Date.now() / 1000)
  for (let i = 0; i < count; i++) {
    const client = clients[i % clients.length]
    if (!client) break
    const startTime = now - (count - i) * 3600
    await client.create({
      channelName: `lab-channel-${(i % 3) + 1}`,
      title: `Lab recording ${i + 1}`,
      startTime,
      stopTime: startTime + 1800,
    })
  }
  return count
}

/** The `svcops:recording` section for the lab: hosts over the loopback sshd, their roots, the shared database. */
export function recordingSection(part: LabRecordingPart): Record<string, unknown> {
  const paths = recordingPackagePaths(PRODUCT)
  return {
    version: part.version,
    package: recordingPackageName(PRODUCT.prefix),
    service: recordingPackageName(PRODUCT.prefix),
    packageDriver: 'dpkg',
    serviceDriver: 'supervisor',
    packageDir: part.packageDir,
    configPath: paths.config,
    // What the lab assumes of its service beyond the seed, declared as a site would (docs/contract.md).
    checks: [{ name: 'its configuration file', command: { argv: ['test', '-s', `{root}${paths.config}`] } }],
    hosts: part.hosts.map((h, i) => ({
      name: h.name,
      url: h.url,
      ssh: {
        host: part.sshd.host,
        port: part.sshd.port,
        user: part.sshd.user,
        keyFile: part.sshd.privateKeyPath,
        hostKey: part.sshd.hostKey,
      },
      root: h.root,
      canary: i === 0,
    })),
    database: {
      host: part.database.host,
      port: part.database.port,
      name: part.database.name,
      user: part.database.user,
      password: { file: part.database.passwordFile },
    },
  }
}

/** How `lab down` stops the kinds of entry this module records. */
export const hostStoppers: Record<string, (entry: LabEntry) => Promise<void>> = {
  // An entry recorded before sshd started has no pid file to follow (and nothing to stop).
  sshd: (entry) => (typeof entry.info.pidFile === 'string' ? stopSshd(entry.info as unknown as SshdInfo) : Promise.resolve()),
  'lab-host': async (entry) => {
    // lab down stops entries one by one; a supervisord takes about a second to exit, so the first
    // host entry stops every host of its lab at once and the others find theirs already stopped.
    const siblings =
      typeof entry.info.hostsDir === 'string' && existsSync(join(entry.info.hostsDir, 'hosts'))
        ? readdirSync(join(entry.info.hostsDir, 'hosts')).map((n) => join(String(entry.info.hostsDir), 'hosts', n))
        : []
    await Promise.all([
      stopLabHost({ root: String(entry.info.root) }, entry.pid !== undefined ? { pid: entry.pid } : {}),
      ...siblings.map((root) => stopLabHost({ root })),
    ])
  },
}

/** How `lab status` checks them. */
export const hostCheckers: Record<string, (entry: LabEntry) => boolean> = {
  sshd: (entry) => {
    const info = entry.info as unknown as SshdInfo
    return typeof info.pidFile === 'string' && existsSync(info.pidFile) && isAlive(Number(readFileSync(info.pidFile, 'utf8').trim()))
  },
  'lab-host': (entry) => supervisordPid({ root: String(entry.info.root) }, entry.pid) !== undefined,
}
