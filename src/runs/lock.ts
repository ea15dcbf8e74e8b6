/**
 * One run per environment, and one per host. The environment lock lives in the environment's own
 * database, so every machine that could start a run sees it: a session-level advisory lock (held by
 * an open connection, so PostgreSQL releases it the moment the holder dies, even on SIGKILL) plus a
 * row in `svcops.run_lock` saying who holds it, since when, and for which run — which is what a
 * refused second run prints, and how a dead holder is recognised (row present, advisory lock free).
 * The lock's session connects to the maintenance database, so a restore of the service database
 * (which refuses while other sessions use it) can run under the lock. The host lock is a file on
 * the host written with noclobber.
 */
import type pg from 'pg'
import type { DatabaseConfig } from '../config/schema.ts'
import { connectDatabase, databaseTarget } from '../drivers/postgres.ts'
import { rememberOwnSession } from '../drivers/postgres-sessions.ts'
import { LockedError, OperationError, withFacts } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { runCommand, type Transport } from '../core/runner.ts'
import { HOST_LEASE_SECONDS, holderPresence, leaseLine } from './host-lease.ts'
import type { LockPolicy } from './lock-policy.ts'
import { isRunId } from './run-record.ts'

/** Who holds (or held) a lock. */
export interface LockHolder {
  runId: string
  holder: string
  pid: number
  since: string
}

export interface AcquireOptions {
  environment: string
  holder: LockHolder
  /**
   * A lock another run holds (default `respect`): a live holder's lock is broken (its session
   * terminated, logged) only with `break-any`, since its run is unfinished while it holds it.
   */
  lockPolicy?: LockPolicy
  /** The run being resumed: its own stale row is taken over silently. */
  resuming?: string
  /**
   * Judges a holder that died without releasing (not the run being resumed): an error refuses the
   * lock and leaves the dead holder's row as it was, so the next attempt is refused the same way.
   */
  judgeDead?: (dead: LockHolder) => Error | undefined
}

/** What `acquireEnvironmentLock` found and did. */
export interface EnvironmentLock {
  /** The previous holder, when it had died without releasing (its run may need resume or rollback). */
  deadHolder?: LockHolder
  /** The previous holder whose lock was broken with --break-lock. */
  broken?: LockHolder
  release(): Promise<void>
  /** Ends the lock's session but keeps its row: the run did not finish (interrupted), and the next run is told so. */
  leave(): Promise<void>
}

const CREATE_TABLE =
  'CREATE TABLE IF NOT EXISTS svcops.run_lock (environment text PRIMARY KEY, run_id text NOT NULL, holder text NOT NULL, pid integer NOT NULL, since timestamptz NOT NULL, backend_pid integer NOT NULL)'

/** The advisory lock key of an environment's database (stable, derived in SQL from the names). */
const KEY_SQL = `hashtext('svcops:env:' || $1 || ':' || $2)`

/**
 * The session that holds the advisory lock. It connects to the server's maintenance database
 * (`postgres`) when the role may, so that it is not a session on the service database: a restore
 * during rollback refuses while other sessions use that database. Falls back to the service database.
 */
async function openLockSession(db: DatabaseConfig): Promise<pg.Client> {
  const target = databaseTarget(db)
  let session: pg.Client
  try {
    session = await connectDatabase(target, 'postgres')
  } catch {
    session = await connectDatabase(target)
  }
  try {
    // On the service database (the fallback), a restore by this process must not count it as a stranger.
    await rememberOwnSession(session, db)
    return session
  } catch (error) {
    await session.end().catch(() => undefined)
    throw error
  }
}

/** Runs `fn` on a short connection to the service database (where the lock's row lives). */
async function onServiceDb<T>(db: DatabaseConfig, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connectDatabase(databaseTarget(db))
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

async function tryLock(session: pg.Client, environment: string, db: DatabaseConfig): Promise<boolean> {
  return (
    (await session.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${KEY_SQL}) AS ok`, [environment, db.name])).rows[0]?.ok ?? false
  )
}

async function readRow(client: pg.Client, environment: string): Promise<(LockHolder & { backendPid: number }) | undefined> {
  const rows = await client.query<{ run_id: string; holder: string; pid: number; since: Date; backend_pid: number }>(
    'SELECT run_id, holder, pid, since, backend_pid FROM svcops.run_lock WHERE environment = $1',
    [environment],
  )
  const row = rows.rows[0]
  return row
    ? { runId: row.run_id, holder: row.holder, pid: row.pid, since: row.since.toISOString(), backendPid: row.backend_pid }
    : undefined
}

function describe(holder: LockHolder): string {
  return `run ${holder.runId} (${holder.holder}, pid ${holder.pid}) since ${holder.since}`
}

/**
 * `--break-lock` without `--force` while the holder's run is unfinished: what breaking it would risk,
 * and the commands that finish that run instead.
 */
export function breakRefused(held: string, runId: string): LockedError {
  return withFacts(
    new LockedError(
      `--break-lock: ${held}; breaking its lock lets this run act on hosts that run may have left stopped or half-upgraded (or is changing now), and nothing would then roll that run back.`,
      `Finish it first: svcops resume ${runId}   or roll it back: svcops resume ${runId} --rollback   (or add --force to break the lock anyway)`,
    ),
    { unfinishedRun: runId },
  )
}

function plain(row: LockHolder & { backendPid?: number }): LockHolder {
  return { runId: row.runId, holder: row.holder, pid: row.pid, since: row.since }
}

/**
 * Takes the environment lock or throws LockedError naming the holder, since when and its run id.
 * A holder that died (row left, advisory lock free) is reported in `deadHolder`; unless we are
 * resuming that very run, the caller must decide (its run may be half done).
 */
export async function acquireEnvironmentLock(db: DatabaseConfig, options: AcquireOptions): Promise<EnvironmentLock> {
  const { environment, holder } = options
  const policy = options.lockPolicy ?? 'respect'
  const session = await openLockSession(db)
  // The connection holds the lock; an error on it later (server restart) means we lost the lock.
  session.on('error', (error) => events.emit({ kind: 'error', message: `The connection holding the run lock failed: ${error.message}` }))
  try {
    const row = await onServiceDb(db, async (c) => {
      await c.query('CREATE SCHEMA IF NOT EXISTS svcops')
      await c.query(CREATE_TABLE)
      return readRow(c, environment)
    })
    let got = await tryLock(session, environment, db)
    let broken: LockHolder | undefined
    if (!got) {
      if (policy === 'respect' || !row) {
        const who = row ? describe(row) : 'another session'
        throw withFacts(
          new LockedError(
            `Environment '${environment}' is locked by ${who}.`,
            row
              ? `Wait for it, inspect it with 'svcops runs show ${row.runId}', or if that run is truly gone: --break-lock`
              : 'Wait for the other run to finish.',
          ),
          { lockedBy: row ? plain(row) : null },
        )
      }
      if (policy !== 'break-any')
        throw breakRefused(`Environment '${environment}' is locked by ${describe(row)}, which is still running`, row.runId)
      events.warn(`--break-lock --force: taking the lock of environment '${environment}' from ${describe(row)}.`)
      await session.query('SELECT pg_terminate_backend($1)', [row.backendPid])
      for (let i = 0; i < 50 && !got; i++) {
        await new Promise((r) => setTimeout(r, 100))
        got = await tryLock(session, environment, db)
      }
      if (!got) throw new LockedError(`The lock of environment '${environment}' could not be broken: its holder's session did not end.`)
      broken = plain(row)
    }
    const dead = !broken && row && row.runId !== options.resuming ? plain(row) : undefined
    // A command's holder (backup restore, backup delete) is no run: nothing of it is left to finish.
    const refusal = dead && isRunId(dead.runId) ? options.judgeDead?.(dead) : undefined
    if (refusal) throw refusal
    if (dead) events.warn(`The previous holder of environment '${environment}' died without releasing the lock: ${describe(dead)}.`)
    const backendPid = (await session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0
    await onServiceDb(db, (c) =>
      c.query(
        `INSERT INTO svcops.run_lock (environment, run_id, holder, pid, since, backend_pid) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (environment) DO UPDATE SET run_id = $2, holder = $3, pid = $4, since = $5, backend_pid = $6`,
        [environment, holder.runId, holder.holder, holder.pid, holder.since, backendPid],
      ),
    )
    let released = false
    return {
      async leave() {
        if (released) return
        released = true
        // The session ends (the advisory lock with it); the row stays, naming the unfinished run.
        await session.end()
      },
      ...(dead ? { deadHolder: dead } : {}),
      ...(broken ? { broken } : {}),
      async release() {
        if (released) return
        released = true
        try {
          await onServiceDb(db, (c) =>
            c.query('DELETE FROM svcops.run_lock WHERE environment = $1 AND run_id = $2', [environment, holder.runId]),
          )
          await session.query(`SELECT pg_advisory_unlock(${KEY_SQL})`, [environment, db.name])
        } finally {
          await session.end()
        }
      },
    }
  } catch (error) {
    await session.end().catch(() => undefined)
    throw error
  }
}

/**
 * Runs `restore` (a database restore) and keeps the lock row true: the dump holds `svcops.run_lock`
 * as it was at backup time, and a restore replaces it with that. The advisory lock stays held
 * throughout; the row saying who holds it now is written back afterwards, whatever happened.
 */
export async function withLockRowKept<T>(db: DatabaseConfig, environment: string, restore: () => Promise<T>): Promise<T> {
  const row = await onServiceDb(db, (c) => readRow(c, environment).catch(() => undefined))
  try {
    return await restore()
  } finally {
    if (row) {
      await onServiceDb(db, async (c) => {
        await c.query('CREATE SCHEMA IF NOT EXISTS svcops')
        await c.query(CREATE_TABLE)
        await c.query(
          `INSERT INTO svcops.run_lock (environment, run_id, holder, pid, since, backend_pid) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (environment) DO UPDATE SET run_id = $2, holder = $3, pid = $4, since = $5, backend_pid = $6`,
          [environment, row.runId, row.holder, row.pid, row.since, row.backendPid],
        )
      })
    }
  }
}

/** The current holder of an environment's lock, if any (for `runs list`, --dry-run and messages). */
export async function readEnvironmentLock(db: DatabaseConfig, environment: string): Promise<(LockHolder & { alive: boolean }) | undefined> {
  const row = await onServiceDb(db, async (c) => {
    const exists = await c.query(`SELECT 1 FROM pg_tables WHERE schemaname = 'svcops' AND tablename = 'run_lock'`)
    return exists.rowCount === 0 ? undefined : readRow(c, environment)
  })
  if (!row) return undefined
  const session = await openLockSession(db)
  try {
    const free = await tryLock(session, environment, db)
    if (free) await session.query(`SELECT pg_advisory_unlock(${KEY_SQL})`, [environment, db.name])
    return { ...plain(row), alive: !free }
  } finally {
    await session.end()
  }
}

/**
 * Takes the per-host lock file (`path`, created with noclobber so two writers cannot both win).
 * A file left by a run in `takeOver` (the dead run we replace or resume) is replaced; any other
 * holder is refused with its content unless `lockPolicy` breaks it. With `lease` the lock is a lease its
 * holder renews (`renewHostLease`), and naming the run is not enough: the file is taken over only
 * when its holder is proven gone (its process dead on this machine, or its lease expired) — a
 * resume of a run whose holder lives is refused naming it, as etcd takes a lock over only once its
 * lease expired. Without `lease` the caller has proven the holder gone (recording targets: the
 * environment's advisory lock was free). Returns the line written: with `lease` it is this taking's
 * own (`leaseLine`), which the holder renews, checks and releases by (host-lease.ts).
 */
export async function acquireHostLock(
  transport: Transport,
  path: string,
  holder: LockHolder,
  options: { takeOver?: string[]; lockPolicy?: LockPolicy; lease?: boolean } = {},
): Promise<string> {
  const policy = options.lockPolicy ?? 'respect'
  const content = options.lease ? leaseLine(holder) : `${holder.runId} ${holder.holder} ${holder.pid} ${holder.since}`
  const dir = path.replace(/\/[^/]+$/, '')
  const write = ['sh', '-c', 'mkdir -p "$1" && set -C && printf "%s\\n" "$2" > "$3"', 'sh', dir, content, path]
  const first = await runCommand(transport, write, { check: false })
  if (first.code === 0) return content
  const current = await runCommand(transport, ['cat', path], { check: false })
  const [runId = '', who = '', pid = '', since = ''] = current.stdout.trim().split(' ')
  let ours = runId === holder.runId || (options.takeOver ?? []).includes(runId)
  const sameProcess = runId === holder.runId && who === holder.holder && Number(pid) === holder.pid
  if (ours && options.lease && current.code === 0 && !sameProcess) {
    const presence = await holderPresence(transport, path, who, Number(pid))
    if (!presence.gone && policy !== 'break-any')
      throw withFacts(
        new LockedError(
          `Host ${transport.host} is locked by run ${runId} (${who}, pid ${pid}) since ${since}, whose holder is alive: ${presence.why}.`,
          `Let it finish or stop it (svcops runs show ${runId}); once its process is gone (or its lease lapses, ${HOST_LEASE_SECONDS} s after its machine stopped renewing it), svcops resume ${runId} [--rollback] takes the lock over.`,
        ),
        { lockedBy: { runId, holder: who, pid: Number(pid), since, host: transport.host, alive: true } },
      )
    if (!presence.gone)
      ours = false // --break-lock --force: taken below, with its warning
    else events.info(`Taking over the host lock of ${transport.host} from run ${runId}: ${presence.why}.`, transport.host)
  }
  // A leased lock is an environment's (a lock file left is an unfinished run's): `break-finished` does not take it.
  // Without a lease the caller's environment lock has judged the holder already.
  if (!ours && policy === 'break-finished' && options.lease && current.code === 0)
    throw breakRefused(`host ${transport.host} is locked by run ${runId} (${who}, pid ${pid}) since ${since}, which did not finish`, runId)
  if (ours || policy !== 'respect') {
    if (!ours) events.warn(`--break-lock: replacing the host lock of ${transport.host} held by run ${runId}.`, transport.host)
    await runCommand(transport, ['sh', '-c', 'printf "%s\\n" "$1" > "$2"', 'sh', content, path])
    return content
  }
  if (current.code !== 0) throw new OperationError(`The host lock ${path} on ${transport.host} cannot be written: ${first.stderr.trim()}.`)
  throw withFacts(
    new LockedError(
      `Host ${transport.host} is locked by run ${runId} (${who}, pid ${pid}) since ${since}.`,
      `Inspect it with 'svcops runs show ${runId}'; if it is gone, finish it: svcops resume ${runId}   or roll it back: svcops resume ${runId} --rollback`,
    ),
    { lockedBy: { runId, holder: who, pid: Number(pid), since, host: transport.host } },
  )
}

/** Removes a host lock (not leased) if it names run `runId`: the caller proved no other holder could have taken it. */
export async function releaseHostLock(transport: Transport, path: string, runId: string): Promise<void> {
  await runCommand(
    transport,
    ['sh', '-c', 'if [ -f "$1" ] && [ "$(cut -d" " -f1 "$1")" = "$2" ]; then rm -f "$1"; fi', 'sh', path, runId],
    { check: false },
  )
}
