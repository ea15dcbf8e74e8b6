/**
 * Throwaway PostgreSQL clusters from the Debian binaries: `initdb` into a temp dir, `pg_ctl` on a
 * free loopback port with the socket inside the temp dir. As root, the server runs as the
 * `postgres` user (initdb refuses root). Never touches the machine's own clusters.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { MissingBinaryError, OperationError } from '../core/errors.ts'
import { registerSecret } from '../core/redact.ts'
import { local, runCommand } from '../core/runner.ts'
import { freePort } from './ports.ts'

/** Directory of the newest installed PostgreSQL server binaries. */
export function postgresBinDir(): string {
  const base = '/usr/lib/postgresql'
  const versions = existsSync(base)
    ? readdirSync(base)
        .filter((v) => existsSync(join(base, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  if (!versions[0]) throw new MissingBinaryError('initdb', 'postgresql')
  return join(base, versions[0], 'bin')
}

/** Connection facts of a running cluster. The password is registered as a secret. */
export interface PostgresInfo {
  host: string
  port: number
  socketDir: string
  user: string
  password: string
  /** Temp dir holding data, socket and log. */
  dir: string
  dataDir: string
  logFile: string
  binDir: string
  /** OS user the server runs as. */
  osUser: string
}

export interface StartPostgresOptions {
  port?: number
  /** fsync off makes tests faster; the lab for demos keeps it on. */
  fsync?: boolean
  /** Parent directory for the cluster's temp dir. */
  parentDir?: string
}

function isRoot(): boolean {
  return process.getuid?.() === 0
}

/** Runs a server binary as the cluster's OS user. */
function asServerUser(info: Pick<PostgresInfo, 'binDir' | 'osUser'>, binary: string, args: string[]): string[] {
  const path = join(info.binDir, binary)
  return isRoot() ? ['runuser', '-u', info.osUser, '--', path, ...args] : [path, ...args]
}

/** A running throwaway cluster. */
export class PostgresCluster {
  readonly info: PostgresInfo

  constructor(info: PostgresInfo) {
    this.info = info
  }

  get port(): number {
    return this.info.port
  }

  /** Settings for `pg` clients (node-postgres) connecting as the superuser, or as `user`. */
  clientConfig(database = 'postgres', user = this.info.user, password = this.info.password): pg.ClientConfig {
    return { host: this.info.host, port: this.info.port, user, password, database }
  }

  /** Environment for libpq tools (psql, pg_dump): the password travels in PGPASSWORD, never in argv. */
  libpqEnv(database = 'postgres'): Record<string, string> {
    return {
      PGHOST: this.info.host,
      PGPORT: String(this.info.port),
      PGUSER: this.info.user,
      PGPASSWORD: this.info.password,
      PGDATABASE: database,
    }
  }

  /** Runs SQL as the superuser and returns the rows. */
  async query<T extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params: unknown[] = [], database = 'postgres'): Promise<T[]> {
    const client = new pg.Client(this.clientConfig(database))
    await client.connect()
    try {
      return (await client.query<T>(sql, params)).rows
    } finally {
      await client.end()
    }
  }

  /**
   * Creates a login role with a password (registered as a secret) and a database it owns.
   * `createdb` lets the role create scratch databases (what a backup's test restore needs).
   */
  async createDatabase(name: string, owner?: { user: string; password: string; createdb?: boolean }): Promise<void> {
    if (owner) {
      registerSecret(owner.password)
      await this.query(
        `CREATE ROLE ${pg.escapeIdentifier(owner.user)} LOGIN ${owner.createdb ? 'CREATEDB ' : ''}PASSWORD ${pg.escapeLiteral(owner.password)}`,
      )
      await this.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} OWNER ${pg.escapeIdentifier(owner.user)}`)
    } else {
      await this.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`)
    }
  }

  /** Stops the server and removes its temp dir. Safe to call twice. */
  async stop(): Promise<void> {
    await stopPostgres(this.info)
  }
}

/** Stops a cluster described by `info` (also from another process, e.g. `svcops lab down`). */
export async function stopPostgres(info: PostgresInfo, options: { keepFiles?: boolean } = {}): Promise<void> {
  if (existsSync(join(info.dataDir, 'postmaster.pid'))) {
    await runCommand(local, asServerUser(info, 'pg_ctl', ['-D', info.dataDir, '-m', 'fast', '-w', 'stop']), { check: false })
  }
  if (!options.keepFiles) rmSync(info.dir, { recursive: true, force: true })
}

/** Creates and starts a throwaway cluster on a free loopback port. */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresCluster> {
  const binDir = postgresBinDir()
  const osUser = isRoot() ? 'postgres' : userInfo().username
  const dir = mkdtempSync(join(options.parentDir ?? tmpdir(), 'svcops-pg-'))
  const dataDir = join(dir, 'data')
  const socketDir = join(dir, 'socket')
  const logFile = join(dir, 'server.log')
  const password = registerSecret(randomBytes(18).toString('base64url'))
  const pwFile = join(dir, 'pwfile')
  writeFileSync(pwFile, password + '\n', { mode: 0o600 })
  const info: PostgresInfo = { host: '127.0.0.1', port: 0, socketDir, user: 'postgres', password, dir, dataDir, logFile, binDir, osUser }
  try {
    if (isRoot()) {
      const pwuid = await runCommand(local, ['id', '-u', osUser], { check: false })
      if (pwuid.code !== 0)
        throw new OperationError(
          `The system user '${osUser}' does not exist; it comes with the Debian package postgresql.`,
          'Install it with: sudo apt-get install -y postgresql',
        )
      const uid = Number(pwuid.stdout.trim())
      const gid = Number((await runCommand(local, ['id', '-g', osUser])).stdout.trim())
      chownSync(dir, uid, gid)
      chownSync(pwFile, uid, gid)
    }
    chmodSync(dir, 0o700)
    await runCommand(
      local,
      asServerUser(info, 'initdb', [
        '-D',
        dataDir,
        '-U',
        'postgres',
        '--pwfile',
        pwFile,
        '--auth-local=trust',
        '--auth-host=scram-sha-256',
        '-E',
        'UTF8',
        '--locale=C.UTF-8',
        '--no-instructions',
      ]),
    )
    rmSync(pwFile)
    await runCommand(
      local,
      isRoot() ? ['runuser', '-u', osUser, '--', 'mkdir', '-m', '0700', socketDir] : ['mkdir', '-m', '0700', socketDir],
    )
    const fsync = options.fsync ?? true
    for (let attempt = 1; ; attempt++) {
      info.port = options.port ?? (await freePort())
      const serverOptions = [
        `-p ${info.port}`,
        `-k ${socketDir}`,
        `-c listen_addresses=127.0.0.1`,
        `-c fsync=${fsync ? 'on' : 'off'}`,
        `-c synchronous_commit=${fsync ? 'on' : 'off'}`,
        `-c full_page_writes=${fsync ? 'on' : 'off'}`,
        `-c max_connections=200`,
      ].join(' ')
      const started = await runCommand(
        local,
        asServerUser(info, 'pg_ctl', ['-D', dataDir, '-l', logFile, '-o', serverOptions, '-w', '-t', '60', 'start']),
        { check: false },
      )
      if (started.code === 0) break
      if (attempt >= 3 || options.port) {
        throw new OperationError(
          `PostgreSQL did not start on 127.0.0.1:${info.port}: ${started.stderr.trim() || started.stdout.trim()} (log: ${logFile}).`,
        )
      }
    }
    return new PostgresCluster(info)
  } catch (error) {
    await stopPostgres(info).catch(() => undefined)
    throw error
  }
}
