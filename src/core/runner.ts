/**
 * The one command runner. Every external command svcops starts goes through `runCommand`, which
 * logs it (redacted), times it, and captures exit code, stdout and stderr. Commands are argv
 * arrays, never shell strings built from input; secrets go through stdin or the environment,
 * never the argument list.
 */
import { spawn } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { CommandError, MissingBinaryError } from './errors.ts'
import { events, type EventLog } from './events.ts'
import { redact } from './redact.ts'

export interface CommandResult {
  code: number | null
  signal: string | null
  stdout: string
  stderr: string
  durationMs: number
}

export interface RunOptions {
  cwd?: string
  /** Extra environment variables, over the allow-listed basics of this process (`childEnvironment`) for local commands. */
  env?: Record<string, string>
  /** Data written to the command's stdin (how secrets reach a command). */
  input?: string | Buffer
  timeoutMs?: number
  /** Throw a CommandError on a non-zero exit (default true). */
  check?: boolean
  /** Log the command as this instead of its argv (for long scripts). */
  display?: string
  /**
   * The command needs root on the host: a transport that logs in unprivileged runs it through the
   * host's become (`ssh.become: sudo`: `sudo -n -- argv`, no shell); others run it as they are.
   */
  asRoot?: boolean
}

/** Where commands run: this machine, or a host over SSH. Same interface, same logging. */
export interface Transport {
  /** Name used in logs and reports. */
  readonly host: string
  exec(argv: string[], options: RunOptions): Promise<CommandResult>
  /** Copies a local file to the host. */
  upload(localPath: string, remotePath: string): Promise<void>
  close(): Promise<void>
}

/** Quotes one word for a POSIX shell. */
export function shellQuote(word: string): string {
  if (word === '') return "''"
  if (/^[A-Za-z0-9_\-./=:@%+,]+$/.test(word)) return word
  return `'${word.replace(/'/g, `'\\''`)}'`
}

/** The argv as a shell command line (for display and for SSH). */
export function shellJoin(argv: string[]): string {
  return argv.map(shellQuote).join(' ')
}

function tail(text: string, lines = 20): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n')
}

/**
 * Runs `argv` on `transport`, emits a `command` event, and (unless `check: false`) throws a
 * CommandError naming the command and the last lines of stderr when it exits non-zero.
 */
export async function runCommand(
  transport: Transport,
  argv: string[],
  options: RunOptions = {},
  log: EventLog = events,
): Promise<CommandResult> {
  const shown = redact(options.display ?? shellJoin(argv))
  const result = await transport.exec(argv, options)
  const stderrTail = tail(result.stderr, 5)
  log.emit({
    kind: 'command',
    host: transport.host,
    command: shown,
    code: result.code,
    durationMs: result.durationMs,
    ...(result.code !== 0 && stderrTail ? { stderrTail } : {}),
  })
  if ((options.check ?? true) && result.code !== 0) {
    const how = result.code === null ? `was killed by ${result.signal ?? 'a signal'}` : `exited with code ${result.code}`
    const detail = tail(result.stderr) || tail(result.stdout)
    throw new CommandError(
      redact(`The command '${shown}' on ${transport.host} ${how}${detail ? `: ${detail}` : '.'}`),
      result.code,
      redact(tail(result.stderr)),
    )
  }
  return result
}

/** Runs commands as child processes of this one. */
export class LocalTransport implements Transport {
  readonly host: string
  constructor(host = 'local') {
    this.host = host
  }

  exec(argv: string[], options: RunOptions): Promise<CommandResult> {
    const [file, ...args] = argv
    if (!file) return Promise.reject(new Error('runCommand needs a command.'))
    const started = Date.now()
    // A spawn of the program itself, no shell: argv is exact, nothing to quote. (zx's `$` once cost
    // ~0.6 s a command here: bash sourced the operator's startup files, see src/core/shell.ts.)
    return new Promise((resolve, reject) => {
      const child = spawn(file, args, {
        cwd: options.cwd,
        env: childEnvironment(options.env),
        stdio: ['pipe', 'pipe', 'pipe'],
        timeout: options.timeoutMs,
        // Its own process group: a Ctrl-C reaches svcops, which stops after the step under way,
        // never the dpkg or supervisorctl in the middle of it (src/core/lifecycle.ts).
        detached: true,
      })
      const out: Buffer[] = []
      const err: Buffer[] = []
      child.stdout.on('data', (d: Buffer) => out.push(d))
      child.stderr.on('data', (d: Buffer) => err.push(d))
      child.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') reject(new CommandError(`The program '${file}' was not found on ${this.host}.`, null, ''))
        else reject(error)
      })
      child.on('close', (code, signal) => {
        resolve({
          code,
          signal,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
          durationMs: Date.now() - started,
        })
      })
      child.stdin.on('error', () => {
        // The command may exit without reading its input; its exit code tells what happened.
      })
      child.stdin.end(options.input ?? '')
    })
  }

  upload(): Promise<void> {
    return Promise.reject(new Error('LocalTransport.upload is not supported; copy the file instead.'))
  }

  close(): Promise<void> {
    return Promise.resolve()
  }
}

// What a child process gets from svcops' own environment: the platform basics only. Credentials
// svcops read (a manager password in SVCOPS_MANAGER_PASSWORD, a passphrase, a database password)
// never reach a child that does not need them; a child that does gets them through `extra`.
const INHERITED = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'TERM',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  // libpq's TLS settings: how the operator wants the database reached, not secrets.
  'PGSSLMODE',
  'PGSSLROOTCERT',
  'PGSSLCERT',
  'PGSSLKEY',
  'PGSSLCRL',
])

/** The environment of a child: the allow-listed variables of this process, plus `extra`. */
export function childEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && (INHERITED.has(key) || key.startsWith('LC_'))) env[key] = value
  return { ...env, ...extra }
}

/** The local transport every command on this machine runs through. */
export const local = new LocalTransport()

/** Finds `binary` on PATH (and in the sbin folders, where Debian keeps daemons). */
export function findBinary(binary: string, extraDirs: string[] = []): string | undefined {
  const dirs = [...extraDirs, ...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/sbin', '/usr/local/sbin']
  for (const dir of dirs) {
    if (!dir) continue
    const candidate = join(dir, binary)
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // not in this directory; keep looking
    }
  }
  return undefined
}

/** Like `findBinary`, but fails loudly with the command that installs the binary. */
export function requireBinary(binary: string, aptPackage: string, extraDirs: string[] = []): string {
  const found = findBinary(binary, extraDirs)
  if (!found) throw new MissingBinaryError(binary, aptPackage)
  return found
}
