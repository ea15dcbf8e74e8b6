/**
 * A throwaway OpenSSH server on loopback for the lab: its own config, host key and client key in a
 * temp dir, a free port, and a dedicated unlocked test user (`svcops-lab`). Never the machine's own
 * sshd. `MaxStartups`/`MaxSessions` are raised because the lab connects to many hosts at once (20
 * parallel connects fail under the defaults).
 */
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { OperationError } from '../core/errors.ts'
import { publicKeyFingerprint } from '../drivers/ssh.ts'
import { local, requireBinary, runCommand } from '../core/runner.ts'
import { descendantsOf, isAlive, terminatePids } from '../core/process.ts'
import { freePort } from './ports.ts'

/** The lab's SSH test user (created when missing, when we are root). */
export const LAB_USER = 'svcops-lab'

/** What `lab down` needs to stop a server started by another process. */
export interface SshdInfo {
  host: '127.0.0.1'
  port: number
  user: string
  /** Client private key (0600) accepted for `user`. */
  privateKeyPath: string
  /** SHA-256 fingerprint of the server's host key (`SHA256:...`), for pinning. */
  hostKey: string
  /** Temp dir holding config, keys, pid file and log. */
  dir: string
  pidFile: string
  logFile: string
}

export interface Sshd extends SshdInfo {
  /** Stops the server and its sessions and removes the temp dir. Safe to call twice. */
  stop(): Promise<void>
}

export interface StartSshdOptions {
  /** Extra public keys (authorized_keys lines) accepted besides the generated client key. */
  authorizedKeys?: string[]
  /** Login user; default `svcops-lab` as root, else the current user (sshd cannot switch users then). */
  user?: string
  parentDir?: string
}

function isRoot(): boolean {
  return process.getuid?.() === 0
}

/** Numeric uid/gid of a user, from the passwd database. */
export function lookupUser(user: string): { uid: number; gid: number; home: string } | undefined {
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const [name, , uid, gid, , home] = line.split(':')
    if (name === user && uid && gid) return { uid: Number(uid), gid: Number(gid), home: home ?? '/' }
  }
  return undefined
}

/** The password field of `user` in /etc/shadow ('!' while locked), or undefined. */
function shadowPassword(user: string): string | undefined {
  try {
    for (const line of readFileSync('/etc/shadow', 'utf8').split('\n')) {
      const [name, password] = line.split(':')
      if (name === user) return password
    }
  } catch {
    // Not readable (not root): usermod would fail anyway.
    return undefined
  }
  return undefined
}

/**
 * Makes sure the lab user exists and can log in with a key: `useradd` leaves the account locked
 * ('!' password), which sshd refuses even for key logins, so the password is set to '*'.
 */
export function ensureLabUser(user = LAB_USER): Promise<{ uid: number; gid: number; home: string }> {
  let pending = ensuring.get(user)
  if (!pending) {
    pending = createLabUser(user)
    ensuring.set(user, pending)
    pending.catch(() => ensuring.delete(user))
  }
  return pending
}

const ensuring = new Map<string, Promise<{ uid: number; gid: number; home: string }>>()

async function createLabUser(user: string): Promise<{ uid: number; gid: number; home: string }> {
  if (!/^[a-z_][a-z0-9_-]*$/.test(user))
    throw new OperationError(`The lab user name '${user}' is not a valid user name; expected lower-case letters, digits, '_' or '-'.`)
  if (!lookupUser(user)) {
    if (!isRoot())
      throw new OperationError(`The lab user '${user}' does not exist and only root can create it.`, `sudo useradd -m -s /bin/bash ${user}`)
    // Test workers and labs in other processes may create it at the same moment: one at a time,
    // and only if it is still missing once the lock is held.
    await runCommand(local, [
      requireBinary('flock', 'util-linux'),
      '/run/svcops-lab-user.lock',
      'sh',
      '-c',
      `id -u ${user} >/dev/null 2>&1 || useradd -m -s /bin/bash ${user}`,
    ])
  }
  const found = lookupUser(user)
  if (!found) throw new OperationError(`The lab user '${user}' could not be created.`, `useradd -m -s /bin/bash ${user}`)
  if (isRoot() && shadowPassword(user) !== '*') {
    // Parallel test workers may hold the passwd lock for a moment: usermod then fails; try again.
    for (let attempt = 1; ; attempt++) {
      const result = await runCommand(local, [requireBinary('usermod', 'passwd'), '-p', '*', user], { check: attempt >= 5 })
      if (result.code === 0 || shadowPassword(user) === '*') break
      await new Promise((r) => setTimeout(r, 100 * attempt))
    }
  }
  return found
}

function sshdConfig(info: SshdInfo, hostKey: string, authorizedKeys: string): string {
  return [
    `Port ${info.port}`,
    `ListenAddress ${info.host}`,
    `HostKey ${hostKey}`,
    `PidFile ${info.pidFile}`,
    `AuthorizedKeysFile ${authorizedKeys}`,
    `AllowUsers ${info.user}`,
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'UsePAM no',
    'PermitRootLogin no',
    // The keys live in a temp dir owned by whoever started the lab, not in the user's home.
    'StrictModes no',
    'UseDNS no',
    'PrintMotd no',
    'MaxStartups 200:30:400',
    'MaxSessions 100',
    'Subsystem sftp internal-sftp',
    'LogLevel ERROR',
    '',
  ].join('\n')
}

/** Starts an sshd on a free loopback port; resolves once it accepts connections. */
export async function startSshd(options: StartSshdOptions = {}): Promise<Sshd> {
  const sshd = requireBinary('sshd', 'openssh-server')
  const keygen = requireBinary('ssh-keygen', 'openssh-client')
  const user = options.user ?? (isRoot() ? LAB_USER : userInfo().username)
  if (isRoot()) await ensureLabUser(user)
  const dir = mkdtempSync(join(options.parentDir ?? tmpdir(), 'svcops-sshd-'))
  // sshd reads authorized_keys as the login user, so the directory must be traversable.
  chmodSync(dir, 0o755)
  // Privilege separation needs this directory; a fresh container does not have it.
  if (isRoot()) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 })
  const hostKey = join(dir, 'host_ed25519_key')
  const privateKeyPath = join(dir, 'id_ed25519')
  await runCommand(local, [keygen, '-q', '-t', 'ed25519', '-N', '', '-C', 'svcops-lab-host', '-f', hostKey])
  await runCommand(local, [keygen, '-q', '-t', 'ed25519', '-N', '', '-C', 'svcops-lab-client', '-f', privateKeyPath])
  const authorized = join(dir, 'authorized_keys')
  writeFileSync(authorized, [readFileSync(`${privateKeyPath}.pub`, 'utf8').trim(), ...(options.authorizedKeys ?? [])].join('\n') + '\n', {
    mode: 0o644,
  })
  const found = lookupUser(user)
  if (isRoot() && found) chownSync(authorized, found.uid, found.gid)
  let lastError: unknown
  for (let attempt = 1; attempt <= 3; attempt++) {
    const info: SshdInfo = {
      host: '127.0.0.1',
      port: await freePort(),
      user,
      privateKeyPath,
      hostKey: publicKeyFingerprint(readFileSync(`${hostKey}.pub`, 'utf8')),
      dir,
      pidFile: join(dir, 'sshd.pid'),
      logFile: join(dir, 'sshd.log'),
    }
    const config = join(dir, 'sshd_config')
    writeFileSync(config, sshdConfig(info, hostKey, authorized))
    // Without -D sshd forks first and then binds; it writes its pid file once it listens. The
    // parent's exit therefore says nothing: wait for the pid file (ready) or a log line (failed).
    const result = await runCommand(local, [sshd, '-f', config, '-E', info.logFile], { check: false })
    const pid = result.code === 0 ? await waitForPidFile(info) : undefined
    if (pid) return { ...info, stop: () => stopSshd(info) }
    lastError = new OperationError(
      `sshd on 127.0.0.1:${info.port} did not start: ${readLog(info.logFile) || result.stderr.trim() || 'no pid file within 10 s'}`,
    )
  }
  rmSync(dir, { recursive: true, force: true })
  throw lastError
}

/** The pid sshd wrote once it listens, or undefined if it logged an error or took too long. */
async function waitForPidFile(info: SshdInfo, timeoutMs = 10_000): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const pid = readPidFile(info.pidFile)
    if (pid) return pid
    if (readLog(info.logFile)) return undefined
    await new Promise((r) => setTimeout(r, 10))
  }
  return undefined
}

/** A complete pid file's pid (sshd writes "<pid>\n"; a half-written file does not count). */
function readPidFile(file: string): number | undefined {
  try {
    const text = readFileSync(file, 'utf8')
    const pid = Number(text.trim())
    return text.endsWith('\n') && pid > 0 ? pid : undefined
  } catch {
    // Not written yet.
    return undefined
  }
}

function readLog(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').slice(-3).join(' ') : ''
}

/** Stops an sshd described by `info` (also from another process) and the sessions it serves. */
export async function stopSshd(info: SshdInfo): Promise<void> {
  const pid = readPidFile(info.pidFile)
  if (pid && isAlive(pid)) await terminatePids([pid, ...descendantsOf(pid)])
  rmSync(info.dir, { recursive: true, force: true })
}
