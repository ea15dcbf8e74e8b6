/**
 * Restoring a backup over the service database. The caller stops the recording service first;
 * this refuses while other sessions are connected, when the backup's schema is not the one the
 * caller expects, or when the server or pg_restore is older than the backup's. It checks the
 * stored file before decrypting, replaces the database in one transaction, and compares row counts
 * and schema fingerprint with the manifest afterwards.
 */
import type * as openpgp from 'openpgp'
import type pg from 'pg'
import { BadInputError, OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { compareRowCounts, rowCounts, schemaFingerprint } from '../drivers/fingerprint.ts'
import { checkedCopy, checkRecipientKey, openDecrypted } from './decrypt.ts'
import { dropStatements, loadOverDatabase } from './backup-load.ts'
import type { Manifest } from './manifest.ts'
import {
  assertToolFits,
  assertToolPatched,
  clientConfig,
  connectDatabase,
  findPgTool,
  majorOf,
  serverVersion,
  SVCOPS_SCHEMA,
  type DatabaseTarget,
} from '../drivers/postgres.ts'
import { ownSessionPids } from '../drivers/postgres-sessions.ts'
import { listWithoutSvcops } from './restore-list.ts'
import type { BackupStore } from './store.ts'
import { readManifest, type BackupTrust } from './verify-backup.ts'

export interface RestoreOptions extends BackupTrust {
  /** Unlocked private key of a recipient (`readIdentity`). */
  identity: openpgp.PrivateKey
  /** The caller confirmed that the database will be replaced (the CLI asks, or --yes). */
  confirmed: boolean
  /** Refuse unless the backup's schema fingerprint is this one (e.g. the schema the release being rolled back to needs). */
  expectFingerprint?: string
}

export interface RestoreReport {
  id: string
  target: { host: string; port: number; name: string }
  fingerprint: string
  rowCounts: Record<string, number>
  /** Objects dropped before the dump was loaded (in the same transaction). */
  dropped: number
  durationMs: number
}

/** The steps `restoreBackup` takes, for --dry-run. */
export function planRestore(manifest: Manifest, target: DatabaseTarget): string[] {
  return [
    `check the manifest's signature by a trusted signer, then copy ${manifest.file} once into a private file and check its size and SHA-256 and that the private key is a recipient`,
    `check that ${target.host}:${target.port} runs PostgreSQL ${majorOf(manifest.versions.serverNum)} or newer, pg_restore is ${manifest.versions.pgDump.split('.')[0]} or newer, and nobody else is connected to ${target.name}`,
    `in one transaction: drop the objects in ${target.name} and load backup ${manifest.id} (taken ${manifest.completedAt}, ${Object.values(manifest.rowCounts).reduce((a, b) => a + b, 0)} rows)`,
    `compare row counts and schema fingerprint ${manifest.fingerprint.slice(0, 16)}… with the manifest`,
  ]
}

/** Refuses a backup whose schema is not the expected one, naming both fingerprints. */
export function assertFingerprintFits(manifest: Manifest, expected: string | undefined): void {
  if (expected !== undefined && expected !== manifest.fingerprint) {
    throw new BadInputError(
      `Backup ${manifest.id} has schema fingerprint ${manifest.fingerprint}; expected ${expected} — it holds a different schema than the one asked for.`,
      'Pick a backup taken with that schema: svcops backup list --env <env>',
    )
  }
}

/** How long a session must stay connected to count as the service's: a read of another svcops is shorter. */
const LASTING_SESSION_LOOKS = 10
const LOOK_EVERY_MS = 200

/**
 * The other client sessions on `target`'s database that stay connected across two seconds of looks.
 * svcops' own sessions of this process (the run store's, the lock's) write only the svcops schema,
 * which the restore leaves alone: not counted, known by backend pid, never by a name a client
 * chooses. A session that comes and goes (another machine's `runs watch` reading the run store) is
 * waited out; one that stays, whatever its name, counts.
 */
async function lastingSessions(client: pg.Client, target: DatabaseTarget): Promise<{ pid: number; app: string }[]> {
  const look = async () =>
    (
      await client.query<{ pid: number; app: string }>(
        "SELECT pid, coalesce(nullif(application_name, ''), client_addr::text, 'local') AS app FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND pid <> ALL($1::integer[])",
        [ownSessionPids(target)],
      )
    ).rows
  let still = await look()
  for (let i = 0; i < LASTING_SESSION_LOOKS && still.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, LOOK_EVERY_MS))
    const now = await look()
    still = still.filter((s) => now.some((n) => n.pid === s.pid))
  }
  return still
}

/** Replaces the contents of `target` with backup `id`. */
export async function restoreBackup(
  store: BackupStore,
  id: string,
  target: DatabaseTarget,
  options: RestoreOptions,
): Promise<RestoreReport> {
  const started = Date.now()
  const { manifest } = await readManifest(store, id, options)
  if (!options.confirmed) {
    throw new BadInputError(
      `Restoring backup ${id} replaces every table in ${target.name} on ${target.host}:${target.port}; it needs confirmation.`,
      'Answer the prompt, or pass --yes in scripts.',
    )
  }
  assertFingerprintFits(manifest, options.expectFingerprint)
  const pgRestore = await findPgTool('pg_restore')
  assertToolFits(pgRestore, manifest.versions.pgDump, Number(manifest.versions.pgDump.split('.')[0]), 'the pg_dump that made the backup')
  assertToolPatched(pgRestore)
  assertToolPatched(await findPgTool('psql'))

  // One read of the stored file: what was checked is what is decrypted and loaded.
  const copy = await events.step(`check ${manifest.file} (size, SHA-256, key) into a private copy`, async () => {
    const checked = await checkedCopy(store, manifest)
    try {
      await checkRecipientKey(checked, manifest, options.identity)
    } catch (error) {
      await checked.remove()
      throw error
    }
    return checked
  })
  let client: Awaited<ReturnType<typeof connectDatabase>> | undefined
  try {
    client = await connectDatabase(target)
    const version = await serverVersion(client)
    if (majorOf(version.num) < majorOf(manifest.versions.serverNum)) {
      throw new OperationError(
        `The server ${target.host}:${target.port} runs PostgreSQL ${version.text}, older than ${manifest.versions.server} that backup ${id} was taken from; restore into a server of major version ${majorOf(manifest.versions.serverNum)} or newer.`,
      )
    }
    const others = await lastingSessions(client, target)
    if (others.length > 0) {
      throw new OperationError(
        `${others.length} other session(s) are connected to ${target.name} (${[...new Set(others.map((o) => o.app))].join(', ')}); stop the recording service before restoring.`,
        'Stop the service on every host, then run the restore again.',
      )
    }
    const schemas = manifest.schemas
    const drops = await dropStatements(client, schemas)
    // A backup older than the svcops schema's exclusion holds it: never restored, it would rewind the runs.
    const selection = await events.step(`list what backup ${id} holds, without the ${SVCOPS_SCHEMA} schema`, async () =>
      listWithoutSvcops(await openDecrypted(copy, manifest, options.identity), pgRestore),
    )
    if (selection.left.length)
      events.info(
        `Backup ${id} holds the ${SVCOPS_SCHEMA} schema (taken before backups left it out); it is not restored, the runs' state stays as it is.`,
      )
    try {
      await events.step(`restore backup ${id} into ${target.name} (one transaction)`, async () => {
        const dump = await openDecrypted(copy, manifest, options.identity)
        // psql commits only once the whole dump went through and its SHA-256 is the manifest's.
        await loadOverDatabase(manifest, dump, pgRestore, target, drops, selection.argv)
      })
    } finally {
      selection.remove()
    }
    const config = clientConfig(target)
    const schemaOptions = schemas.length > 0 ? { schemas } : {}
    const counts = await rowCounts(config, schemaOptions)
    const differences = compareRowCounts(manifest.rowCounts, counts)
    if (differences.length > 0)
      throw new OperationError(
        `After restoring backup ${id}, ${target.name} differs from the manifest: ${differences.slice(0, 5).join('; ')}.`,
      )
    const fingerprint = await schemaFingerprint(config, schemaOptions)
    if (fingerprint !== manifest.fingerprint)
      throw new OperationError(
        `After restoring backup ${id}, the schema fingerprint of ${target.name} is ${fingerprint}; the manifest says ${manifest.fingerprint}.`,
      )
    events.emit({
      kind: 'check',
      check: 'restored database equals the manifest',
      ok: true,
      detail: `${Object.keys(counts).length} tables, fingerprint ${fingerprint.slice(0, 16)}…`,
    })
    return {
      id,
      target: { host: target.host, port: target.port, name: target.name },
      fingerprint,
      rowCounts: counts,
      dropped: drops.length,
      durationMs: Date.now() - started,
    }
  } finally {
    await client?.end().catch(() => undefined)
    await copy.remove()
  }
}
