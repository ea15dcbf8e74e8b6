/**
 * Schema fingerprint and row counts of a PostgreSQL database, read from the catalog. Upgrade and
 * rollback compare fingerprints to decide whether a database must be restored; backups record
 * both so a test restore can prove it got the same schema and the same number of rows back.
 *
 * The fingerprint covers tables (and views, sequences), columns in order with their types,
 * nullability and defaults, constraints and indexes — by definition text, never by OID, owner or
 * physical position, so it is equal across a dump/restore round trip and changes with a migration.
 */
import { createHash } from 'node:crypto'
import pg from 'pg'
import { OperationError } from '../core/errors.ts'
import { SVCOPS_SCHEMA } from './postgres.ts'

/** Schemas a fingerprint never covers: the system's, and svcops' own (not the service's, and not in a backup). */
const SYSTEM_SCHEMAS = `n.nspname NOT IN ('pg_catalog', 'information_schema', '${SVCOPS_SCHEMA}') AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'`

type Queryable = Pick<pg.ClientBase, 'query'>

export interface SchemaOptions {
  /** Only these schemas (default: every non-system schema). */
  schemas?: string[]
}

function schemaFilter(options: SchemaOptions, param: number): { sql: string; params: unknown[] } {
  if (options.schemas && options.schemas.length > 0) return { sql: `n.nspname = ANY($${param}::text[])`, params: [options.schemas] }
  return { sql: SYSTEM_SCHEMAS, params: [] }
}

/** The catalog facts the fingerprint is computed from, as sorted lines (useful to show a diff). */
export async function describeSchema(client: Queryable, options: SchemaOptions = {}): Promise<string[]> {
  const f = schemaFilter(options, 1)
  const lines: string[] = []
  const relations = await client.query<{ line: string }>(
    `SELECT 'relation ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text AS line
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND ${f.sql}`,
    f.params,
  )
  const columns = await client.query<{ line: string }>(
    `SELECT 'column ' || n.nspname || '.' || c.relname || ' #' ||
            row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) || ' ' || a.attname || ' ' ||
            format_type(a.atttypid, a.atttypmod) ||
            CASE WHEN a.attnotnull THEN ' not null' ELSE '' END ||
            COALESCE(' default ' || pg_get_expr(d.adbin, d.adrelid), '') ||
            CASE WHEN a.attidentity <> '' THEN ' identity ' || a.attidentity::text ELSE '' END ||
            CASE WHEN a.attgenerated <> '' THEN ' generated ' || a.attgenerated::text ELSE '' END AS line
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND ${f.sql}`,
    f.params,
  )
  const constraints = await client.query<{ line: string }>(
    `SELECT 'constraint ' || n.nspname || '.' || COALESCE(c.relname, t.typname) || ' ' || con.conname || ' ' || pg_get_constraintdef(con.oid) AS line
       FROM pg_constraint con
       JOIN pg_namespace n ON n.oid = con.connamespace
       LEFT JOIN pg_class c ON c.oid = con.conrelid
       LEFT JOIN pg_type t ON t.oid = con.contypid
      WHERE ${f.sql}`,
    f.params,
  )
  const indexes = await client.query<{ line: string }>(
    `SELECT 'index ' || pg_get_indexdef(i.indexrelid) AS line
       FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE ${f.sql}`,
    f.params,
  )
  const types = await client.query<{ line: string }>(
    `SELECT 'enum ' || n.nspname || '.' || t.typname || ' ' || string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) AS line
       FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE ${f.sql}
      GROUP BY n.nspname, t.typname`,
    f.params,
  )
  for (const result of [relations, columns, constraints, indexes, types]) for (const row of result.rows) lines.push(row.line)
  return lines.sort()
}

/**
 * A stable SHA-256 (hex) of the schema: equal before and after a dump/restore round trip,
 * different after a migration. `db` is an open client (inside a snapshot, if you like) or the
 * settings to connect with.
 */
export async function schemaFingerprint(db: Queryable | pg.ClientConfig, options: SchemaOptions = {}): Promise<string> {
  const lines = await withClient(db, (client) => describeSchema(client, options))
  return createHash('sha256').update(lines.join('\n')).digest('hex')
}

/** Exact row count of every table (`schema.table` -> rows). Counts are exact, not the planner's estimates. */
export async function rowCounts(db: Queryable | pg.ClientConfig, options: SchemaOptions = {}): Promise<Record<string, number>> {
  return withClient(db, async (client) => {
    const f = schemaFilter(options, 1)
    const tables = await client.query<{ schema: string; name: string }>(
      `SELECT n.nspname AS schema, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND ${f.sql} ORDER BY 1, 2`,
      f.params,
    )
    const counts: Record<string, number> = {}
    for (const { schema, name } of tables.rows) {
      let result: pg.QueryResult<{ n: string }>
      try {
        result = await client.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM ${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(name)}`,
        )
      } catch (error) {
        throw new OperationError(
          `Could not count the rows of ${schema}.${name}: ${(error as Error).message}.`,
          'The database user needs SELECT on every table of the service schema.',
        )
      }
      counts[`${schema}.${name}`] = Number(result.rows[0]?.n ?? 0)
    }
    return counts
  })
}

/** Tables whose counts differ between `expected` and `actual`, as "table: expected N, found M". */
export function compareRowCounts(expected: Record<string, number>, actual: Record<string, number>): string[] {
  const differences: string[] = []
  for (const table of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
    const e = expected[table]
    const a = actual[table]
    if (e !== a) differences.push(`${table}: expected ${e ?? 'no table'}, found ${a ?? 'no table'}`)
  }
  return differences.sort()
}

function isClient(db: Queryable | pg.ClientConfig): db is Queryable {
  return typeof (db as Queryable).query === 'function'
}

async function withClient<T>(db: Queryable | pg.ClientConfig, fn: (client: Queryable) => Promise<T>): Promise<T> {
  if (isClient(db)) return fn(db)
  const client = new pg.Client(db)
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}
