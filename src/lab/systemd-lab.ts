/**
 * `svcops lab up --host-kind systemd`: the recording hosts as real Debian machines booted with
 * systemd (src/lab/systemd-hosts.ts) instead of sandboxes. The lab's packages go into a signed apt
 * repository served on loopback (src/lab/apt-repo.ts); each host installs the release from it with
 * apt-get as root (the lab provisions the host as a site would), runs the service as the package's
 * systemd unit, and is reached over its own sshd as the unprivileged user `svcops`, whose rights are
 * exactly the sudo rules `svcops render sudoers` prints. The environment file names the `apt` and
 * `systemd` drivers and `ssh.become: sudo`.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { isAlive } from '../core/process.ts'
import { registerSecret } from '../core/redact.ts'
import { requireBinary } from '../core/runner.ts'
import { ANY_VERSION, renderSudoers } from '../drivers/become.ts'
import { aptDriver } from '../drivers/packages.ts'
import { systemdDriver } from '../drivers/services.ts'
import { aptSourcesLine, buildAptRepo, serveAptRepo } from './apt-repo.ts'
import { createLabRecordings, labPackagesDir, LAB_RECORDING_PRODUCT, type LabHostsOptions } from './hosts-lab.ts'
import { labHostName } from './hosts-fleet.ts'
import type { PostgresCluster } from './lab-postgres.ts'
import type { LabManager } from './manager/lab-users.ts'
import { freePortNotIn } from './ports.ts'
import { buildRecordingPackages, recordingPackageName, recordingPackagePaths, recordingServiceUser } from './recording/index.ts'
import { writeLabState, type LabEntry, type LabSteps } from './state.ts'
import {
  bootSystemdHost,
  makeEd25519Key,
  runAsHostRoot,
  stopSystemdHost,
  systemdHostRoot,
  SYSTEMD_HOST_USER,
  type SystemdHostInfo,
  type SystemdHostOptions,
} from './systemd-hosts.ts'

const PRODUCT = LAB_RECORDING_PRODUCT
const DATABASE = { name: 'recordings', user: 'recording' }
export const KEYRING_ON_HOST = '/etc/apt/keyrings/svcops-lab.gpg'
/** Where each host mounts the lab's shared recordings folder (its stand-in for a shared mount). */
const STORAGE_MOUNT = `/srv/${PRODUCT.dir}/recordings`
/** Hosts booted at once: a boot is a systemd and its units starting on this machine's two cores. */
const BOOTS_AT_ONCE = 2

/** The sudoers file of the lab's hosts: exactly the commands the recording playbooks run as root there. */
export function labSudoers(): string {
  const pkg = recordingPackageName(PRODUCT.prefix)
  const host = { name: 'lab' }
  return renderSudoers({
    user: SYSTEMD_HOST_USER,
    heading: ['svcops lab: what the recording playbooks run as root on this host (apt, systemd), for svcops alone.'],
    notes: [],
    commands: [
      ...aptDriver.stageCommands(host, pkg, ANY_VERSION),
      ...aptDriver.installCommands(host, pkg, ANY_VERSION),
      systemdDriver.stopCommand(host, pkg),
      systemdDriver.startCommand(host, pkg),
    ],
  })
}

/** A new ed25519 key pair in the lab's keys folder (0700), the key svcops logs in to systemd hosts with; its private key's path. */
export async function makeClientKey(lab: LabSteps, name: string): Promise<string> {
  const keys = join(lab.paths.dir, 'keys')
  mkdirSync(keys, { recursive: true, mode: 0o700 })
  const keyFile = join(keys, name)
  await makeEd25519Key(keyFile, 'svcops-lab-client')
  return keyFile
}

/**
 * Boots a lab host, recorded in the lab state as soon as systemd-nspawn runs (so a failure later
 * still stops it), and provisions it as a site would once: `packages` (`name=version`) installed
 * from the lab's repository, the folder of svcops' host lock and runs given to the SSH user, and the
 * journal readable by it (journalctl needs no root then).
 */
export async function bootLabHost(lab: LabSteps, options: SystemdHostOptions, packages: string[]): Promise<SystemdHostInfo> {
  const entry: LabEntry = { kind: 'systemd-host', name: `host ${options.name}`, info: {}, paths: [], stop: 'not booted yet' }
  const info = await bootSystemdHost(options, (booting) => {
    Object.assign(entry, {
      info: { ...booting },
      pid: booting.pid,
      port: booting.sshPort,
      log: join(booting.dir, 'console.log'),
      stop: `SIGTERM to systemd-nspawn ${booting.pid} (the host powers off), then umount ${systemdHostRoot(booting)}`,
    })
    lab.record(entry)
  })
  await runAsHostRoot(info, ['apt-get', 'update'])
  await runAsHostRoot(info, ['apt-get', 'install', '-y', ...packages])
  await runAsHostRoot(info, ['install', '-d', '-o', SYSTEMD_HOST_USER, '-g', SYSTEMD_HOST_USER, '/var/lib/svcops'])
  await runAsHostRoot(info, ['usermod', '-a', '-G', 'systemd-journal', SYSTEMD_HOST_USER])
  return info
}

interface BootedHost extends SystemdHostInfo {
  port: number
  url: string
}

/** Runs `fn` for every item, `limit` at a time; the first failure is thrown once the running ones ended. */
async function inTurn<I, O>(items: I[], limit: number, fn: (item: I) => Promise<O>): Promise<O[]> {
  const out: O[] = []
  let failure: { reason: unknown } | undefined
  let next = 0
  const worker = async (): Promise<void> => {
    while (!failure && next < items.length) {
      const i = next++
      try {
        out[i] = await fn(items[i] as I)
      } catch (reason) {
        failure ??= { reason }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  if (failure) throw failure.reason
  return out
}

/**
 * Boots the hosts with the release installed from the lab's repository (needs neither PostgreSQL
 * nor the manager); returns the rest, which configures and starts each service once they run and
 * gives the `svcops:recording` section. Every part is recorded in the lab state as it starts.
 */
export async function prepareSystemdRecording(
  lab: LabSteps,
  o: Required<LabHostsOptions>,
): Promise<(cluster: PostgresCluster, manager: LabManager) => Promise<Record<string, unknown>>> {
  requireBinary('systemd-nspawn', 'systemd-container')
  if (process.getuid?.() !== 0)
    throw new OperationError('--host-kind systemd: systemd-nspawn boots machines only as root; run svcops lab up as root.')
  const dir = mkdtempSync(join(tmpdir(), 'svcops-lab-systemd-'))
  chmodSync(dir, 0o755)
  lab.record({ kind: 'files', name: 'systemd host layers', info: {}, paths: [dir], stop: 'remove the files' })
  const packages = await events.step('build the recording service packages', () =>
    buildRecordingPackages(labPackagesDir(lab.paths.dir), PRODUCT),
  )
  const repo = await events.step('build the signed apt repository', () => buildAptRepo(join(dir, 'apt'), Object.values(packages)))
  mkdirSync(lab.paths.logsDir, { recursive: true })
  const served = await events.step('serve the apt repository on loopback', () =>
    serveAptRepo(repo, join(lab.paths.logsDir, 'apt-repo.log'), (entry) => lab.record(entry)),
  )
  const keyFile = await makeClientKey(lab, 'systemd-hosts_ed25519')
  const storage = join(dir, 'shared-recordings')
  mkdirSync(join(storage, 'main'), { recursive: true })
  const labId = randomBytes(3).toString('hex')
  const given = new Set<number>()
  const sudoers = labSudoers()
  const names = Array.from({ length: o.hosts }, (_, i) => labHostName(i))
  const hosts = await inTurn(names, BOOTS_AT_ONCE, (name) =>
    events.step(
      `host ${name}: boot with systemd, install ${recordingPackageName(PRODUCT.prefix)} ${o.version} with apt-get`,
      async (): Promise<BootedHost> => {
        const sshPort = await freePortNotIn(given)
        given.add(sshPort)
        const info = await bootLabHost(
          lab,
          {
            name,
            dir: join(dir, name),
            machine: `svcops-${labId}-${name}`,
            sshPort,
            clientPublicKey: readFileSync(`${keyFile}.pub`, 'utf8'),
            sudoers,
            apt: { sourcesLine: aptSourcesLine(served.url, KEYRING_ON_HOST), keyring: repo.keyring, keyringOnHost: KEYRING_ON_HOST },
            binds: { [storage]: STORAGE_MOUNT },
          },
          [`${recordingPackageName(PRODUCT.prefix)}=${o.version}`],
        )
        const port = await freePortNotIn(given)
        given.add(port)
        return { ...info, port, url: `http://127.0.0.1:${port}` }
      },
      name,
    ),
  )
  writeLabState(lab.paths, lab.state)
  return (cluster, manager) =>
    finishSystemdRecording(lab, { hosts, keyFile, storage, version: o.version, recordings: o.recordings }, cluster, manager)
}

/** The service user's uid and gid on a host (made by the package's postinst). */
function serviceOwner(host: BootedHost): { uid: number; gid: number } {
  const user = recordingServiceUser(PRODUCT.prefix)
  const line = readFileSync(join(systemdHostRoot(host), 'etc/passwd'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${user}:`))
  const [uid, gid] = (line ?? '').split(':').slice(2, 4).map(Number)
  if (uid === undefined || gid === undefined || Number.isNaN(uid))
    throw new OperationError(`The package did not make the user ${user} on ${host.name}.`)
  return { uid, gid }
}

async function finishSystemdRecording(
  lab: LabSteps,
  part: { hosts: BootedHost[]; keyFile: string; storage: string; version: string; recordings: number },
  cluster: PostgresCluster,
  manager: LabManager,
): Promise<Record<string, unknown>> {
  const password = randomBytes(24).toString('base64url')
  registerSecret(password)
  const passwordFile = lab.secret('recording-db-password', password)
  await lab.step(`create database ${DATABASE.name}`, () =>
    cluster.createDatabase(DATABASE.name, { user: DATABASE.user, password, createdb: true }),
  )
  const paths = recordingPackagePaths(PRODUCT)
  const unit = recordingPackageName(PRODUCT.prefix)
  await lab.step(`start ${unit} on ${part.hosts.length} systemd host${part.hosts.length === 1 ? '' : 's'}`, () =>
    inTurn(part.hosts, BOOTS_AT_ONCE, async (host) => {
      const owner = serviceOwner(host)
      // Every host's service user has the same ids (same base system, same package); the shared folder is theirs.
      // The doctor checks files as the SSH user, which shares the service's group (docs/doctor.md):
      // the group may read the password file, write the log folder and the storage.
      for (const path of [part.storage, join(part.storage, 'main')]) {
        chownSync(path, owner.uid, owner.gid)
        chmodSync(path, 0o775)
      }
      const root = systemdHostRoot(host)
      chmodSync(join(root, dirname(paths.log)), 0o775)
      await runAsHostRoot(host, ['usermod', '-a', '-G', recordingServiceUser(PRODUCT.prefix), SYSTEMD_HOST_USER])
      const file = join(root, paths.config)
      const config = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
      const secret = `/etc/opt/${PRODUCT.dir}/recording.dbpass`
      config.listen = { ...(config.listen as object), host: '127.0.0.1', port: host.port }
      config.database = { host: cluster.info.host, port: cluster.info.port, name: DATABASE.name, user: DATABASE.user, passwordFile: secret }
      config.auth = { ...(config.auth as object), jwksUrl: `${manager.url}/.well-known/jwks.json`, issuer: manager.url }
      config.storage = { ...(config.storage as object), path: STORAGE_MOUNT }
      writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`)
      writeFileSync(join(root, secret), `${password}\n`, { mode: 0o640 })
      chmodSync(join(root, secret), 0o640)
      chownSync(join(root, secret), owner.uid, owner.gid)
      await runAsHostRoot(host, ['systemctl', 'start', unit])
      await waitHealthy(host)
    }),
  )
  const created =
    part.recordings > 0
      ? await lab.step(`create ${part.recordings} recordings through the API`, () =>
          createLabRecordings(manager, part.hosts, part.recordings),
        )
      : 0
  events.info(`${created} recordings on ${part.hosts.length} systemd hosts`)
  return {
    version: part.version,
    package: unit,
    service: unit,
    packageDriver: 'apt',
    serviceDriver: 'systemd',
    configPath: paths.config,
    hosts: part.hosts.map((h, i) => ({
      name: h.name,
      url: h.url,
      ssh: { host: '127.0.0.1', port: h.sshPort, user: h.user, keyFile: part.keyFile, hostKey: h.hostKey, become: 'sudo' },
      canary: i === 0,
    })),
    database: { host: cluster.info.host, port: cluster.info.port, ...DATABASE, password: { file: passwordFile } },
  }
}

async function waitHealthy(host: BootedHost, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = ''
  while (Date.now() < deadline) {
    try {
      const answer = await fetch(`${host.url}/`, { signal: AbortSignal.timeout(2000) })
      if (answer.ok) return
      last = `GET / answered ${answer.status}`
    } catch (error) {
      last = errorMessage(error)
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  const journal = await runAsHostRoot(host, ['journalctl', '-u', recordingPackageName(PRODUCT.prefix), '-n', '5', '--no-pager'], {
    check: false,
  })
  throw new OperationError(
    `The recording service on systemd host ${host.name} did not answer at ${host.url} within ${timeoutMs} ms (${last}): ${journal.stdout.trim()}`,
  )
}

/** How `lab down` stops a systemd host (also from another process). */
export const systemdHostStoppers: Record<string, (entry: LabEntry) => Promise<void>> = {
  'systemd-host': (entry) =>
    typeof entry.info.pid === 'number' && typeof entry.info.dir === 'string' && typeof entry.info.machine === 'string'
      ? stopSystemdHost({ pid: entry.info.pid, dir: entry.info.dir, machine: entry.info.machine })
      : Promise.resolve(),
}

/** How `lab status` checks one: its systemd-nspawn still runs. */
export const systemdHostCheckers: Record<string, (entry: LabEntry) => boolean> = {
  'systemd-host': (entry) => typeof entry.info.pid === 'number' && isAlive(entry.info.pid),
}
