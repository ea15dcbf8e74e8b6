/**
 * Database schema of the recording service and its migrations. Each release migrates up to its
 * schema version on start, inside one transaction under an advisory lock (several hosts share one
 * database and may start together), and records every step in `schema_migrations`. A database
 * whose schema is newer than the release knows is refused: schema changes are not backward-compatible.
 */
import type pg from 'pg'
import type { RecordingFault } from './releases.ts'
import { errorMessage } from '../../core/errors.ts'

interface Migration {
  version: number
  name: string
  statements: string[]
}

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'create recordings',
    statements: [
      `CREATE TABLE recordings (
         id bigserial PRIMARY KEY,
         channel_name text NOT NULL,
         title text NOT NULL,
         start_time bigint NOT NULL,
         stop_time bigint NOT NULL,
         location text NOT NULL,
         file_name text NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now())`,
    ],
  },
  {
    version: 2,
    name: 'recording duration',
    statements: [
      'ALTER TABLE recordings ADD COLUMN duration integer',
      'UPDATE recordings SET duration = stop_time - start_time',
      'ALTER TABLE recordings ALTER COLUMN duration SET NOT NULL',
      'CREATE INDEX recordings_start_time ON recordings (start_time)',
    ],
  },
  {
    version: 3,
    name: 'recording creator',
    statements: ["ALTER TABLE recordings ADD COLUMN created_by text NOT NULL DEFAULT 'unknown'"],
  },
]

/** Arbitrary constant: the advisory lock every release takes while it migrates. */
const MIGRATION_LOCK = 74_210_001

/** Raised when the database holds a schema newer than the release knows. */
export class NewerSchemaError extends Error {
  readonly found: number
  readonly known: number
  constructor(found: number, known: number) {
    super(
      `database schema version ${found} is newer than this release knows (${known}); restore the database backup taken before the upgrade, or install a release that knows schema ${found}`,
    )
    this.found = found
    this.known = known
  }
}

/** Raised when a migration fails; the transaction was rolled back. */
export class MigrationError extends Error {}

export interface MigrationOutcome {
  from: number
  to: number
  applied: { version: number; name: string }[]
}

/** Current schema version: 0 for an empty database. */
export async function readSchemaVersion(client: pg.ClientBase): Promise<number> {
  const exists = await client.query<{ present: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
  if (!exists.rows[0]?.present) return 0
  const rows = await client.query<{ version: number | null }>('SELECT max(version)::int AS version FROM schema_migrations')
  return rows.rows[0]?.version ?? 0
}

/**
 * Brings the schema to `target` for `release`, or refuses a newer one. `fault` makes the
 * migration fail midway (after its first statements ran) or silently delete recordings.
 */
export async function migrateSchema(
  client: pg.ClientBase,
  target: number,
  release: string,
  fault: RecordingFault,
  log: (level: 'INFO' | 'ERROR', message: string) => void,
): Promise<MigrationOutcome> {
  await client.query('BEGIN')
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        release text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now())`)
    const from = await readSchemaVersion(client)
    if (from > target) throw new NewerSchemaError(from, target)
    const pending = MIGRATIONS.filter((migration) => migration.version > from && migration.version <= target)
    for (const migration of pending) {
      log('INFO', `applying migration ${migration.version} (${migration.name})`)
      for (const statement of migration.statements) await client.query(statement)
      if (fault === 'migration-fails' && migration.version === target) {
        // The faulty release references a table that does not exist, after its first changes ran.
        await client.query('UPDATE recording_locations SET name = location')
      }
      if (fault === 'lossy-migration' && migration.version === target) {
        await client.query(
          'DELETE FROM recordings WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM recordings) numbered WHERE n % 3 = 1)',
        )
      }
      await client.query('INSERT INTO schema_migrations (version, name, release) VALUES ($1, $2, $3)', [
        migration.version,
        migration.name,
        release,
      ])
    }
    await client.query('COMMIT')
    return {
      from,
      to: Math.max(from, ...pending.map((migration) => migration.version)),
      applied: pending.map(({ version, name }) => ({ version, name })),
    }
  } catch (error) {
    await client.query('ROLLBACK')
    if (error instanceof NewerSchemaError) throw error
    throw new MigrationError(`migration to schema ${target} failed and was rolled back: ${errorMessage(error)}`)
  }
}
