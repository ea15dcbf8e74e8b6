/**
 * The lab's real hosts: Debian machines booted with systemd as PID 1 in `systemd-nspawn` containers
 * (Debian's `systemd-container`). Each host's root is an overlay of this machine's own root (read
 * only) under a writable layer of its own, so it has its own dpkg database, `/etc`, users, journald
 * and sshd, and boots in about a second without a tree to bootstrap. What a host is given before it
 * boots, written into its layer:
 *
 *   /etc/machine-id, /etc/hostname   its own (no first-boot prompt)
 *   units of this machine masked     its PostgreSQL, Prometheus, supervisor, gettys, timers: a host runs
 *                                    journald, logind, dbus, sshd and what the lab installs
 *   /etc/ssh                         its own ed25519 host key (pinned by the lab), sshd on its own
 *                                    loopback port, key login only, for the lab's unprivileged user
 *   user `svcops`                    unprivileged, unlocked, the lab's client key; root only through
 *                                    the sudo rules given (`/etc/sudoers.d/svcops`, 0440)
 *   /etc/apt                         only the lab's repository, trusted with `signed-by=` its key;
 *                                    this machine's sources, lists and apt settings left out
 *
 * Network: the hosts share this machine's network namespace, each its sshd and service on a port
 * of their own on 127.0.0.1, because the lab's PostgreSQL, manager and apt repository listen on
 * loopback and the lab's environment file names hosts by loopback ports, as the sandbox kind does.
 * Hidden from a host: `/work`, `/root` and `/tmp` of this machine (tmpfs over them).
 *
 * `stopSystemdHost` powers the host off (SIGTERM to systemd-nspawn asks its systemd for an orderly
 * shutdown), then unmounts the overlay: no container, mount or process is left.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { dirname, join } from 'node:path'
import { OperationError } from '../core/errors.ts'
import { descendantsOf, isAlive, terminatePids } from '../core/process.ts'
import { local, requireBinary, runCommand, type CommandResult } from '../core/runner.ts'
import { publicKeyFingerprint } from '../drivers/ssh.ts'
import { readTail, spawnDetached } from './lab-processes.ts'

/** The unprivileged user svcops logs in as on a systemd host. */
export const SYSTEMD_HOST_USER = 'svcops'

/** What identifies a booted host (serialisable: `lab down` runs in another process). */
export interface SystemdHostInfo {
  name: string
  /** Holds `upper/`, `work/`, `merged/` (the host's root) and `console.log`. */
  dir: string
  machine: string
  /** systemd-nspawn's pid; the host's systemd is its child. */
  pid: number
  sshPort: number
  /** The fingerprint of the host's own ed25519 key (`SHA256:...`), for `ssh.hostKey`. */
  hostKey: string
  user: string
}

/** What a host is made with. */
export interface SystemdHostOptions {
  name: string
  /** An empty folder for this host (its layers and console log). */
  dir: string
  /** The machine name (unique on this machine; a host name of at most 64 characters). */
  machine: string
  sshPort: number
  /** The authorized_keys line of the lab's client key. */
  clientPublicKey: string
  /** `/etc/sudoers.d/svcops` (none: the user gets no sudo rule). */
  sudoers?: string
  /** The apt source line and the keyring file it names with `signed-by=` (copied to /etc/apt/keyrings/). */
  apt?: { sourcesLine: string; keyring: string; keyringOnHost: string }
  /** Folders of this machine bound into the host (`{ host path: path on the host }`). */
  binds?: Record<string, string>
}

/** The host's root on this machine while it runs. */
export function systemdHostRoot(info: Pick<SystemdHostInfo, 'dir'>): string {
  return join(info.dir, 'merged')
}

/** Units of this machine a lab host must not start: everything enabled here but sshd, and what would touch the network. */
function unitsToMask(): string[] {
  const units = new Set([
    'systemd-networkd.service',
    'systemd-networkd.socket',
    'systemd-resolved.service',
    'systemd-timesyncd.service',
    'systemd-firstboot.service',
    'console-getty.service',
    'getty@.service',
    'container-getty@.service',
    'apt-daily.timer',
    'apt-daily-upgrade.timer',
  ])
  const wants = '/etc/systemd/system'
  for (const entry of existsSync(wants) ? readdirSync(wants) : []) {
    if (!entry.endsWith('.wants')) continue
    for (const unit of readdirSync(join(wants, entry)))
      if (/\.(service|timer|socket)$/.test(unit) && unit !== 'ssh.service') units.add(unit.replace(/@.+\./, '@.'))
  }
  return [...units]
}

function sshdConfig(port: number): string {
  return [
    '# sshd of a svcops lab host: its own key, one loopback port, key login for the lab user only.',
    `Port ${port}`,
    'ListenAddress 127.0.0.1',
    'HostKey /etc/ssh/ssh_host_ed25519_key',
    `AllowUsers ${SYSTEMD_HOST_USER}`,
    'PermitRootLogin no',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'AuthorizedKeysFile .ssh/authorized_keys',
    'UsePAM no',
    'MaxStartups 200:30:400',
    'MaxSessions 100',
    'Subsystem sftp internal-sftp',
    '',
  ].join('\n')
}

/** Removes a path of the host's root; through the overlay, that hides this machine's file without touching it. */
function hide(root: string, path: string): void {
  rmSync(join(root, path), { recursive: true, force: true })
}

function put(root: string, path: string, text: string | Buffer, mode = 0o644): void {
  mkdirSync(dirname(join(root, path)), { recursive: true })
  writeFileSync(join(root, path), text, { mode })
  chmodSync(join(root, path), mode)
}

/** A new ed25519 key pair without a passphrase at `file` and `file.pub`. */
export async function makeEd25519Key(file: string, comment: string): Promise<void> {
  await runCommand(local, [requireBinary('ssh-keygen', 'openssh-client'), '-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file])
}

/** Mounts the host's root (an overlay of `/`) and writes what the host is given before it boots. */
async function prepareRoot(options: SystemdHostOptions): Promise<string> {
  for (const layer of ['upper', 'work', 'merged']) mkdirSync(join(options.dir, layer), { recursive: true, mode: 0o755 })
  const root = systemdHostRoot(options)
  await runCommand(local, [
    'mount',
    '-t',
    'overlay',
    'overlay',
    '-o',
    `lowerdir=/,upperdir=${join(options.dir, 'upper')},workdir=${join(options.dir, 'work')}`,
    root,
  ])
  put(root, '/etc/machine-id', `${randomBytes(16).toString('hex')}\n`, 0o444)
  put(root, '/etc/hostname', `${options.name}\n`)
  // Its own name resolves (sudo looks it up on every call).
  put(root, '/etc/hosts', `127.0.0.1\tlocalhost\n127.0.1.1\t${options.name}\n::1\tlocalhost ip6-localhost ip6-loopback\n`)
  for (const unit of unitsToMask()) {
    hide(root, `/etc/systemd/system/${unit}`)
    symlinkSync('/dev/null', join(root, '/etc/systemd/system', unit))
  }
  // sshd: the host's own key, not this machine's.
  for (const file of readdirSync(join(root, 'etc/ssh'))) if (file.startsWith('ssh_host_')) hide(root, `/etc/ssh/${file}`)
  hide(root, '/etc/ssh/sshd_config.d')
  await makeEd25519Key(join(root, 'etc/ssh/ssh_host_ed25519_key'), `svcops-lab-${options.name}`)
  put(root, '/etc/ssh/sshd_config', sshdConfig(options.sshPort))
  // The unprivileged user: created in the host's own passwd (useradd --root), unlocked for key login.
  await runCommand(local, ['useradd', '--root', root, '--create-home', '--shell', '/bin/bash', SYSTEMD_HOST_USER])
  await runCommand(local, ['usermod', '--root', root, '-p', '*', SYSTEMD_HOST_USER])
  const [uid, gid] = (
    readFileSync(join(root, 'etc/passwd'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${SYSTEMD_HOST_USER}:`)) ?? ''
  )
    .split(':')
    .slice(2, 4)
    .map(Number)
  const ssh = join(root, 'home', SYSTEMD_HOST_USER, '.ssh')
  mkdirSync(ssh, { recursive: true, mode: 0o700 })
  writeFileSync(join(ssh, 'authorized_keys'), `${options.clientPublicKey.trim()}\n`, { mode: 0o600 })
  for (const path of [ssh, join(ssh, 'authorized_keys')]) chownSync(path, uid ?? 0, gid ?? 0)
  hide(root, '/etc/sudoers.d/svcops')
  if (options.sudoers !== undefined) put(root, '/etc/sudoers.d/svcops', options.sudoers, 0o440)
  // apt: the lab's repository alone; this machine's sources, lists and settings stay out.
  for (const path of ['/etc/apt/sources.list', '/etc/apt/sources.list.d', '/etc/apt/apt.conf.d', '/var/lib/apt/lists']) hide(root, path)
  mkdirSync(join(root, 'etc/apt/sources.list.d'), { recursive: true })
  mkdirSync(join(root, 'etc/apt/apt.conf.d'), { recursive: true })
  mkdirSync(join(root, 'var/lib/apt/lists/partial'), { recursive: true })
  put(root, '/etc/apt/apt.conf.d/50svcops-lab', 'Acquire::Languages "none";\nAPT::Install-Recommends "false";\n')
  if (options.apt) {
    put(root, '/etc/apt/sources.list.d/svcops-lab.list', options.apt.sourcesLine)
    put(root, options.apt.keyringOnHost, readFileSync(options.apt.keyring))
  }
  return publicKeyFingerprint(readFileSync(join(root, 'etc/ssh/ssh_host_ed25519_key.pub'), 'utf8'))
}

/** The pid of the host's systemd (systemd-nspawn's child), once it exists. */
export function leaderPid(nspawnPid: number): number | undefined {
  try {
    const first = readFileSync(`/proc/${nspawnPid}/task/${nspawnPid}/children`, 'utf8').trim().split(/\s+/)[0]
    return first ? Number(first) : undefined
  } catch {
    return undefined
  }
}

/** Runs `argv` as root inside the host (nsenter into all its namespaces), with a clean environment. For the lab's own setup only. */
export function runAsHostRoot(
  info: Pick<SystemdHostInfo, 'pid' | 'name'>,
  argv: string[],
  options: { input?: string; check?: boolean } = {},
): Promise<CommandResult> {
  const leader = leaderPid(info.pid)
  if (leader === undefined) throw new OperationError(`Lab host ${info.name} is not running (systemd-nspawn pid ${info.pid}).`)
  return runCommand(
    local,
    [
      'nsenter',
      '--target',
      String(leader),
      '--all',
      '--',
      '/usr/bin/env',
      '-i',
      'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
      'LANG=C.UTF-8',
      ...argv,
    ],
    {
      ...(options.input !== undefined ? { input: options.input } : {}),
      check: options.check ?? true,
      display: `[${info.name}] ${argv.join(' ')}`,
    },
  )
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port, timeout: 1000 })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => {
      socket.destroy()
      resolve(false)
    })
  })
}

/**
 * Boots one host and waits until its systemd finished starting up and its sshd listens. `record`
 * is called with the host's info as soon as systemd-nspawn runs, so a failure later still stops it.
 */
export async function bootSystemdHost(
  options: SystemdHostOptions,
  record: (info: SystemdHostInfo) => void,
  timeoutMs = 60_000,
): Promise<SystemdHostInfo> {
  const nspawn = requireBinary('systemd-nspawn', 'systemd-container')
  requireBinary('nsenter', 'util-linux')
  const hostKey = await prepareRoot(options)
  const log = join(options.dir, 'console.log')
  const binds = Object.entries(options.binds ?? {}).map(([from, to]) => `--bind=${from}:${to}`)
  const pid = spawnDetached(
    [
      nspawn,
      '--directory',
      systemdHostRoot(options),
      '--machine',
      options.machine,
      '--boot',
      // No systemd runs this machine, so there is no machined to register with nor a unit to move into.
      '--register=no',
      '--keep-unit',
      '--console=passive',
      '--tmpfs=/work',
      '--tmpfs=/root',
      // A host's /tmp as on any Debian machine: apt's gpgv method runs as _apt and writes there.
      '--tmpfs=/tmp:mode=1777',
      ...binds,
    ],
    log,
  )
  const info: SystemdHostInfo = {
    name: options.name,
    dir: options.dir,
    machine: options.machine,
    pid,
    sshPort: options.sshPort,
    hostKey,
    user: SYSTEMD_HOST_USER,
  }
  record(info)
  const deadline = Date.now() + timeoutMs
  let state = ''
  while (Date.now() < deadline) {
    if (!isAlive(pid))
      throw new OperationError(`Lab host ${options.name} stopped while booting: ${readTail(log) || 'no output'} (log: ${log}).`)
    if (leaderPid(pid) !== undefined) {
      const running = await runAsHostRoot(info, ['systemctl', 'is-system-running'], { check: false }).catch(() => undefined)
      state = running?.stdout.trim() ?? state
      if ((state === 'running' || state === 'degraded') && (await portOpen(options.sshPort))) return info
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new OperationError(
    `Lab host ${options.name} did not finish booting within ${timeoutMs} ms (systemd: ${state || 'no answer'}; log: ${log}).`,
  )
}

/** Units that failed on the host, for an error that names them. */
export async function failedUnits(info: SystemdHostInfo): Promise<string> {
  const r = await runAsHostRoot(info, ['systemctl', '--failed', '--no-legend', '--plain'], { check: false })
  return r.stdout.trim()
}

/**
 * Powers the host off and unmounts its root (also from another process). SIGTERM to systemd-nspawn
 * makes the host's systemd shut down in order; one that has not stopped after 20 s is killed with
 * its processes. The folder stays for the caller to remove; a root that will not unmount is an error,
 * so nobody removes files through a mounted overlay.
 */
export async function stopSystemdHost(info: Pick<SystemdHostInfo, 'pid' | 'dir' | 'machine'>): Promise<void> {
  if (isAlive(info.pid) && readProcName(info.pid) === 'systemd-nspawn') {
    process.kill(info.pid, 'SIGTERM')
    const deadline = Date.now() + 20_000
    while (isAlive(info.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    if (isAlive(info.pid)) await terminatePids([info.pid, ...descendantsOf(info.pid)], 1000)
  }
  const root = systemdHostRoot(info)
  if (
    readFileSync('/proc/self/mounts', 'utf8')
      .split('\n')
      .some((line) => line.split(' ')[1] === root)
  ) {
    const umount = await runCommand(local, ['umount', root], { check: false })
    if (umount.code !== 0)
      throw new OperationError(`The root of lab host ${info.machine} at ${root} would not unmount: ${umount.stderr.trim()}.`)
  }
  // What systemd-nspawn keeps for a running machine.
  rmSync(join('/run/systemd/nspawn/propagate', info.machine), { recursive: true, force: true })
}

function readProcName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
  } catch {
    return ''
  }
}
