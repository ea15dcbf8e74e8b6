/**
 * Lab hosts: sandboxed recording hosts on this machine. A host is a directory R with its own dpkg
 * database and its own supervisord (Debian's `supervisor`), reachable over the lab's sshd as the
 * test user and locally. Conventions that playbooks and the upgrade code rely on (also in docs/lab.md):
 *
 *   root dir                R (owned by the SSH test user, e.g. `svcops-lab`)
 *   dpkg database           R/var/lib/dpkg (status, available, info/, updates/)
 *   install a package       dpkg --root=R --admindir=R/var/lib/dpkg --log=R/var/log/dpkg.log
 *                             --force-script-chrootless --force-not-root --force-bad-path
 *                             [--force-confdef --force-confold] -i file.deb      (`dpkgArgv` in src/drivers/transports.ts)
 *   package cache           R/var/cache/svcops/packages/
 *   supervisord config      R/etc/supervisor/supervisord.conf, socket R/run/supervisor.sock (a short
 *                           name in /tmp when R is too deep for a socket path: `supervisorSocketPath`),
 *                           pid R/run/supervisord.pid, own log R/var/log/supervisor/
 *   program sections        R/etc/supervisor/conf.d/*.conf (the package ships svc-recording.conf;
 *                           `%(here)s` expands to conf.d in included files, so it can point into R)
 *   control the service     supervisorctl -c R/etc/supervisor/supervisord.conf start|stop|status <program>
 *   service log             R/var/log/<product_dir>/recording.log (written by the service)
 *
 * supervisord runs as the test user, so the service, dpkg over SSH, and local commands (which run
 * as the root dir's owner, see `transportFor`) all see and make the same files.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { OperationError } from '../core/errors.ts'
import { supervisorSocketPath } from '../drivers/transports.ts'
import { local, requireBinary, runCommand } from '../core/runner.ts'
import { descendantsOf, isAlive, terminatePids } from '../core/process.ts'
import { lookupUser } from './sshd.ts'

/** What identifies a lab host on disk (serialisable: `lab down` runs in another process). */
export interface LabHostInfo {
  name: string
  root: string
  /** OS user that owns R and runs its supervisord. */
  user: string
}

/** Paths inside a lab host, by convention. */
export function labHostPaths(root: string): {
  supervisordConf: string
  socket: string
  pidFile: string
  confDir: string
  packageCache: string
  dpkgDir: string
} {
  return {
    supervisordConf: join(root, 'etc/supervisor/supervisord.conf'),
    socket: supervisorSocketPath({ root }),
    pidFile: join(root, 'run/supervisord.pid'),
    confDir: join(root, 'etc/supervisor/conf.d'),
    packageCache: join(root, 'var/cache/svcops/packages'),
    dpkgDir: join(root, 'var/lib/dpkg'),
  }
}

function supervisordConfig(root: string): string {
  const p = labHostPaths(root)
  return [
    '; supervisord of a svcops lab host; everything it touches is under this host root.',
    '[unix_http_server]',
    `file=${p.socket}`,
    'chmod=0700',
    '',
    '[supervisord]',
    `logfile=${join(root, 'var/log/supervisor/supervisord.log')}`,
    'logfile_maxbytes=1MB',
    'logfile_backups=0',
    `pidfile=${p.pidFile}`,
    `childlogdir=${join(root, 'var/log/supervisor')}`,
    `directory=${root}`,
    'loglevel=warn',
    '',
    '[rpcinterface:supervisor]',
    'supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface',
    '',
    '[supervisorctl]',
    `serverurl=unix://${p.socket}`,
    '',
    '[include]',
    `files = ${p.confDir}/*.conf`,
    '',
  ].join('\n')
}

/** Makes the empty host tree: dpkg database, supervisor config and the usual directories. */
export function initLabHostTree(root: string): void {
  const p = labHostPaths(root)
  for (const dir of [
    join(p.dpkgDir, 'info'),
    join(p.dpkgDir, 'updates'),
    join(p.dpkgDir, 'triggers'),
    p.confDir,
    p.packageCache,
    join(root, 'run'),
    join(root, 'var/log/supervisor'),
    join(root, 'tmp'),
  ]) {
    mkdirSync(dir, { recursive: true })
  }
  for (const file of ['status', 'available']) {
    if (!existsSync(join(p.dpkgDir, file))) writeFileSync(join(p.dpkgDir, file), '')
  }
  writeFileSync(p.supervisordConf, supervisordConfig(root))
}

function chownTree(path: string, uid: number, gid: number): void {
  chownSync(path, uid, gid)
  if (!statSync(path).isDirectory()) return
  for (const entry of readdirSync(path)) chownTree(join(path, entry), uid, gid)
}

/** Lets `user` reach `dir`: every parent must be searchable (temp dirs are created 0700). */
function openParents(dir: string, stopAt: string): void {
  let current = dir
  while (current.startsWith(stopAt) && current.length >= stopAt.length) {
    const mode = statSync(current).mode & 0o777
    if ((mode & 0o005) !== 0o005) chmodSync(current, mode | 0o005)
    const parent = join(current, '..')
    if (parent === current) break
    current = parent
  }
}

export interface CreateLabHostOptions {
  name: string
  /** The host root R; created if missing. */
  root: string
  /** Owner of R and user of its supervisord; default the SSH test user as root, else ourselves. */
  user: string
  /** Directory above R up to which parents are made searchable for `user` (e.g. the lab dir). */
  openUpTo?: string
}

/** Creates the host tree (owned by `user`) without starting anything. */
export function createLabHostTree(options: CreateLabHostOptions): LabHostInfo {
  const info: LabHostInfo = { name: options.name, root: options.root, user: options.user }
  initLabHostTree(info.root)
  if (isRoot()) {
    const owner = lookupUser(info.user)
    if (!owner) throw new OperationError(`The lab host user '${info.user}' does not exist.`, `useradd -m -s /bin/bash ${info.user}`)
    chownTree(info.root, owner.uid, owner.gid)
    openParents(info.root, options.openUpTo ?? info.root)
  }
  return info
}

function isRoot(): boolean {
  return process.getuid?.() === 0
}

/** argv that runs `argv` as `user` with a clean environment (nothing of ours leaks into the service). */
function asUser(user: string, argv: string[]): string[] {
  const home = lookupUser(user)?.home ?? '/'
  const env = [
    'env',
    '-i',
    'PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin',
    `HOME=${home}`,
    'LANG=C.UTF-8',
    `USER=${user}`,
  ]
  return isRoot() ? ['runuser', '-u', user, '--', ...env, ...argv] : [...env, ...argv]
}

/** Creates the host tree (owned by `user`) and starts its supervisord. */
export async function createLabHost(options: CreateLabHostOptions): Promise<LabHostInfo & { supervisordPid: number }> {
  const info = createLabHostTree(options)
  return { ...info, supervisordPid: await startSupervisord(info) }
}

/** Starts the host's supervisord (it daemonizes after its socket listens); it starts every autostart program in conf.d. */
export async function startSupervisord(info: LabHostInfo): Promise<number> {
  const supervisord = requireBinary('supervisord', 'supervisor')
  const p = labHostPaths(info.root)
  rmSync(p.pidFile, { force: true })
  await runCommand(local, asUser(info.user, [supervisord, '-c', p.supervisordConf]))
  // The socket listens before supervisord forks, but the child writes its pid file a moment later.
  const deadline = Date.now() + 5000
  while (!readPid(p.pidFile) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  const pid = readPid(p.pidFile)
  if (!pid) throw new OperationError(`supervisord of lab host ${info.name} did not write ${p.pidFile}.`)
  return pid
}

function readPid(file: string): number | undefined {
  if (!existsSync(file)) return undefined
  const pid = Number(readFileSync(file, 'utf8').trim())
  return pid > 0 ? pid : undefined
}

/**
 * Pid of the host's supervisord if it runs: from its pid file, else `knownPid` when that process
 * is still this host's supervisord (its command line names the host's config; pids are reused).
 */
export function supervisordPid(info: Pick<LabHostInfo, 'root'>, knownPid?: number): number | undefined {
  const pid = readPid(labHostPaths(info.root).pidFile)
  if (pid && isAlive(pid)) return pid
  if (knownPid === undefined || !isAlive(knownPid)) return undefined
  try {
    const cmdline = readFileSync(`/proc/${knownPid}/cmdline`, 'utf8').split('\0')
    return cmdline.includes(labHostPaths(info.root).supervisordConf) ? knownPid : undefined
  } catch {
    // It exited while we looked.
    return undefined
  }
}

/** Stops the host's supervisord and every program it runs (also from another process). */
export async function stopLabHost(info: Pick<LabHostInfo, 'root'>, options: { removeFiles?: boolean; pid?: number } = {}): Promise<void> {
  const pid = supervisordPid(info, options.pid)
  if (pid) await terminatePids([pid, ...descendantsOf(pid)], 5000)
  // A stopped supervisord's socket is useless; the short name in /tmp that a deep R uses would
  // otherwise stay behind when the tree goes.
  rmSync(supervisorSocketPath(info), { force: true })
  if (options.removeFiles) rmSync(info.root, { recursive: true, force: true })
}
