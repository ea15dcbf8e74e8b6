/**
 * The recording service's run store: tables in the `svcops` schema of the environment's PostgreSQL,
 * beside the run lock (lock.ts) — every machine that can run the service's upgrades reaches it, and
 * backups exclude the schema, so a restore neither drops nor rewinds it (src/backup).
 *
 *   svcops.runs         one row per run: its record (jsonb), environment, system, start
 *   svcops.run_journal  one row per journal entry: run id, index, entry (jsonb); written once
 *   svcops.run_decisions  a person's decision for a run waiting after its canary (run-decision.ts); the first counts
 *
 * Who decided and when are the server's to say: a trigger sets `decided_by` to the inserting
 * session's `current_user` and `decided_at` to the server's clock on every insert and update, so a
 * row cannot name another role or an earlier time; each journal row's `written_at` is the server's
 * clock too, so the holder asks the server whether a decision came after its pause's entry. Who
 * may decide is whoever may INSERT into svcops.run_decisions (docs/operations.md, "Who may decide"),
 * and, when the stack names a run key, holds it: the row's JSON keeps the decider's MAC.
 *
 * A run's writes share one session (opened at the first write, opened again after a failure, ended
 * by `close()` at the run's end): the engine waits for the copy at every step boundary, and a new
 * session per write (a backend fork and an authentication) was most of that wait. Reads, decisions
 * and removals are one short session each. Every session is named `svcops-run-store` (for people
 * reading pg_stat_activity) and its backend pid is remembered (drivers/postgres-sessions.ts): a
 * restore by this process does not count it as the service's (src/backup/restore.ts), while a
 * stranger that takes the name does. It holds no lock between writes.
 * The rights it needs: CREATE on the database (to create the schema) or a pre-created `svcops`
 * schema the role may create tables in (docs/deploy.md).
 */
import type pg from 'pg'
import type { DatabaseConfig } from '../config/schema.ts'
import { OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { SVCOPS_SCHEMA, connectDatabase, databaseTarget } from '../drivers/postgres.ts'
import { rememberOwnSession } from '../drivers/postgres-sessions.ts'
import { parseStoredDecision } from './run-decision.ts'
import { readEnvironmentLock } from './lock.ts'
import type { LockState } from './run-presence.ts'
import { openedRun, runSeal, type RunSeal } from './run-mac.ts'
import type { RunRecord } from './run-record.ts'
import type { RunStore, RunWrite, StoredDecision, StoredRun } from './run-store.ts'

/** The application name of the store's sessions: what people see in pg_stat_activity, never how svcops knows its own. */
export const RUN_STORE_APPLICATION = 'svcops-run-store'

const SCHEMA = [
  `CREATE SCHEMA IF NOT EXISTS ${SVCOPS_SCHEMA}`,
  `CREATE TABLE IF NOT EXISTS ${SVCOPS_SCHEMA}.runs (id text PRIMARY KEY, environment text NOT NULL, system text NOT NULL, started_at timestamptz NOT NULL, record jsonb NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`,
  `CREATE TABLE IF NOT EXISTS ${SVCOPS_SCHEMA}.run_journal (run_id text NOT NULL, seq integer NOT NULL, entry jsonb NOT NULL, PRIMARY KEY (run_id, seq))`,
  `CREATE TABLE IF NOT EXISTS ${SVCOPS_SCHEMA}.run_decisions (run_id text PRIMARY KEY, decision jsonb NOT NULL, decided_at timestamptz NOT NULL DEFAULT now())`,
  // The columns and trigger of decisions with authority, added to tables made before them. Each
  // only when missing: an administrator may have made them, owned by another role (docs/operations.md).
  `DO $$ BEGIN
     IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${SVCOPS_SCHEMA}.run_journal'::regclass AND attname = 'written_at' AND NOT attisdropped) THEN
       ALTER TABLE ${SVCOPS_SCHEMA}.run_journal ADD COLUMN written_at timestamptz;
       ALTER TABLE ${SVCOPS_SCHEMA}.run_journal ALTER COLUMN written_at SET DEFAULT now();
     END IF;
     IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${SVCOPS_SCHEMA}.run_decisions'::regclass AND attname = 'decided_by' AND NOT attisdropped) THEN
       ALTER TABLE ${SVCOPS_SCHEMA}.run_decisions ADD COLUMN decided_by text, ADD COLUMN environment text;
     END IF;
     IF to_regprocedure('${SVCOPS_SCHEMA}.run_decision_identity()') IS NULL THEN
       CREATE FUNCTION ${SVCOPS_SCHEMA}.run_decision_identity() RETURNS trigger LANGUAGE plpgsql AS $f$
         BEGIN NEW.decided_by := current_user; NEW.decided_at := now(); RETURN NEW; END $f$;
     END IF;
     IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = '${SVCOPS_SCHEMA}.run_decisions'::regclass AND tgname = 'run_decision_identity') THEN
       CREATE TRIGGER run_decision_identity BEFORE INSERT OR UPDATE ON ${SVCOPS_SCHEMA}.run_decisions
         FOR EACH ROW EXECUTE FUNCTION ${SVCOPS_SCHEMA}.run_decision_identity();
     END IF;
   END $$`,
]

/** A decision row's columns, the times as the server's text to the microsecond (a dismissal names the row by it). */
const DECISION_COLUMNS = `decision, decided_by, environment, to_char(decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS decided_at`

interface DecisionRow {
  decision: unknown
  decided_by: string | null
  environment: string | null
  decided_at: string
  after_pause?: boolean | null
}

/** Runs are listed from the newest; older ones stay in the table but a listing reads at most this many. */
const LIST_LIMIT = 500

/** The run store in the `svcops` schema of the database `db` (the environment `environment`'s). */
export function postgresRunStore(db: DatabaseConfig, environment: string, seal: RunSeal = runSeal(environment, undefined)): RunStore {
  const where = `the ${SVCOPS_SCHEMA} schema of ${db.name} at ${db.host}:${db.port}`
  let ready = false

  /** Opens a session named as the store's, with the schema created once per process when `create`. */
  async function open(create: boolean): Promise<pg.Client> {
    const client = await connectDatabase(databaseTarget(db))
    try {
      // The name shows who is connected; the backend pid is what a restore leaves out (a name any client may take).
      const pid = (
        await client.query<{ pid: number }>('SELECT set_config($1, $2, false), pg_backend_pid() AS pid', [
          'application_name',
          RUN_STORE_APPLICATION,
        ])
      ).rows[0]?.pid
      await rememberOwnSession(client, db, pid)
      if (create && !ready) {
        for (const statement of SCHEMA) await client.query(statement)
        ready = true
      }
      return client
    } catch (error) {
      await client.end().catch(() => undefined)
      throw error
    }
  }

  async function session<T>(fn: (client: pg.Client) => Promise<T>, create: boolean): Promise<T> {
    const client = await open(create)
    try {
      return await fn(client)
    } finally {
      // A session that fails to close has nothing left to lose: its work is committed or rolled back.
      await client.end().catch(() => undefined)
    }
  }

  // The run's writing session, and the writes queued on it (one at a time: a write that fails replaces the session under it).
  let writer: pg.Client | undefined
  let writes: Promise<unknown> = Promise.resolve()
  let closed = false

  /** The writing session, opened when there is none; `fresh` says whether it was just opened. */
  async function writingSession(): Promise<{ client: pg.Client; fresh: boolean }> {
    if (writer) return { client: writer, fresh: false }
    if (closed) throw new OperationError(`The run's store in ${where} is closed; nothing more is written to it.`)
    const client = await open(true)
    if (closed) {
      // Closed while this session was opening: the run has ended, the write is not made.
      await client.end().catch(() => undefined)
      throw new OperationError(`The run's store in ${where} is closed; nothing more is written to it.`)
    }
    // An idle session the server or the network ends emits 'error' (unhandled, it would end the
    // process): it is dropped, and the next write opens another.
    client.on('error', () => {
      if (writer === client) writer = undefined
    })
    writer = client
    return { client, fresh: true }
  }

  function dropWriter(client: pg.Client): void {
    if (writer === client) writer = undefined
    // A statement under way fails with it (and is not committed); the write is retried whole.
    void client.end().catch(() => undefined)
  }

  /** The record and the new entries in one statement (atomic by itself): one round trip per write. */
  async function writeOn(c: pg.Client, { record, from, all }: RunWrite): Promise<void> {
    await c.query(
      `WITH run AS (
         INSERT INTO ${SVCOPS_SCHEMA}.runs (id, environment, system, started_at, record, updated_at) VALUES ($1, $2, $3, $4, $5, now())
         ON CONFLICT (id) DO UPDATE SET record = $5, updated_at = now()
       )
       INSERT INTO ${SVCOPS_SCHEMA}.run_journal (run_id, seq, entry)
       SELECT $1, $6::integer + n - 1, e FROM unnest($7::jsonb[]) WITH ORDINALITY AS t(e, n)
       ON CONFLICT (run_id, seq) DO NOTHING`,
      [
        record.id,
        record.environment,
        record.system,
        record.startedAt,
        // The record binds the journal's length: written with it in this statement, a journal read back shorter is refused.
        JSON.stringify(seal.sealRecord(record, all.length)),
        from,
        // Sealed from the first entry: each new entry's MAC chains to the one before it.
        seal
          .sealJournal(record.id, all)
          .slice(from)
          .map((e) => JSON.stringify(e)),
      ],
    )
  }

  /** One write on the writing session; a session kept from before that fails (ended meanwhile) is replaced once. */
  async function writeHeld(change: RunWrite): Promise<void> {
    const first = await writingSession()
    try {
      await writeOn(first.client, change)
      return
    } catch (error) {
      dropWriter(first.client)
      if (first.fresh) throw error
    }
    // A write is idempotent (an upsert, and entries by index): written again whole on a new session.
    const second = await writingSession()
    try {
      await writeOn(second.client, change)
    } catch (error) {
      dropWriter(second.client)
      throw error
    }
  }

  async function tablesExist(client: pg.Client, table = 'runs'): Promise<boolean> {
    const found = await client.query(`SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = $2`, [SVCOPS_SCHEMA, table])
    return (found.rowCount ?? 0) > 0
  }

  /** A row as a decision: what from the row's JSON, who, when and where from its columns (the server's). */
  function decisionOfRow(id: string, row: DecisionRow): StoredDecision {
    const what = parseStoredDecision(row.decision, `${where}: decision of run ${id}`)
    return {
      decision: what.decision,
      seal: what.seal,
      // A row from before the trigger names nobody the server authenticated: refused by the holder.
      by: row.decided_by ?? '',
      at: row.decided_at,
      environment: row.environment ?? undefined,
      identity: 'database role',
      afterPause: row.after_pause ?? undefined,
    }
  }

  async function decisionOf(c: pg.Client, id: string, pauseEntry = -1): Promise<StoredDecision | undefined> {
    const rows = await c.query<DecisionRow>(
      `SELECT ${DECISION_COLUMNS}, d.decided_at >= j.written_at AS after_pause
       FROM ${SVCOPS_SCHEMA}.run_decisions d LEFT JOIN ${SVCOPS_SCHEMA}.run_journal j ON j.run_id = d.run_id AND j.seq = $2
       WHERE d.run_id = $1`,
      [id, pauseEntry],
    )
    const row = rows.rows[0]
    return row ? decisionOfRow(id, row) : undefined
  }

  return {
    where,
    async write(change: RunWrite) {
      const done = writes.then(() => writeHeld(change))
      writes = done.catch(() => undefined)
      await done
    },
    async listRecords(env) {
      return session(async (c) => {
        if (!(await tablesExist(c))) return []
        const rows = await c.query<{ id: string; environment: string; record: unknown }>(
          `SELECT id, environment, record FROM ${SVCOPS_SCHEMA}.runs WHERE environment = $1 ORDER BY started_at DESC, id DESC LIMIT ${LIST_LIMIT}`,
          [env],
        )
        return rows.rows.flatMap((r) => {
          try {
            // Checked against the row's id and environment and the run key (run-mac.ts): a refused record is listed as refused.
            return [seal.openRecord(r.record, where, { id: r.id, filedUnder: r.environment })]
          } catch (error) {
            events.warn(`Skipping run ${r.id} of ${where}: ${errorMessage(error)}`)
            return []
          }
        })
      }, false)
    },
    async readRun(id): Promise<StoredRun | undefined> {
      return session(async (c) => {
        if (!(await tablesExist(c))) return undefined
        const run = await c.query<{ environment: string; record: unknown }>(
          `SELECT environment, record FROM ${SVCOPS_SCHEMA}.runs WHERE id = $1`,
          [id],
        )
        const row = run.rows[0]
        if (!row) return undefined
        const entries = await c.query<{ seq: number; entry: unknown }>(
          `SELECT seq, entry FROM ${SVCOPS_SCHEMA}.run_journal WHERE run_id = $1 ORDER BY seq`,
          [id],
        )
        const record = seal.openRecord(row.record, where, { id, filedUnder: row.environment })
        return openedRun(
          seal,
          record,
          entries.rows.map((e) => ({ seq: e.seq, raw: e.entry })),
          where,
        )
      }, false)
    },
    async decide(id, decision) {
      // Not creating the schema: a person who may only decide has no right to, and the run's writer made it.
      return session(async (c) => {
        const inserted = await c.query<DecisionRow>(
          `INSERT INTO ${SVCOPS_SCHEMA}.run_decisions (run_id, decision, environment) VALUES ($1, $2, $3)
           ON CONFLICT (run_id) DO NOTHING RETURNING ${DECISION_COLUMNS}`,
          [id, JSON.stringify({ decision: decision.decision, seal: decision.seal }), environment],
        )
        const mine = inserted.rows[0]
        if (mine) return { kept: decisionOfRow(id, mine), first: true }
        const before = await decisionOf(c, id)
        if (!before) throw new OperationError(`the decision of run ${id} was neither kept nor found in ${where}`)
        return { kept: before, first: false }
      }, false)
    },
    async readDecision(id, pauseEntry) {
      return session(async (c) => ((await tablesExist(c, 'run_decisions')) ? decisionOf(c, id, pauseEntry) : undefined), false)
    },
    async dismissDecision(id, decision) {
      await session(async (c) => {
        await c.query(`DELETE FROM ${SVCOPS_SCHEMA}.run_decisions WHERE run_id = $1 AND decided_at = $2::timestamptz`, [id, decision.at])
      }, false)
    },
    async remove(id) {
      await session(async (c) => {
        if (!(await tablesExist(c))) return
        await c.query('BEGIN')
        await c.query(`DELETE FROM ${SVCOPS_SCHEMA}.run_journal WHERE run_id = $1`, [id])
        await c.query(`DELETE FROM ${SVCOPS_SCHEMA}.runs WHERE id = $1`, [id])
        await c.query('COMMIT')
      }, false)
    },
    async lockState(run: RunRecord): Promise<LockState> {
      const lock = await readEnvironmentLock(db, environment)
      return lock?.runId === run.id && lock.alive ? 'held' : 'not-held'
    },
    async close() {
      // Not waiting for a write under way (an unreachable store may never answer): ending the session
      // cuts it (pg destroys the socket), and the local journal has everything.
      closed = true
      const client = writer
      writer = undefined
      await client?.end().catch(() => undefined)
    },
  }
}
