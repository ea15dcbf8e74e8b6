/**
 * The SSH transport: commands on a host over one reused connection (node-ssh), with the same
 * interface, logging and redaction as the local transport (`runCommand` does both). Exit codes
 * come from `execCommand` (node-ssh's `exec()` does not reject on a non-zero exit). Secrets reach
 * the remote command through stdin only: even `env` values travel inside stdin and are read by the
 * remote shell, because anything put on the remote command line shows in the host's process table.
 */
import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import type { NodeSSH } from 'node-ssh'
import { assertPrivateFile } from '../config/secrets.ts'
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { knownHostsFile, recordedHostKey, recordHostKey } from './known-hosts.ts'
import { shellJoin, shellQuote, type CommandResult, type RunOptions, type Transport } from '../core/runner.ts'

// The few members of ssh2's objects used here (ssh2 ships no type declarations of its own).
interface ConnectSettings {
  host: string
  port: number
  username: string
  readyTimeout: number
  privateKeyPath?: string
  agent?: string
  /** Called with the server's host key (its raw public key blob) during the handshake. */
  hostVerifier?: (key: Buffer) => boolean
}
interface ClientLike {
  setNoDelay(noDelay: boolean): unknown
  once(event: 'close', listener: () => void): unknown
  on(event: 'error', listener: (error: Error) => void): unknown
}
interface Closable {
  close(): unknown
}

/** Where and as whom to connect. */
export interface SshTarget {
  host: string
  port: number
  user: string
  /** Private key file; without it the SSH agent (SSH_AUTH_SOCK) is used. */
  keyFile?: string | undefined
  /** Pinned host key fingerprint (`SHA256:...`); another key is refused. */
  hostKey?: string | undefined
  /**
   * Without `hostKey`: accept the key seen on the first connection, record it in the state dir, and
   * refuse any other key afterwards. Without either, the host is refused.
   */
  trustOnFirstUse?: boolean | undefined
  /**
   * How commands that need root run (`RunOptions.asRoot`): `sudo` runs them as `sudo -n -- argv`
   * (a password-less rule per command, no shell, never a prompt); without it they run as `user`.
   */
  become?: 'sudo' | undefined
}

/** `SHA256:...` of a raw public key blob, as `ssh-keygen -lf` and OpenSSH's prompts print it. */
export function hostKeyFingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`
}

/** The fingerprint of an OpenSSH public key line (`ssh-ed25519 AAAA... comment`). */
export function publicKeyFingerprint(line: string): string {
  const blob = line.trim().split(/\s+/)[1]
  if (!blob) throw new OperationError(`'${line.trim().slice(0, 40)}' is not an OpenSSH public key line.`)
  return hostKeyFingerprint(Buffer.from(blob, 'base64'))
}

export interface SshTransportOptions {
  /** Name in logs and reports (the host's name in the environment file). */
  name?: string
  connectTimeoutMs?: number
  /** Connect attempts before giving up (a busy sshd drops connects beyond MaxStartups). */
  connectAttempts?: number
  /** Commands running at once on the one connection (OpenSSH's MaxSessions defaults to 10). */
  maxSessions?: number
}

/** Runs commands on one host over one SSH connection, opened on first use and reused. */
export class SshTransport implements Transport {
  readonly host: string
  private connecting: Promise<NodeSSH> | undefined
  private opened: NodeSSH | undefined
  private running = 0
  private warnedUnpinned = false
  private readonly waiting: Array<() => void> = []

  readonly target: SshTarget
  private readonly options: SshTransportOptions

  constructor(target: SshTarget, options: SshTransportOptions = {}) {
    this.target = target
    this.options = options
    this.host = options.name ?? target.host
  }

  /** Opens the connection now (otherwise the first command does). */
  connect(): Promise<NodeSSH> {
    this.connecting ??= this.openConnection().catch((error: unknown) => {
      this.connecting = undefined
      throw error
    })
    return this.connecting
  }

  private async openConnection(): Promise<NodeSSH> {
    const { host, port, user, keyFile, hostKey } = this.target
    const tofu = hostKey === undefined && this.target.trustOnFirstUse === true
    // What the host must show: the pinned key, the one recorded at its first use, or (first use) any.
    const expected = hostKey ?? (tofu ? recordedHostKey(host, port) : undefined)
    if (keyFile) assertPrivateFile(keyFile, `${this.host}: ssh.keyFile`)
    let seen: string | undefined
    const config: ConnectSettings = {
      host,
      port,
      username: user,
      readyTimeout: this.options.connectTimeoutMs ?? 10_000,
      hostVerifier: (key) => {
        seen = hostKeyFingerprint(key)
        return expected !== undefined ? seen === expected : tofu
      },
    }
    if (keyFile) config.privateKeyPath = keyFile
    else if (process.env.SSH_AUTH_SOCK) config.agent = process.env.SSH_AUTH_SOCK
    const attempts = this.options.connectAttempts ?? 4
    // node-ssh and ssh2 load at the first connection (~75 ms of CPU): a command that reaches no
    // host over SSH (a cluster's, a local host's, `runs list`) never loads them.
    const { NodeSSH } = await import('node-ssh')
    let lastError: unknown
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const ssh = new NodeSSH()
      try {
        await ssh.connect(config)
        // Without this every small command waits on Nagle's algorithm (~45 ms instead of ~3 ms).
        const client = ssh.connection as unknown as ClientLike | null
        client?.setNoDelay(true)
        // A reset after the handshake (sshd stopped) must not crash the process: the command in
        // flight fails on its own, and the next one reconnects.
        client?.on('error', () => undefined)
        // A dropped connection (sshd restarted, network) is opened again by the next command.
        client?.once('close', () => {
          if (this.opened === ssh) {
            this.opened = undefined
            this.connecting = undefined
          }
        })
        if (tofu && expected === undefined && seen !== undefined && !this.warnedUnpinned) {
          this.warnedUnpinned = true
          recordHostKey(host, port, seen)
          events.warn(
            `The SSH host key of ${this.host} (${host}:${port}) was trusted on first use: ${seen}, recorded in ${knownHostsFile()}; another key will be refused. Check it out of band and pin it: ssh.hostKey: ${seen}`,
            this.host,
          )
        }
        this.opened = ssh
        return ssh
      } catch (error) {
        ssh.dispose()
        if (hostKey !== undefined && seen !== undefined && seen !== hostKey) {
          throw new OperationError(
            `The SSH host key of ${this.host} (${host}:${port}) is ${seen}, not the ${hostKey} pinned in the environment file; refusing to connect.`,
            'If the host was reinstalled, check its new key out of band (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host) and update ssh.hostKey.',
          )
        }
        if (tofu && expected !== undefined && seen !== undefined && seen !== expected) {
          throw new OperationError(
            `The SSH host key of ${this.host} (${host}:${port}) is ${seen}, not the ${expected} it showed on first use (recorded in ${knownHostsFile()}); refusing to connect.`,
            'If the host was reinstalled, check its new key out of band, then remove its line from that file or pin it with ssh.hostKey.',
          )
        }
        if (expected === undefined && !tofu && seen !== undefined) {
          throw new OperationError(
            `The SSH host key of ${this.host} (${host}:${port}) is not pinned (ssh.hostKey); refusing to connect. It shows ${seen}.`,
            `Check it out of band (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host) and pin it: ssh.hostKey: ${seen}; or set ssh.trustOnFirstUse: true to record the first key seen.`,
          )
        }
        lastError = error
        if (attempt < attempts) await new Promise((r) => setTimeout(r, 100 * 2 ** attempt))
      }
    }
    const reason = lastError instanceof Error ? lastError.message : String(lastError)
    throw new OperationError(
      `Could not connect to ${this.host} over SSH as ${user}@${host}:${port}: ${reason}.`,
      `ssh -p ${port} ${user}@${host} true`,
    )
  }

  private async acquire(): Promise<void> {
    const limit = this.options.maxSessions ?? 8
    if (this.running >= limit) await new Promise<void>((resolve) => this.waiting.push(resolve))
    this.running++
  }

  private release(): void {
    this.running--
    this.waiting.shift()?.()
  }

  /** Runs `argv` through the login shell of the remote user; use `runCommand`, which logs and checks it. */
  async exec(argv: string[], options: RunOptions): Promise<CommandResult> {
    if (argv.length === 0) throw new Error('runCommand needs a command.')
    const ssh = await this.connect()
    // runCommand logged the argv it was given; sudo is how this host runs it, not what it is.
    const { command, stdin } = remoteCommand(
      options.asRoot && this.target.become === 'sudo' ? ['sudo', '-n', '--', ...argv] : argv,
      options,
    )
    await this.acquire()
    const started = Date.now()
    let timer: NodeJS.Timeout | undefined
    try {
      // Without a tty, OpenSSH lets a command run on after its channel closes (and ignores signal
      // requests here), so the host enforces the timeout itself with coreutils' `timeout`; the
      // channel is closed too, a little later, in case the host has no `timeout`.
      const onChannel = (opened: unknown): void => {
        if (options.timeoutMs) timer = setTimeout(() => (opened as Closable).close(), options.timeoutMs + 5000)
      }
      const result = await ssh.execCommand(command, { stdin: Readable.from([stdin]), noTrim: true, onChannel }).catch((error: unknown) => {
        throw new OperationError(
          `Could not run a command on ${this.host} over SSH: ${error instanceof Error ? error.message : String(error)}.`,
        )
      })
      const durationMs = Date.now() - started
      // `timeout` exits 124 when it had to stop the command: report it as the local transport does.
      const timedOut = options.timeoutMs !== undefined && (result.code === 124 || result.code === null) && durationMs >= options.timeoutMs
      return {
        code: timedOut ? null : result.code,
        signal: timedOut ? 'SIGTERM' : result.signal,
        stdout: result.stdout,
        stderr: result.stderr,
        durationMs,
      }
    } finally {
      if (timer) clearTimeout(timer)
      this.release()
    }
  }

  /** Copies a local file to `remotePath` on the host (SFTP on the same connection). */
  async upload(localPath: string, remotePath: string): Promise<void> {
    const ssh = await this.connect()
    try {
      await ssh.putFile(localPath, remotePath)
    } catch (error) {
      throw new OperationError(`Could not copy ${localPath} to ${this.host}:${remotePath}: ${(error as Error).message}.`)
    }
  }

  /** Closes the connection; the next command opens a new one. */
  async close(): Promise<void> {
    const pending = this.connecting
    this.connecting = undefined
    this.opened = undefined
    if (!pending) return
    try {
      ;(await pending).dispose()
    } catch {
      // The connection never opened; there is nothing to close.
      return
    }
  }
}

/**
 * The command line sent to sshd and the bytes sent to its stdin. Environment variables are
 * prepended to stdin as `export` lines of exactly known length; the remote shell reads that many
 * bytes with `dd` and evaluates them, so values stay off every process's argument list, and the
 * rest of stdin is left for the command.
 */
export function remoteCommand(
  argv: string[],
  options: Pick<RunOptions, 'cwd' | 'env' | 'input' | 'timeoutMs'>,
): { command: string; stdin: Buffer } {
  const input = typeof options.input === 'string' ? Buffer.from(options.input) : (options.input ?? Buffer.alloc(0))
  const parts: string[] = []
  let stdin = input
  const entries = Object.entries(options.env ?? {})
  if (entries.length > 0) {
    const exports = Buffer.from(entries.map(([k, v]) => `export ${k}=${shellQuote(v)}\n`).join(''))
    parts.push(`eval "$(dd bs=1 count=${exports.length} 2>/dev/null)"`)
    stdin = Buffer.concat([exports, input])
  }
  if (options.cwd) parts.push(`cd ${shellQuote(options.cwd)}`)
  const limited = options.timeoutMs ? ['timeout', '--kill-after=2', `${Math.max(1, options.timeoutMs) / 1000}s`, ...argv] : argv
  parts.push(`exec ${shellJoin(limited)}`)
  return { command: parts.join(' && '), stdin }
}
