/**
 * The database side of backups: connection settings from the environment (password via
 * `readSecret`; to the libpq tools only through a 0600 password file named by PGPASSFILE, never
 * their environment or arguments), clear errors for an unreachable server, and the PostgreSQL
 * client tools (pg_dump, pg_restore, psql) with their version rules.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import type { Readable, Writable } from 'node:stream'
import type pg from 'pg'
import type { DatabaseConfig } from '../config/schema.ts'
import { readSecret } from '../config/secrets.ts'
import { AuthError, BadInputError, CommandError, OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { redact } from '../core/redact.ts'
import { writePrivateFile, type PrivateFile } from '../core/private-files.ts'
import { childEnvironment, findBinary, local, requireBinary, runCommand, shellJoin } from '../core/runner.ts'

/**
 * svcops' own schema in the environment's database: the run lock, run records and journals. Not
 * the service's data: backups exclude it, a restore neither drops nor rewinds it, fingerprints skip it.
 */
export const SVCOPS_SCHEMA = 'svcops'

/** A database to back up from, restore into, or test-restore into. */
export interface DatabaseTarget {
  host: string
  port: number
  name: string
  user: string
  password?: string
}

/** The target an environment's `recording.database` names; reads (and registers) the password. */
export function databaseTarget(config: DatabaseConfig, field = 'recording.database'): DatabaseTarget {
  const password = config.password ? readSecret(config.password, `${field}.password`) : undefined
  if (password !== undefined && /[\r\n]/.test(password))
    throw new BadInputError(
      `${field}.password: holds a line break, which libpq's password file cannot carry; expected a password on one line.`,
    )
  return { host: config.host, port: config.port, name: config.name, user: config.user, ...(password !== undefined ? { password } : {}) }
}

/** Settings for node-postgres. */
export function clientConfig(target: DatabaseTarget, database = target.name): pg.ClientConfig {
  return {
    host: target.host,
    port: target.port,
    user: target.user,
    database,
    connectionTimeoutMillis: 10_000,
    ...(target.password !== undefined ? { password: target.password } : {}),
  }
}

/** A libpq tool's connection: the target and the database on it (default: the target's). */
export interface LibpqConnection {
  target: DatabaseTarget
  database?: string
}

/** Environment for libpq tools, without the password (it goes into a password file: `spawnPgTool`). */
export function libpqEnv(target: DatabaseTarget, database = target.name): Record<string, string> {
  return {
    PGHOST: target.host,
    PGPORT: String(target.port),
    PGUSER: target.user,
    PGDATABASE: database,
    PGCONNECT_TIMEOUT: '10',
  }
}

/**
 * One line of a libpq password file (`~/.pgpass` format) that gives `password` to any host, port,
 * database and user — the file serves one child only. `\\` and `:` are escaped as libpq reads them;
 * a line break cannot be carried and is refused.
 */
export function passfileLine(password: string): string {
  if (/[\r\n]/.test(password))
    throw new BadInputError(
      "The database password holds a line break, which libpq's password file cannot carry; expected a password on one line.",
    )
  return `*:*:*:*:${password.replace(/[\\:]/g, (c) => `\\${c}`)}\n`
}

/**
 * The password file of one libpq tool (0600, in the run folder or a private temp folder, removed
 * with `remove`), or undefined for a target without a password.
 */
export function writePassfile(target: DatabaseTarget): PrivateFile | undefined {
  return target.password === undefined ? undefined : writePrivateFile('pgpass', passfileLine(target.password))
}

function where(target: DatabaseTarget, database = target.name): string {
  return `${target.user}@${target.host}:${target.port}/${database}`
}

/** Runs `fn` on a fresh connection to `target` and closes it whatever happens. */
export async function withDatabase<T>(target: DatabaseTarget, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connectDatabase(target)
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/** Connects, turning refusals and timeouts into one sentence naming the server. */
export async function connectDatabase(target: DatabaseTarget, database = target.name): Promise<pg.Client> {
  // pg loads with the first connection (~30 ms of CPU): a command that opens no database never loads it.
  const { default: postgres } = await import('pg')
  const client = new postgres.Client(clientConfig(target, database))
  try {
    await client.connect()
  } catch (error) {
    await client.end().catch(() => undefined)
    const e = error as NodeJS.ErrnoException & { code?: string }
    const message = redact(e.message)
    if (e.code === '28P01' || e.code === '28000') {
      throw new AuthError(
        `The database server refused the login ${where(target, database)}: ${message}.`,
        [],
        'Check recording.database.user and its password reference.',
      )
    }
    if (e.code === '3D000') throw new OperationError(`The database ${where(target, database)} does not exist: ${message}.`)
    throw new OperationError(
      `The database server ${target.host}:${target.port} is unreachable (${e.code ?? message}); could not connect as ${target.user} to ${database}.`,
      'Check that PostgreSQL runs and that recording.database.host/port are right.',
    )
  }
  return client
}

/** Server version text and number (`SHOW server_version_num`, e.g. 150018). */
export async function serverVersion(client: Pick<pg.ClientBase, 'query'>): Promise<{ text: string; num: number }> {
  const rows = await client.query<{ v: string; n: string }>(
    "SELECT current_setting('server_version') AS v, current_setting('server_version_num') AS n",
  )
  const row = rows.rows[0]
  return { text: (row?.v ?? '').split(' ')[0] ?? '', num: Number(row?.n ?? 0) }
}

/** Major version of a `server_version_num` (>= 10: two digits of major). */
export function majorOf(num: number): number {
  return num >= 100_000 ? Math.floor(num / 10_000) : Math.floor(num / 100)
}

export interface PgTool {
  name: 'pg_dump' | 'pg_restore' | 'psql'
  path: string
  /** e.g. "15.18" */
  version: string
  major: number
}

/** Finds pg_dump, pg_restore or psql on PATH and reads its version; fails with the install command. */
export async function findPgTool(name: PgTool['name']): Promise<PgTool> {
  const path = requireBinary(name, 'postgresql-client')
  const result = await runCommand(local, [path, '--version'])
  const match = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(result.stdout)
  if (!match?.[1])
    throw new OperationError(`'${path} --version' printed '${result.stdout.trim()}'; expected 'pg_dump (PostgreSQL) <version>'.`)
  return { name, path, version: match[2] ? `${match[1]}.${match[2]}` : match[1], major: Number(match[1]) }
}

/**
 * Refuses a client tool older than the server it talks to (pg_dump cannot dump a newer server;
 * pg_restore cannot read an archive made by a newer pg_dump). Names both versions.
 */
export function assertToolFits(tool: PgTool, otherVersion: string, otherMajor: number, other: string): void {
  if (tool.major < otherMajor) {
    throw new OperationError(
      `${tool.name} ${tool.version} (${tool.path}) is older than ${other} ${otherVersion}; ${tool.name} must be of major version ${otherMajor} or newer.`,
      `Install it with: sudo apt-get install -y postgresql-client-${otherMajor}`,
    )
  }
}

/**
 * First minor release of each major with the fix for CVE-2025-8714 (August 2025): before it, a dump
 * made by a malicious server — or planted — can run shell commands through psql meta-commands when
 * it is restored; the fixed pg_dump/pg_restore write `\restrict` and psql honours it. 18 and later
 * have it; 12 and older never got it.
 */
const CVE_2025_8714_FIXED: Record<number, number> = { 13: 22, 14: 19, 15: 14, 16: 10, 17: 6 }

/** Refuses a pg_restore or psql without the fix for CVE-2025-8714, naming the version it needs. */
export function assertToolPatched(tool: PgTool): void {
  const fixed = tool.major >= 18 ? 0 : CVE_2025_8714_FIXED[tool.major]
  const minor = Number(tool.version.split('.')[1] ?? 0)
  if (fixed !== undefined && minor >= fixed) return
  const needed = fixed === undefined ? '13.22, 14.19, 15.14, 16.10, 17.6 or 18' : `${tool.major}.${fixed} or newer`
  throw new OperationError(
    `${tool.name} ${tool.version} (${tool.path}) lacks the fix for CVE-2025-8714 (a dump can run shell commands through psql meta-commands); restoring needs ${needed}.`,
    `Install it with: sudo apt-get install -y postgresql-client-${tool.major >= 13 ? tool.major : 17}`,
  )
}

/** The stdio buffer of pg_dump writing a backup's archive. */
const OUTPUT_BUFFER = '1M'

/**
 * `argv` run under coreutils' `stdbuf -o1M`, when the machine has it (`wideOutput`: pg_dump of a
 * backup). The PostgreSQL tools write their output through stdio, which buffers a pipe in 4 KiB
 * writes (the pipe's block size): about 180 000 writes for a 700 MB archive, each a wakeup and a read
 * in svcops. `stdbuf` sets the buffer before the tool starts and changes nothing else; where it is
 * missing, the tool runs as it is. Not for pg_restore's SQL into psql: a restore measured slower
 * with it (docs/benchmarks.md).
 */
function withWideOutputBuffer(argv: string[]): string[] {
  const stdbuf = findBinary('stdbuf')
  return stdbuf ? [stdbuf, `-o${OUTPUT_BUFFER}`, ...argv] : argv
}

export interface StreamingTool {
  child: ChildProcessByStdio<Writable | null, Readable | null, Readable>
  /** Resolves when the process exited, with its code and the tail of stderr. */
  exited: Promise<{ code: number | null; signal: string | null; stderr: string }>
}

/**
 * Starts a client tool whose stdin/stdout carry a dump (too big for `runCommand`, which buffers),
 * connected to `connection` (none: a tool that reaches no server, `pg_restore --file=-`). Its
 * password is in a 0600 password file (PGPASSFILE) that exists only while the tool runs: removed
 * when it exits, when it cannot start, and on SIGINT/SIGTERM. Emits the same `command` event as the
 * runner when it exits, naming the command as it ran. `wideOutput`: its stdout in 1 MiB writes
 * (`withWideOutputBuffer`).
 */
export function spawnPgTool(
  argv: string[],
  connection: LibpqConnection | undefined,
  stdio: { stdin: boolean; stdout: boolean; wideOutput?: boolean },
): StreamingTool {
  if (!argv[0]) throw new BadInputError('spawnPgTool needs a command.')
  const command = stdio.wideOutput ? withWideOutputBuffer(argv) : argv
  const [file, ...args] = command as [string, ...string[]]
  const started = Date.now()
  const passfile = connection ? writePassfile(connection.target) : undefined
  const env = connection ? { ...libpqEnv(connection.target, connection.database), ...(passfile ? { PGPASSFILE: passfile.path } : {}) } : {}
  // A hand-written spawn, not zx: a dump streams through at its own pace (backpressure into the
  // encryption), and zx keeps every byte a process prints in memory for its result.
  let child: ReturnType<typeof spawn>
  try {
    child = spawn(file, args, {
      env: childEnvironment(env),
      stdio: [stdio.stdin ? 'pipe' : 'ignore', stdio.stdout ? 'pipe' : 'ignore', 'pipe'],
      // Its own process group: a Ctrl-C stops svcops after the step, never a pg_restore half-way.
      detached: true,
    })
  } catch (error) {
    passfile?.remove()
    throw error
  }
  let stderr = ''
  child.stderr?.setEncoding('utf8')
  child.stderr?.on('data', (d: string) => {
    stderr = (stderr + d).slice(-16_384)
  })
  const exited = new Promise<{ code: number | null; signal: string | null; stderr: string }>((resolve, reject) => {
    child.on('error', (error: NodeJS.ErrnoException) => {
      passfile?.remove()
      reject(error.code === 'ENOENT' ? new CommandError(`The program '${file}' was not found.`, null, '') : error)
    })
    child.on('close', (code, signal) => {
      passfile?.remove()
      const tail = redact(stderr.trimEnd().split('\n').slice(-5).join('\n'))
      events.emit({
        kind: 'command',
        host: 'local',
        command: redact(shellJoin(command)),
        code,
        durationMs: Date.now() - started,
        ...(code !== 0 && tail ? { stderrTail: tail } : {}),
      })
      resolve({ code, signal, stderr: redact(stderr) })
    })
  })
  return { child: child as StreamingTool['child'], exited }
}

/** The line of a tool's stderr that says what went wrong (its last `error:` line, else its last line). */
export function lastLine(stderr: string): string {
  const lines = stderr.trim().split('\n').filter(Boolean)
  return (lines.filter((l) => /\berror:/i.test(l)).at(-1) ?? lines.at(-1) ?? '').replace(/\s+/g, ' ')
}
