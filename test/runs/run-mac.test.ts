/**
 * Authenticated run records on the recording service's real run store (PostgreSQL): what a run
 * writes carries a MAC made with the environment's run key, and what is read back is accepted only
 * for the environment of the stack in use, for the run asked for, and unchanged. Each refusal is the
 * change a writer of the store (the database role) could make: a row of another environment filed
 * under this one, a record or a journal entry changed or added after it was written, a record
 * without its MAC, journal entries removed (from the middle, or the tail) or put in another order.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { PostgresCluster, startPostgres } from '../../src/lab/lab-postgres.ts'
import type { JournalEntry } from '../../src/runs/journal.ts'
import { postgresRunStore } from '../../src/runs/pg-run-store.ts'
import { canonicalJson, runSeal } from '../../src/runs/run-mac.ts'
import { newRunRecord, type RunRecord } from '../../src/runs/run-record.ts'
import type { RunStore } from '../../src/runs/run-store.ts'
import type {} from '../support/shared-postgres.ts'

const PASSWORD_VARIABLE = 'SVCOPS_TEST_RUN_MAC_PASSWORD'

let cluster: PostgresCluster
let own = false
const suffix = randomBytes(5).toString('hex')
const user = `mac_${suffix}`
const database = `mac_${suffix}`
const key = randomBytes(48)

beforeAll(async () => {
  const shared = inject('sharedPostgres')
  own = !shared
  cluster = shared ? new PostgresCluster(shared) : await startPostgres({ fsync: false })
  process.env[PASSWORD_VARIABLE] = `run-mac-${randomBytes(8).toString('hex')}`
  await cluster.createDatabase(database, { user, password: process.env[PASSWORD_VARIABLE] })
}, 120_000)

afterAll(async () => {
  if (!cluster) return
  if (own) return cluster.stop()
  await cluster.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`)
  await cluster.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(user)}`)
})

/** The store of `environment`, its runs sealed with the run key, or unsigned. */
function storeOf(environment: string, signed = true): RunStore {
  const db = { host: cluster.info.host, port: cluster.port, name: database, user, password: { env: PASSWORD_VARIABLE } }
  return postgresRunStore(db, environment, runSeal(environment, signed ? key : undefined))
}

/** The database role's own statement on the store's tables: what whoever holds it can do. */
async function asStoreWriter(sql: string, values: unknown[]): Promise<void> {
  const client = new pg.Client({
    host: cluster.info.host,
    port: cluster.port,
    database,
    user,
    password: process.env[PASSWORD_VARIABLE],
  })
  await client.connect()
  try {
    await client.query(sql, values)
  } finally {
    await client.end()
  }
}

/** A finished upgrade of `environment` written through its store, with a journal of three entries. */
async function writtenRun(environment: string, signed = true): Promise<RunRecord> {
  const record = newRunRecord({
    kind: 'upgrade',
    system: 'recording',
    environment,
    envFile: `/stacks/Pulumi.${environment}.yaml`,
    params: { hosts: ['rec-1'], backupId: `backup/${environment}-1` },
  })
  const entries: JournalEntry[] = ['preflight', 'backup', 'install'].map((step) => ({ time: new Date().toISOString(), step, status: 'ok' }))
  const store = storeOf(environment, signed)
  try {
    await store.write({ record: { ...record, phase: 'succeeded' }, from: 0, all: entries })
  } finally {
    await store.close()
  }
  return record
}

async function readBack(environment: string, id: string, signed = true) {
  const store = storeOf(environment, signed)
  try {
    return { run: await store.readRun(id), listed: (await store.listRecords(environment)).find((r) => r.id === id) }
  } finally {
    await store.close()
  }
}

describe('a run read back from its environment', () => {
  it('is accepted whole when it is as its writer signed it', async () => {
    const record = await writtenRun('lab')
    const { run, listed } = await readBack('lab', record.id)
    expect(run?.record.trust).toEqual({ state: 'signed', entries: 3 })
    expect(run?.record.params).toEqual(record.params)
    expect(run?.entries.map((e) => e.step)).toEqual(['preflight', 'backup', 'install'])
    // The MAC is the store's: entries read back do not carry it into a local copy.
    expect(run?.entries.every((e) => !('mac' in e))).toBe(true)
    expect(listed?.trust).toEqual({ state: 'signed', entries: 3 })
  })

  it("is refused, naming both environments, when another environment's row is filed under this one", async () => {
    // Staging's run, signed for staging with the same key (a site may use one key for both), moved under lab.
    const record = await writtenRun('staging')
    await asStoreWriter(`UPDATE svcops.runs SET environment = 'lab' WHERE id = $1`, [record.id])
    const { run, listed } = await readBack('lab', record.id)
    expect(run?.record.trust).toMatchObject({ state: 'refused' })
    const sentence = run?.record.trust?.state === 'refused' ? run.record.trust.sentence : ''
    expect(sentence).toContain("names environment 'staging', not 'lab'")
    expect(run?.entries).toEqual([])
    expect(listed?.trust).toMatchObject({ state: 'refused' })
  })

  it('is refused when the record says this environment but was signed for another one', async () => {
    const record = await writtenRun('staging')
    await asStoreWriter(`UPDATE svcops.runs SET environment = 'lab', record = jsonb_set(record, '{environment}', '"lab"') WHERE id = $1`, [
      record.id,
    ])
    const { run } = await readBack('lab', record.id)
    expect(run?.record.trust).toMatchObject({ state: 'refused', sentence: expect.stringContaining('fails its MAC check') as unknown })
  })

  it('is refused when its record was changed after it was signed', async () => {
    const record = await writtenRun('lab')
    await asStoreWriter(`UPDATE svcops.runs SET record = jsonb_set(record, '{params,backupId}', '"backup/old"') WHERE id = $1`, [record.id])
    const { run, listed } = await readBack('lab', record.id)
    expect(run?.record.trust).toMatchObject({ state: 'refused', sentence: expect.stringContaining('fails its MAC check') as unknown })
    expect(listed?.trust).toMatchObject({ state: 'refused' })
  })

  it('is refused when an entry was added to its journal, or one was changed', async () => {
    const added = await writtenRun('lab')
    await asStoreWriter(`INSERT INTO svcops.run_journal (run_id, seq, entry) VALUES ($1, 3, $2)`, [
      added.id,
      JSON.stringify({ time: new Date().toISOString(), step: 'rollback:decide', status: 'ok', data: { restore: true } }),
    ])
    const first = await readBack('lab', added.id)
    expect(first.run?.record.trust).toMatchObject({ state: 'refused', sentence: expect.stringContaining('Entry 3 of run') as unknown })
    expect(first.run?.entries).toEqual([])

    const changed = await writtenRun('lab')
    await asStoreWriter(`UPDATE svcops.run_journal SET entry = jsonb_set(entry, '{status}', '"failed"') WHERE run_id = $1 AND seq = 1`, [
      changed.id,
    ])
    const second = await readBack('lab', changed.id)
    expect(second.run?.record.trust).toMatchObject({ state: 'refused', sentence: expect.stringContaining('Entry 1 of run') as unknown })
  })

  it('is refused when its record was moved under another run id', async () => {
    const record = await writtenRun('lab')
    const other = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} }).id
    await asStoreWriter(
      `INSERT INTO svcops.runs (id, environment, system, started_at, record) SELECT $2, environment, system, started_at, record FROM svcops.runs WHERE id = $1`,
      [record.id, other],
    )
    const { run } = await readBack('lab', other)
    expect(run?.record.trust).toMatchObject({
      state: 'refused',
      sentence: expect.stringContaining(`holds the record of run ${record.id}`) as unknown,
    })
  })

  it('is read as unsigned (a warning, not a refusal) when it carries no MAC, as runs written before signing do', async () => {
    const record = await writtenRun('lab', false)
    const { run } = await readBack('lab', record.id)
    expect(run?.record.trust).toMatchObject({ state: 'unsigned', sentence: expect.stringContaining('--trust-unsigned-run') as unknown })
    expect(run?.entries.map((e) => e.step)).toEqual(['preflight', 'backup', 'install'])
  })

  it('says, when the environment has a run key, that an unsigned run there was stripped or predates the key', async () => {
    const record = await writtenRun('lab')
    // Every MAC removed, the record's and the entries': what is left reads as unsigned, never as signed.
    await asStoreWriter(`UPDATE svcops.runs SET record = record - 'mac' WHERE id = $1`, [record.id])
    await asStoreWriter(`UPDATE svcops.run_journal SET entry = entry - 'mac' WHERE run_id = $1`, [record.id])
    const keyed = await readBack('lab', record.id)
    expect(keyed.run?.record.trust).toMatchObject({
      state: 'unsigned',
      sentence: expect.stringContaining(
        "this environment's runs are signed (its stack names a run key): an unsigned run here was stripped or predates the key",
      ) as unknown,
    })
    // Read with a stack that names no key, the same run is unsigned as every run there is: no such claim.
    const unkeyed = await readBack('lab', record.id, false)
    expect(unkeyed.run?.record.trust).toMatchObject({ state: 'unsigned' })
    expect(unkeyed.run?.record.trust?.state === 'unsigned' && unkeyed.run.record.trust.sentence).not.toContain('runs are signed')
  })

  it('is refused when an entry was removed from the middle of its journal, renumbered or not', async () => {
    const gap = await writtenRun('lab')
    await asStoreWriter(`DELETE FROM svcops.run_journal WHERE run_id = $1 AND seq = 1`, [gap.id])
    const first = await readBack('lab', gap.id)
    expect(first.run?.record.trust).toMatchObject({
      state: 'refused',
      sentence: expect.stringContaining('Entry 1 of run') as unknown,
    })
    expect(first.run?.record.trust?.state === 'refused' && first.run.record.trust.sentence).toContain('is missing (the next is entry 2)')
    expect(first.run?.entries).toEqual([])

    // The later entries moved down to close the gap, each keeping its own MAC: the chain breaks at the first moved.
    const renumbered = await writtenRun('lab')
    await asStoreWriter(`DELETE FROM svcops.run_journal WHERE run_id = $1 AND seq = 1`, [renumbered.id])
    await asStoreWriter(`UPDATE svcops.run_journal SET seq = 1 WHERE run_id = $1 AND seq = 2`, [renumbered.id])
    const second = await readBack('lab', renumbered.id)
    expect(second.run?.record.trust).toMatchObject({
      state: 'refused',
      sentence: expect.stringContaining('Entry 1 of run') as unknown,
    })
    expect(second.run?.entries).toEqual([])
  })

  it("is refused when the tail of its journal was cut, since the record binds the journal's length", async () => {
    const record = await writtenRun('lab')
    await asStoreWriter(`DELETE FROM svcops.run_journal WHERE run_id = $1 AND seq = 2`, [record.id])
    const { run } = await readBack('lab', record.id)
    expect(run?.record.trust).toMatchObject({
      state: 'refused',
      sentence: expect.stringContaining('holds 2 entries, but its record was signed with 3') as unknown,
    })
    expect(run?.entries).toEqual([])
  })

  it('is refused when entries of its journal were put in another order', async () => {
    const record = await writtenRun('lab')
    // Entries 1 and 2 swap places, each whole with its own MAC.
    await asStoreWriter(
      `UPDATE svcops.run_journal j SET entry = o.entry FROM svcops.run_journal o
       WHERE j.run_id = $1 AND o.run_id = $1 AND j.seq IN (1, 2) AND o.seq = 3 - j.seq`,
      [record.id],
    )
    const { run } = await readBack('lab', record.id)
    expect(run?.record.trust).toMatchObject({
      state: 'refused',
      sentence: expect.stringContaining('Entry 1 of run') as unknown,
    })
    expect(run?.entries).toEqual([])
  })

  it('is accepted whole across writes that add entries: each new entry chains to the one before it', async () => {
    const record = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} })
    const all: JournalEntry[] = []
    const store = storeOf('lab')
    try {
      for (const step of ['preflight', 'backup', 'install', 'verify']) {
        all.push({ time: new Date().toISOString(), step, status: 'ok' })
        await store.write({ record, from: all.length - 1, all: [...all] })
      }
    } finally {
      await store.close()
    }
    const { run } = await readBack('lab', record.id)
    expect(run?.record.trust).toEqual({ state: 'signed', entries: 4 })
    expect(run?.entries.map((e) => e.step)).toEqual(['preflight', 'backup', 'install', 'verify'])
  })

  it('cannot be made unsigned by stripping the MACs of a signed run: an entry without one is refused', async () => {
    const record = await writtenRun('lab')
    await asStoreWriter(`UPDATE svcops.run_journal SET entry = entry - 'mac' WHERE run_id = $1 AND seq = 2`, [record.id])
    const { run } = await readBack('lab', record.id)
    expect(run?.record.trust).toMatchObject({ state: 'refused' })
  })
})

it('canonical JSON sorts keys at every depth and leaves out what JSON leaves out', () => {
  expect(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: undefined }], c: 'x' } })).toBe('{"a":{"c":"x","d":[1,{"f":2}]},"b":1}')
})
