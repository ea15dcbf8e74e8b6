/**
 * The recording service's run store on a real PostgreSQL: a run's writes go through one session
 * named `svcops-run-store` (the engine waits for the copy at each step boundary, so a new session per
 * write was on every step's path); a session the server ends between writes is replaced and the
 * copy stays whole; `close()` ends the session, so the CLI exits after the run.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import { PostgresCluster, startPostgres } from '../../src/lab/lab-postgres.ts'
import type { JournalEntry } from '../../src/runs/journal.ts'
import { RUN_STORE_APPLICATION, postgresRunStore } from '../../src/runs/pg-run-store.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'
import type {} from '../support/shared-postgres.ts'

const PASSWORD_VARIABLE = 'SVCOPS_TEST_RUN_STORE_PASSWORD'

let cluster: PostgresCluster
let own = false
const suffix = randomBytes(5).toString('hex')
const user = `runner_${suffix}`
const database = `runs_${suffix}`

beforeAll(async () => {
  const shared = inject('sharedPostgres')
  own = !shared
  cluster = shared ? new PostgresCluster(shared) : await startPostgres({ fsync: false })
  process.env[PASSWORD_VARIABLE] = `run-store-${randomBytes(8).toString('hex')}`
  await cluster.createDatabase(database, { user, password: process.env[PASSWORD_VARIABLE] })
}, 120_000)

afterAll(async () => {
  if (!cluster) return
  if (own) return cluster.stop()
  await cluster.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`)
  await cluster.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(user)}`)
})

/** The backends of the store's sessions on the run database. */
async function storeSessions(): Promise<number[]> {
  const rows = await cluster.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 ORDER BY pid`,
    [database, RUN_STORE_APPLICATION],
  )
  return rows.map((r) => r.pid)
}

/** Waits until the store has no session left (a backend leaves pg_stat_activity once it has exited). */
async function sessionsGone(): Promise<number[]> {
  for (let i = 0; i < 100; i++) {
    const left = await storeSessions()
    if (left.length === 0) return left
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return storeSessions()
}

function entry(step: string): JournalEntry {
  return { time: new Date().toISOString(), step, status: 'ok' }
}

it('writes a run on one session, replaces it when the server ends it, keeps the copy whole, and ends it on close', async () => {
  const store = postgresRunStore(
    { host: cluster.info.host, port: cluster.port, name: database, user, password: { env: PASSWORD_VARIABLE } },
    'test',
  )
  const record = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'test', envFile: '/dev/null', params: {} })
  const all: JournalEntry[] = []
  try {
    all.push(entry('preflight'))
    await store.write({ record, from: 0, all: [...all] })
    const [first, ...others] = await storeSessions()
    expect(first).toBeDefined()
    expect(others).toEqual([])

    for (const step of ['backup', 'stop', 'install']) {
      all.push(entry(step))
      await store.write({ record, from: all.length - 1, all: [...all] })
    }
    expect(await storeSessions()).toEqual([first])

    // The server ends the idle session (an administrator, a restart, a network cut): the next write opens another.
    await cluster.query('SELECT pg_terminate_backend($1)', [first])
    expect(await sessionsGone()).toEqual([])
    all.push(entry('start'))
    await store.write({ record: { ...record, phase: 'succeeded' }, from: all.length - 1, all: [...all] })
    const after = await storeSessions()
    expect(after).toHaveLength(1)
    expect(after).not.toContain(first)

    const stored = await store.readRun(record.id)
    expect(stored?.record.phase).toBe('succeeded')
    expect(stored?.entries.map((e) => e.step)).toEqual(['preflight', 'backup', 'stop', 'install', 'start'])
  } finally {
    await store.close()
  }
  expect(await sessionsGone()).toEqual([])
  // A write after the run's end is refused, and opens nothing.
  await expect(store.write({ record, from: all.length, all })).rejects.toThrow(/is closed/)
  expect(await storeSessions()).toEqual([])
}, 120_000)
