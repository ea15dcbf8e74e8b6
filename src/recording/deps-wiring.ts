/**
 * The real dependencies of an upgrade run (see upgrade-deps.ts): the recording service's API through
 * the typed client with bearer tokens from the manager client; schema fingerprint, row counts and
 * privileges from the database; the backup library for a verified backup and its restore.
 */
import { storeFreeBytes } from '../backup/store-room.ts'
import { managerClientFor } from '../clients/manager-client.ts'
import { RecordingClient } from '../clients/recording-client.ts'
import { requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { databaseTarget, withDatabase } from '../drivers/postgres.ts'
import { HttpError } from '../core/errors.ts'
import { rowCounts, schemaFingerprint } from '../drivers/fingerprint.ts'
import { withLockRowKept } from '../runs/lock.ts'
import { createVerifiedBackup, findRestoreProblem, restoreVerifiedBackup } from './backup-gate.ts'
import type { UpgradeDeps } from './deps.ts'

/** Opens the real dependencies for environment `env` (lazy: nothing connects until used). */
export function openUpgradeDeps(env: Environment): Promise<UpgradeDeps> {
  const rec = requireSection(env, 'recording')
  const manager = managerClientFor(env)
  const clients = new Map<string, RecordingClient>()
  const client = (url: string): RecordingClient => {
    let c = clients.get(url)
    if (!c) clients.set(url, (c = new RecordingClient({ url, auth: manager, scopes: rec.scopes })))
    return c
  }
  const target = () => databaseTarget(rec.database)
  const scopes = [rec.scopes.read, rec.scopes.write]
  const deps: UpgradeDeps = {
    content: {
      async health(url) {
        const h = await client(url).health()
        if (!h.healthy)
          throw new HttpError(
            `GET ${url}/ is not healthy: ${(h.reason ?? `status ${h.status ?? 'none'}`).replace(/\.$/, '')}.`,
            h.status ?? undefined,
          )
      },
      list: (url, limit) => client(url).list(limit),
      create: (url, input) => client(url).create(input),
      async checkAuth() {
        return (await manager.describeGrant(scopes)).scopes
      },
    },
    database: {
      fingerprint: () => withDatabase(target(), (c) => schemaFingerprint(c)),
      rowCounts: () => withDatabase(target(), (c) => rowCounts(c)),
      sizeBytes: () =>
        withDatabase(target(), async (c) =>
          Number((await c.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0]?.n ?? 0),
        ),
      mayChangeSchema: () =>
        withDatabase(target(), async (c) => {
          const row = (
            await c.query<{ db: boolean; schema: boolean; who: string; not_owned: string | null }>(
              `SELECT has_database_privilege(current_user, current_database(), 'CREATE') AS db, has_schema_privilege(current_user, 'public', 'CREATE') AS schema, current_user AS who,
                      (SELECT string_agg(c.relname || ' (owner ' || pg_get_userbyid(c.relowner) || ')', ', ' ORDER BY c.relname) FROM pg_class c
                        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT pg_has_role(current_user, c.relowner, 'USAGE')) AS not_owned`,
            )
          ).rows[0]
          // ALTER TABLE needs ownership of the table, which CREATE does not give: migrations alter tables.
          const ok = !!row?.db && !!row.schema && !row.not_owned
          return {
            ok,
            detail:
              `role ${row?.who ?? '?'}: CREATE on the database ${row?.db ? 'yes' : 'no'}, CREATE on schema public ${row?.schema ? 'yes' : 'no'}, ` +
              `owns every table ${row?.not_owned ? `no — not ${row.not_owned}` : 'yes'}`,
          }
        }),
    },
    backup: {
      createVerified: (versions) => createVerifiedBackup(env, versions),
      // The restore replaces the database that holds the environment lock's row: the row is put back after it.
      restore: (id, expectFingerprint) => withLockRowKept(rec.database, env.name, () => restoreVerifiedBackup(env, id, expectFingerprint)),
      findRestoreProblem: (id, expectFingerprint) => findRestoreProblem(env, id, expectFingerprint),
      // Where the store keeps its files: on the store's host when backup.store.ssh is set.
      freeBytes: () => storeFreeBytes(requireSection(env, 'backup').store),
    },
    async close() {
      await manager.logout()
    },
  }
  return Promise.resolve(deps)
}
