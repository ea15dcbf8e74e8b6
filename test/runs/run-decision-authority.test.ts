/**
 * Promote and abort with authority, on a real PostgreSQL: the store records who decided as the
 * server authenticated them (the inserting session's role, never a name the row carries) and when by
 * its own clock; the run's holder honours a decision only when it was taken after its pause's
 * entry reached the store and names its environment. A row inserted before the pause (the attack
 * of issue 43: "aborted by release-manager@ops-laptop" honoured) is refused with one sentence and
 * forgotten, the run keeps waiting; a row for another environment likewise; a decision taken after
 * the pause by a release-manager role that alone may insert counts, with that role recorded. When
 * the stack names a run key, a decision must also carry its MAC with it: a role that may insert but
 * holds no key cannot decide.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import type { DatabaseConfig } from '../../src/config/schema.ts'
import { collect, type SvcopsEvent } from '../../src/core/events.ts'
import { PostgresCluster, startPostgres } from '../../src/lab/lab-postgres.ts'
import { Journal, type JournalEntry } from '../../src/runs/journal.ts'
import { postgresRunStore } from '../../src/runs/pg-run-store.ts'
import { decisionsOf, localDecision, type Decision, type DecisionSource } from '../../src/runs/run-decision.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'
import type {} from '../support/shared-postgres.ts'

const RUNNER_VARIABLE = 'SVCOPS_TEST_DECISION_RUNNER_PASSWORD'
const MANAGER_VARIABLE = 'SVCOPS_TEST_DECISION_MANAGER_PASSWORD'

let cluster: PostgresCluster
let own = false
const suffix = randomBytes(5).toString('hex')
const runner = `runner_${suffix}`
const manager = `release_manager_${suffix}`
const database = `decisions_${suffix}`

beforeAll(async () => {
  const shared = inject('sharedPostgres')
  own = !shared
  cluster = shared ? new PostgresCluster(shared) : await startPostgres({ fsync: false })
  process.env[RUNNER_VARIABLE] = `runner-${randomBytes(8).toString('hex')}`
  process.env[MANAGER_VARIABLE] = `manager-${randomBytes(8).toString('hex')}`
  await cluster.createDatabase(database, { user: runner, password: process.env[RUNNER_VARIABLE] })
  await cluster.query(`CREATE ROLE ${pg.escapeIdentifier(manager)} LOGIN PASSWORD ${pg.escapeLiteral(process.env[MANAGER_VARIABLE])}`)
}, 120_000)

afterAll(async () => {
  if (!cluster) return
  if (own) return cluster.stop()
  await cluster.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`)
  await cluster.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(manager)}`)
  await cluster.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(runner)}`)
})

const db = (user: string, variable: string): DatabaseConfig => ({
  host: cluster.info.host,
  port: cluster.port,
  name: database,
  user,
  password: { env: variable },
})

/** A statement on the run database as `user` (the runner's role, or a person's), as psql would send it. */
async function asRole(user: string, variable: string, sql: string, values: unknown[] = []): Promise<void> {
  const client = new pg.Client({ host: cluster.info.host, port: cluster.port, database, user, password: process.env[variable] })
  await client.connect()
  try {
    await client.query(sql, values)
  } finally {
    await client.end()
  }
}

/** As docs/operations.md says: only the release manager may decide; the runner's role keeps reading and dismissing. */
async function onlyTheManagerDecides(): Promise<void> {
  await asRole(runner, RUNNER_VARIABLE, `REVOKE INSERT ON svcops.run_decisions FROM ${pg.escapeIdentifier(runner)}`)
  await asRole(runner, RUNNER_VARIABLE, `GRANT USAGE ON SCHEMA svcops TO ${pg.escapeIdentifier(manager)}`)
  await asRole(runner, RUNNER_VARIABLE, `GRANT SELECT, INSERT ON svcops.run_decisions TO ${pg.escapeIdentifier(manager)}`)
}

/** The holder's sentences about decisions, of the events said so far. */
const refusals = (said: { events: SvcopsEvent[] }): string[] =>
  said.events.flatMap((e) => (e.kind === 'warn' && /^The (abort|promote) of /.test(e.message) ? [e.message] : []))

/** What the holder finds in two looks (the second reads the store: it reads it every other look). */
async function look(decisions: DecisionSource): Promise<Decision | undefined> {
  return (await decisions.read()) ?? (await decisions.read())
}

const entry = (step: string, status: JournalEntry['status'] = 'ok'): JournalEntry => ({ time: new Date().toISOString(), step, status })

it('refuses a decision taken before the pause or for another environment, and honours one taken after it, recording the role', async () => {
  const store = postgresRunStore(db(runner, RUNNER_VARIABLE), 'lab')
  const record = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} })
  const all: JournalEntry[] = [entry('preflight'), entry('stop')]
  const said = collect()
  try {
    // The run writes its first steps (which creates the schema, owned by the runner's role).
    await store.write({ record, from: 0, all: [...all] })
    await onlyTheManagerDecides()

    // Before the run pauses, someone who may insert files an abort, naming a person and a time of their choosing.
    await asRole(
      manager,
      MANAGER_VARIABLE,
      `INSERT INTO svcops.run_decisions (run_id, decision, environment, decided_by, decided_at) VALUES ($1, $2, 'lab', 'release-manager@ops-laptop', now() + interval '1 hour')`,
      [
        record.id,
        JSON.stringify({ decision: 'abort', by: 'release-manager@ops-laptop', at: new Date(Date.now() + 3_600_000).toISOString() }),
      ],
    )
    // The runner's own role may not decide any more.
    await expect(
      asRole(runner, RUNNER_VARIABLE, `INSERT INTO svcops.run_decisions (run_id, decision, environment) VALUES ('x', '{}', 'lab')`),
    ).rejects.toThrow(/permission denied/)

    // The run pauses: its pause entry reaches the store, and the holder looks for a decision.
    await new Promise((resolve) => setTimeout(resolve, 20)) // the server's clock moves on past the early row
    all.push(entry('pause', 'start'))
    await store.write({ record: { ...record, pausedAt: new Date().toISOString() }, from: all.length - 1, all: [...all] })
    const journal = Journal.inMemory(record, mkdtempSync(join(tmpdir(), 'svcops-decisions-')), all)
    const decisions = decisionsOf(journal, store, () => undefined) // the stack names no run key
    expect(await look(decisions)).toBeUndefined()
    const early = refusals(said)
    expect(early).toEqual([
      expect.stringMatching(
        new RegExp(`^The abort of .* \\(by ${manager} at \\S+\\) was taken before the run paused .*: refused; the run keeps waiting\\.$`),
      ),
    ])
    expect(early[0]).not.toContain('ops-laptop') // the row's own claim of who decided is not believed
    // Forgotten: the run keeps waiting, and a valid decision can be kept after it.
    expect(await look(decisions)).toBeUndefined()
    expect(refusals(said)).toHaveLength(1)

    // A decision for another environment, taken while the run waits, is refused too.
    await asRole(manager, MANAGER_VARIABLE, `INSERT INTO svcops.run_decisions (run_id, decision, environment) VALUES ($1, $2, 'staging')`, [
      record.id,
      JSON.stringify({ decision: 'promote' }),
    ])
    expect(await look(decisions)).toBeUndefined()
    expect(refusals(said).at(-1)).toMatch(
      /^The promote of .* is for environment 'staging'; expected 'lab', the run's: refused; the run keeps waiting\.$/,
    )

    // The release manager promotes through svcops: the store records the role, and the holder goes on.
    const byManager = postgresRunStore(db(manager, MANAGER_VARIABLE), 'lab')
    try {
      const kept = await byManager.decide?.(record.id, { decision: 'promote', by: 'anyone@anywhere', at: '2000-01-01T00:00:00Z' })
      expect(kept).toMatchObject({ first: true, kept: { decision: 'promote', by: manager, environment: 'lab', identity: 'database role' } })
    } finally {
      await byManager.close()
    }
    expect(await look(decisions)).toMatchObject({ decision: 'promote', by: manager, environment: 'lab', afterPause: true })
  } finally {
    said.stop()
    await store.close()
  }
}, 120_000)

it('with a run key, honours only a decision that carries its MAC, whoever may insert', async () => {
  const store = postgresRunStore(db(runner, RUNNER_VARIABLE), 'lab')
  const record = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} })
  const all: JournalEntry[] = [entry('preflight'), entry('pause', 'start')]
  const key = randomBytes(32)
  const said = collect()
  try {
    await store.write({ record: { ...record, pausedAt: new Date().toISOString() }, from: 0, all: [...all] })
    await onlyTheManagerDecides()
    const decisions = decisionsOf(Journal.inMemory(record, mkdtempSync(join(tmpdir(), 'svcops-decisions-')), all), store, () => key)
    // Who may insert but holds no key (or another key) cannot decide: refused, forgotten, the run waits.
    for (const wrong of [undefined, randomBytes(32)]) {
      const byManager = postgresRunStore(db(manager, MANAGER_VARIABLE), 'lab')
      try {
        const kept = await byManager.decide?.(record.id, localDecision('abort', 'lab', record.id, wrong))
        expect(kept?.first).toBe(true)
      } finally {
        await byManager.close()
      }
      expect(await look(decisions)).toBeUndefined()
      expect(refusals(said).at(-1)).toMatch(
        new RegExp(
          `^The abort of .* \\(by ${manager} at \\S+\\) carries no valid MAC of the run key .*: refused; the run keeps waiting\\.$`,
        ),
      )
    }
    // A MAC made for another run does not pass for this one.
    const other = postgresRunStore(db(manager, MANAGER_VARIABLE), 'lab')
    try {
      const forOther = localDecision('abort', 'lab', 'another-run', key)
      await other.decide?.(record.id, forOther)
    } finally {
      await other.close()
    }
    expect(await look(decisions)).toBeUndefined()
    expect(refusals(said)).toHaveLength(3)

    // Who holds the key decides.
    const byManager = postgresRunStore(db(manager, MANAGER_VARIABLE), 'lab')
    try {
      await byManager.decide?.(record.id, localDecision('promote', 'lab', record.id, key))
    } finally {
      await byManager.close()
    }
    expect(await look(decisions)).toMatchObject({ decision: 'promote', by: manager, environment: 'lab', afterPause: true })
  } finally {
    said.stop()
    await store.close()
  }
}, 120_000)
