/**
 * "Migration fails (check database connectivity and schema-change permission, review migration
 * logs, restore backup and retry)": a migration runs ALTER TABLE, which needs ownership of the
 * table (membership in its owning role), not only CREATE; and the migration history and the
 * migration lines of the log since the last start say whether the last one failed.
 */
import type pg from 'pg'
import { SCHEMA_CHANGE_PERMISSION } from '../deps.ts'
import { fine, skipped } from '../../doctor/outcome.ts'
import type { CheckOutcome } from '../../doctor/doctor-types.ts'
import { NO_CONFIG, type Cause } from './cause-types.ts'

export const schemaChangePermission: Cause = {
  ...SCHEMA_CHANGE_PERMISSION,
  problem: 'problem-migration',
  beforeStop: true,
  async run(view) {
    if (!view.config) return skipped(NO_CONFIG)
    const db = await view.database()
    if (!('client' in db)) return skipped(`no database connection: ${db.error}`)
    return checkSchemaChange(db.client, view.config.database?.user ?? '?')
  },
}

/**
 * Whether `user`, connected as `client`, may change the schema a migration changes: it owns (or is
 * a member of the owner of) every table of schema public, and may CREATE in it. The hosts' and the
 * cluster's doctor both ask it this way.
 */
export async function checkSchemaChange(client: pg.Client, user: string): Promise<CheckOutcome> {
  const tables = (
    await client.query<{ name: string; owner: string; mine: boolean }>(
      `SELECT c.relname AS name, pg_get_userbyid(c.relowner) AS owner, pg_has_role(current_user, c.relowner, 'USAGE') AS mine
           FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') ORDER BY 1`,
    )
  ).rows
  const create = (await client.query<{ ok: boolean }>(`SELECT has_schema_privilege(current_user, 'public', 'CREATE') AS ok`)).rows[0]
  const findings = []
  const foreign = tables.filter((t) => !t.mine)
  if (foreign.length)
    findings.push({
      severity: 'error' as const,
      summary: `Role ${user} does not own ${foreign.map((t) => t.name).join(', ')}: a migration's ALTER TABLE would fail with "must be owner of table".`,
      evidence: foreign.map((t) => `table public.${t.name}: owner ${t.owner}, ${user} is not a member of it`),
      remedy: `As a superuser: ${foreign.map((t) => `ALTER TABLE public.${t.name} OWNER TO ${user};`).join(' ')} (or GRANT ${foreign[0]?.owner ?? 'owner'} TO ${user}); then upgrade again.`,
    })
  if (!create?.ok)
    findings.push({
      severity: 'error' as const,
      summary: `Role ${user} may not CREATE in schema public: a migration that adds a table or index would fail.`,
      evidence: [`has_schema_privilege(${user}, 'public', 'CREATE') = false`],
      remedy: `As the schema's owner: GRANT CREATE ON SCHEMA public TO ${user};`,
    })
  return fine(`ownership of ${tables.length} table(s) and CREATE on schema public for role ${user}`, findings)
}

export const migrationHistory: Cause = {
  id: 'migration-history',
  problem: 'problem-migration',
  check: 'the migration history (schema_migrations) and the migration lines of the log since the last start',
  beforeStop: false,
  async run(view) {
    if (!view.config) return skipped(NO_CONFIG)
    const db = await view.database()
    if (!('client' in db)) return skipped(`no database connection: ${db.error}`)
    const history = (
      await db.client
        .query<{ version: number; name: string; release: string; applied_at: Date }>(
          `SELECT version, name, release, applied_at FROM schema_migrations ORDER BY version DESC LIMIT 3`,
        )
        .catch(() => ({ rows: [] }))
    ).rows
    const last = history[0]
    const lines = view.logLines.filter((l) => /migrat/i.test(l))
    const failed = lines.filter((l) => /FATAL|ERROR/.test(l))
    const findings = failed.length
      ? [
          {
            severity: 'error' as const,
            summary: `The last start's migration failed; the database stayed at schema ${last?.version ?? 0}.`,
            evidence: [
              ...failed.slice(-3).map((l) => `${view.logPath}: ${l}`),
              `schema_migrations: ${history.map((h) => `${h.version} (${h.name}, ${h.release}, ${h.applied_at.toISOString()})`).join('; ') || 'empty'}`,
            ],
            remedy:
              'Fix the cause the log line names (connectivity, ownership: see schema-change-permission), restore the backup taken before the upgrade if the schema changed, and retry the upgrade.',
          },
        ]
      : []
    return fine(
      `schema at version ${last?.version ?? 0}${last ? ` (${last.release})` : ''}; ${lines.length} migration log line(s) since the last start`,
      findings,
    )
  },
}
