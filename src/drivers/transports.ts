/**
 * How svcops reaches a recording host and how it names the host's package manager and supervisor.
 * A host with an `ssh` section is reached over SSH; one with `transport: local` (or a lab sandbox
 * `root`) runs commands on this machine; one with neither is refused. A host with a `root` is a sandbox (a lab host): its dpkg database and supervisord live under that
 * directory, and local commands run as the directory's owner so that files and processes are the
 * same whether the host is reached locally or over SSH as that user.
 */
import { createHash } from 'node:crypto'
import { chownSync, copyFileSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { reachOf } from '../config/host-transport.ts'
import type { RecordingHostConfig } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { LocalTransport, type CommandResult, type RunOptions, type Transport } from '../core/runner.ts'
import { SshTransport } from './ssh.ts'

/** Runs commands on this machine, as another user when `runAs` is given (needs root). */
export class LocalHostTransport implements Transport {
  private readonly inner: LocalTransport
  readonly host: string
  private readonly runAs: { user: string; uid: number; gid: number } | undefined

  constructor(host: string, runAs?: { user: string; uid: number; gid: number }) {
    this.host = host
    this.runAs = runAs
    this.inner = new LocalTransport(host)
  }

  exec(argv: string[], options: RunOptions): Promise<CommandResult> {
    // runCommand logs the argv it was given, so the runuser prefix stays out of the logs.
    return this.inner.exec(this.runAs ? ['runuser', '-u', this.runAs.user, '--', ...argv] : argv, options)
  }

  /** Copies the file (a local host's "upload"), owned by the host's user. */
  upload(localPath: string, remotePath: string): Promise<void> {
    copyFileSync(localPath, remotePath)
    if (this.runAs) chownSync(remotePath, this.runAs.uid, this.runAs.gid)
    return Promise.resolve()
  }

  close(): Promise<void> {
    return Promise.resolve()
  }
}

/** The account name of `uid`, from the passwd database. */
function userOfUid(uid: number): string | undefined {
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const [name, , id] = line.split(':')
    if (name && Number(id) === uid) return name
  }
  return undefined
}

/**
 * The transport for a host of the environment file, as the host declares it: SSH with an `ssh`
 * section, this machine with `transport: local` or a lab sandbox `root` (as the owner of the
 * sandbox, when we are root and it belongs to someone else). A host that declares none is refused,
 * never taken as this machine (the loader refuses it first; this holds for hosts built in code).
 * Callers close it when done.
 */
export function transportFor(host: RecordingHostConfig): Transport {
  const reach = reachOf(host, `host ${host.name}`)
  if ('refusal' in reach) throw new BadInputError(reach.refusal)
  if (host.ssh) {
    return new SshTransport(
      {
        host: host.ssh.host,
        port: host.ssh.port,
        user: host.ssh.user,
        keyFile: host.ssh.keyFile,
        hostKey: host.ssh.hostKey,
        trustOnFirstUse: host.ssh.trustOnFirstUse,
        become: host.ssh.become,
      },
      { name: host.name },
    )
  }
  if (host.root && process.getuid?.() === 0) {
    const { uid, gid } = statSync(host.root)
    const user = uid !== 0 ? userOfUid(uid) : undefined
    if (user) return new LocalHostTransport(host.name, { user, uid, gid })
  }
  return new LocalHostTransport(host.name)
}

/**
 * The dpkg command line for a host. On a sandboxed host (`root`) dpkg works on the sandbox's own
 * database, runs maintainer scripts unchrooted with DPKG_ROOT set (a chroot needs root and a full
 * system inside), runs as the sandbox's unprivileged owner (`not-root`), does not look for
 * ldconfig/start-stop-daemon on the user's PATH (`bad-path`), and writes its log inside the
 * sandbox. On a real host it is plain `dpkg`.
 */
export function dpkgArgv(host: Pick<RecordingHostConfig, 'root'>, args: string[]): string[] {
  if (!host.root) return ['dpkg', ...args]
  const r = host.root
  return [
    'dpkg',
    `--root=${r}`,
    `--admindir=${join(r, 'var/lib/dpkg')}`,
    `--log=${join(r, 'var/log/dpkg.log')}`,
    '--force-script-chrootless',
    '--force-not-root',
    '--force-bad-path',
    ...args,
  ]
}

/** The dpkg-query command line for a host (reads the sandbox's database on a lab host). */
export function dpkgQueryArgv(host: Pick<RecordingHostConfig, 'root'>, args: string[]): string[] {
  return host.root ? ['dpkg-query', `--admindir=${join(host.root, 'var/lib/dpkg')}`, ...args] : ['dpkg-query', ...args]
}

/** Longest unix socket path that fits `sun_path` (108 bytes with its NUL) with room to spare. */
const SOCKET_PATH_MAX = 100

/**
 * supervisord's unix socket on a host: `/run/supervisor.sock` (Debian's), `R/run/supervisor.sock` on a
 * lab host — unless R is so deep that the path would not fit a socket address, when it is a short
 * name derived from R in /tmp (fixed, not $TMPDIR: the lab's SSH user and the CLI must agree on it).
 */
export function supervisorSocketPath(host: Pick<RecordingHostConfig, 'root'>): string {
  if (!host.root) return '/run/supervisor.sock'
  const inRoot = join(host.root, 'run/supervisor.sock')
  if (Buffer.byteLength(inRoot) <= SOCKET_PATH_MAX) return inRoot
  return `/tmp/svcops-supervisor-${createHash('sha256').update(host.root).digest('hex').slice(0, 16)}.sock`
}

/** A path on the host: under the sandbox root on a lab host, as is on a real host. */
export function hostPath(host: Pick<RecordingHostConfig, 'root'>, path: string): string {
  return host.root ? join(host.root, path) : path
}

/**
 * The reverse of `hostPath` for a path a program on the host was given: a lab host's programs take
 * a path already under the sandbox root as it is (`--settings-path R/srv/x` is `/srv/x`), so the
 * host's own name of it is the part after the root. Any other path is already the host's.
 */
export function pathOnHost(host: Pick<RecordingHostConfig, 'root'>, path: string): string {
  const root = host.root?.replace(/\/+$/, '')
  if (!root) return path
  if (path === root) return '/'
  return path.startsWith(`${root}/`) ? path.slice(root.length) : path
}
