/**
 * Promote and abort with authority, on a real PostgreSQL: the store records who decided as the
 * server authenticated them (the inserting session's role, never a name the row carries) and when by
 * its own clock; the run's holder honours a decision only when it was taken after its pause's
 * entry reached the store and names its environment. A row inserted before the pause (the attack
 * of issue 43: "aborted by release-manager@ops-laptop" honoured) is refused with one sentence and
 * forgotten, the run keeps waiting; a row for another environment likewise; a decision taken after
 * the pause by a release-manager role that alone may insert counts, with that role recorded. When
 * the stack names a run key, a decision must also carry its MAC with it: a role that may insert but
 * holds no key cannot decide, and a decision answers only the pause it was made for: one kept for an
 * earlier pause (or one a forged record claimed) and put back after the real one is refused, and so
 * is one sealed before the pause began.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import type { DatabaseConfig, Environment } from '../../src/config/schema.ts'
import { runSystems, useRunSystems } from '../../src/edge/run-systems.ts'
import { decideRun } from '../../src/runs/run-promotion.ts'
import { collect, type SvcopsEvent } from '../../src/core/events.ts'
import { PostgresCluster, startPostgres } from '../../src/lab/lab-postgres.ts'
import { Journal, type JournalEntry } from '../../src/runs/journal.ts'
import { postgresRunStore } from '../../src/runs/pg-run-store.ts'
import { runSealOf } from '../../src/runs/run-mac.ts'
import { decisionMac, decisionsOf, localDecision, openPause, type Decision, type DecisionSource } from '../../src/runs/run-decision.ts'
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
      await byManager.decide?.(record.id, localDecision('promote', 'lab', record.id, key, openPause(all)))
    } finally {
      await byManager.close()
    }
    expect(await look(decisions)).toMatchObject({ decision: 'promote', by: manager, environment: 'lab', afterPause: true })
  } finally {
    said.stop()
    await store.close()
  }
}, 120_000)

it('with a run key, a decision answers only the pause it was sealed for: a replay after a later pause, or a seal older than the pause, is refused', async () => {
  const store = postgresRunStore(db(runner, RUNNER_VARIABLE), 'lab')
  const record = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} })
  const key = randomBytes(32)
  const all: JournalEntry[] = [entry('preflight'), entry('pause', 'start')]
  const said = collect()
  try {
    await store.write({ record: { ...record, pausedAt: new Date().toISOString() }, from: 0, all: [...all] })
    await onlyTheManagerDecides()
    // A key holder aborts while the run shows its first pause; the row's JSON is saved by whoever may read the table.
    const earlier = localDecision('abort', 'lab', record.id, key, openPause(all))
    // That pause ends (the run was interrupted while it waited) and a later one begins, after the abort was taken.
    await new Promise((resolve) => setTimeout(resolve, 20))
    all.push(entry('pause', 'skipped'), entry('pause', 'start'))
    await store.write({ record: { ...record, pausedAt: new Date().toISOString() }, from: 2, all: [...all] })
    const decisions = decisionsOf(Journal.inMemory(record, mkdtempSync(join(tmpdir(), 'svcops-decisions-')), all), store, () => key)

    // The saved abort is inserted again after the later pause: the store's clock says it came after, but its MAC answers pause 1.
    const replay = postgresRunStore(db(manager, MANAGER_VARIABLE), 'lab')
    try {
      expect((await replay.decide?.(record.id, earlier))?.first).toBe(true)
    } finally {
      await replay.close()
    }
    expect(await look(decisions)).toBeUndefined()
    expect(refusals(said).at(-1)).toMatch(
      /^The abort of .* carries no valid MAC of the run key .* for this run's pause \(entry 3\); only who holds it may decide, and only for the pause it answers: refused; the run keeps waiting\.$/,
    )

    // A seal bound to the open pause but made before it began (a decider's clock, or a MAC made ahead of time) answers none.
    const pause = openPause(all)
    const before = new Date(Date.parse(pause?.time ?? '') - 60_000).toISOString()
    const early = postgresRunStore(db(manager, MANAGER_VARIABLE), 'lab')
    try {
      const sealed: Decision = {
        ...localDecision('abort', 'lab'),
        seal: { at: before, mac: decisionMac(key, record.id, 'lab', 'abort', before, pause) },
      }
      expect((await early.decide?.(record.id, sealed))?.first).toBe(true)
    } finally {
      await early.close()
    }
    expect(await look(decisions)).toBeUndefined()
    expect(refusals(said).at(-1)).toMatch(
      new RegExp(
        `^The abort of .* was sealed at ${before.replace(/\./g, '\\.')}, before the run paused .*: refused; the run keeps waiting\\.$`,
      ),
    )
    expect(refusals(said)).toHaveLength(2)

    // Made for the open pause, by the key holder, it counts.
    const now = postgresRunStore(db(manager, MANAGER_VARIABLE), 'lab')
    try {
      await now.decide?.(record.id, localDecision('abort', 'lab', record.id, key, pause))
    } finally {
      await now.close()
    }
    expect(await look(decisions)).toMatchObject({ decision: 'abort', by: manager, environment: 'lab', afterPause: true })
  } finally {
    said.stop()
    await store.close()
  }
}, 120_000)

it('runs promote|abort refuses a run its environment refuses, and an unsigned one where the stack names a run key unless trusted', async () => {
  const KEY_VARIABLE = 'SVCOPS_TEST_DECISION_RUN_KEY'
  process.env[KEY_VARIABLE] = randomBytes(32).toString('hex')
  // The stack of another machine: the environment's store, and (keyed) its run key.
  const stackOf = (keyed: boolean) =>
    ({
      name: 'lab',
      file: '/dev/null',
      recording: { database: db(manager, MANAGER_VARIABLE) },
      ...(keyed ? { runs: { key: { env: KEY_VARIABLE } } } : {}),
    }) as unknown as Environment
  const unwire = await useRunSystems()
  const systems = await runSystems()
  const base = mkdtempSync(join(tmpdir(), 'svcops-decider-'))
  try {
    // A paused run written unsigned (the MACs stripped, or from before the key): its pause is not to be believed.
    const unsigned = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} })
    const writer = postgresRunStore(db(runner, RUNNER_VARIABLE), 'lab')
    try {
      await writer.write({
        record: { ...unsigned, pausedAt: new Date().toISOString() },
        from: 0,
        all: [entry('preflight'), entry('pause', 'start')],
      })
    } finally {
      await writer.close()
    }
    // The release manager decides (docs/operations.md, "Who may decide"): they may see the runs and insert decisions.
    await onlyTheManagerDecides()
    await asRole(runner, RUNNER_VARIABLE, `GRANT SELECT ON svcops.runs, svcops.run_journal TO ${pg.escapeIdentifier(manager)}`)
    await expect(decideRun(unsigned.id, 'abort', stackOf(true), { systems, base })).rejects.toThrow(
      /this environment's runs are signed .*: an unsigned run here was stripped or predates the key/,
    )
    // Nothing was kept: the run has no decision.
    const reader = postgresRunStore(db(runner, RUNNER_VARIABLE), 'lab')
    try {
      expect(await reader.readDecision?.(unsigned.id)).toBeUndefined()
    } finally {
      await reader.close()
    }
    // The same run from a stack with a run key, once changed after it was signed: refused, even on --trust-unsigned-run.
    const signed = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} })
    const keyedWriter = postgresRunStore(db(runner, RUNNER_VARIABLE), 'lab', runSealOf(stackOf(true)))
    try {
      await keyedWriter.write({
        record: { ...signed, pausedAt: new Date().toISOString() },
        from: 0,
        all: [entry('preflight'), entry('pause', 'start')],
      })
    } finally {
      await keyedWriter.close()
    }
    await asRole(runner, RUNNER_VARIABLE, `UPDATE svcops.runs SET record = jsonb_set(record, '{holder}', '"someone@else"') WHERE id = $1`, [
      signed.id,
    ])
    await expect(decideRun(signed.id, 'abort', stackOf(true), { systems, base, trustUnsigned: true })).rejects.toThrow(
      /fails its MAC check/,
    )
    // On the operator's word (--trust-unsigned-run) the unsigned run is decided for, the decision sealed for its pause.
    const trusted = await decideRun(unsigned.id, 'abort', stackOf(true), { systems, base, trustUnsigned: true })
    expect(trusted.decision).toMatchObject({
      decision: 'abort',
      environment: 'lab',
      seal: { mac: expect.stringMatching(/^hmac-sha256:/) as unknown },
    })
    // Where the stack names no run key every run is unsigned: the store's role decides without the flag.
    const unkeyed = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} })
    const plain = postgresRunStore(db(runner, RUNNER_VARIABLE), 'lab')
    try {
      await plain.write({ record: { ...unkeyed, pausedAt: new Date().toISOString() }, from: 0, all: [entry('pause', 'start')] })
    } finally {
      await plain.close()
    }
    expect((await decideRun(unkeyed.id, 'promote', stackOf(false), { systems, base })).decision).toMatchObject({ decision: 'promote' })
  } finally {
    unwire()
  }
}, 120_000)
