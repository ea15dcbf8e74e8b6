/**
 * The copy a rehearsal works on: the environment's verified backup (reused when recent, verified by
 * a test restore and of today's schema; otherwise taken and verified now), restored into the scratch
 * database the stack names for rehearsals (`recording.rehearsal.database`) on the service's own
 * PostgreSQL server. The copy is made only under that name, never over the service's database, and
 * dropped (with the sessions on it) when the rehearsal ends, also when it was interrupted.
 */
import pg from 'pg'
import type { Environment } from '../../config/schema.ts'
import { requireSection } from '../../config/load.ts'
import { BadInputError, OperationError, errorMessage } from '../../core/errors.ts'
import { events } from '../../core/events.ts'
import { listBackups, openBackupContext, readIdentity, restoreBackup } from '../../backup/index.ts'
import { connectDatabase, databaseTarget, type DatabaseTarget } from '../../drivers/postgres.ts'
import { createVerifiedBackup } from '../backup-gate.ts'

/** Hours a verified backup may be old and still be the rehearsal's copy (`recording.rehearsal.backupMaxAgeHours`). */
export const DEFAULT_BACKUP_MAX_AGE_HOURS = 24

/** The scratch database of `env`'s rehearsals: the service's server and role, the rehearsal's database name. */
export function scratchTarget(env: Environment): DatabaseTarget {
  const rec = requireSection(env, 'recording')
  if (!rec.rehearsal)
    throw new BadInputError(
      `${env.file}: recording.rehearsal: missing; expected { host, database }: the host a rehearsal runs on and its scratch database.`,
    )
  return { ...databaseTarget(rec.database), name: rec.rehearsal.database }
}

/** Refuses a scratch target that is the service's own database (the loader's rule, checked again where it matters). */
function assertScratch(production: DatabaseTarget, scratch: DatabaseTarget): void {
  if (scratch.name === production.name && scratch.host === production.host && scratch.port === production.port)
    throw new OperationError(
      `The rehearsal's scratch database ${scratch.name} on ${scratch.host}:${scratch.port} is the service's own database; a rehearsal never restores over it.`,
    )
}

/** A backup a rehearsal can use, and whether it was reused or taken now. */
export interface RehearsalBackup {
  id: string
  fingerprint: string
  reused: boolean
  takenAt: string
}

/**
 * The newest trusted backup of `env` verified with a test restore, of schema `fingerprint` and at
 * most `maxAgeHours` old; otherwise a new one, taken and verified now (a backup only reads the
 * service's database).
 */
export async function rehearsalBackup(
  env: Environment,
  fingerprint: string,
  maxAgeHours: number,
  serviceVersions: Record<string, string>,
): Promise<RehearsalBackup> {
  const ctx = await openBackupContext(env)
  try {
    const oldest = Date.now() - maxAgeHours * 3_600_000
    const entries = await listBackups(ctx.store, { signers: ctx.signers, environment: env.name })
    const usable = entries
      .filter((e) => e.signature === 'trusted' && e.verified?.ok === true && e.verified.restoreTest)
      .filter((e) => e.manifest.fingerprint === fingerprint && Date.parse(e.manifest.completedAt) >= oldest)
      .sort((a, b) => Date.parse(b.manifest.completedAt) - Date.parse(a.manifest.completedAt))[0]
    if (usable) return { id: usable.id, fingerprint, reused: true, takenAt: usable.manifest.completedAt }
  } finally {
    await ctx.store.close()
  }
  const made = await createVerifiedBackup(env, serviceVersions)
  return { id: made.id, fingerprint: made.fingerprint, reused: false, takenAt: new Date().toISOString() }
}

/** Runs `fn` on a session of the service's server, in its own database (CREATE/DROP DATABASE need one). */
async function onServer<T>(production: DatabaseTarget, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connectDatabase(production)
  try {
    return await fn(client)
  } finally {
    await client.end().catch(() => undefined)
  }
}

/**
 * The comment svcops puts on a scratch database it creates: the only proof a database of that name is
 * a rehearsal's copy, since the name alone may be another environment's or another tool's database
 * on a shared server.
 */
export const SCRATCH_MARK = 'svcops rehearsal scratch copy (svcops rehearse recording drops it)'

/** Refused drop or reuse of a database of the scratch name that svcops did not make. */
export class UnmarkedScratchError extends BadInputError {}

/**
 * Drops the scratch database if it is there (a copy an interrupted rehearsal left included), ending
 * its sessions; only one carrying {@link SCRATCH_MARK}: any other database of that name is refused in
 * one sentence and left as it is.
 */
export async function dropScratch(production: DatabaseTarget, scratch: DatabaseTarget): Promise<boolean> {
  assertScratch(production, scratch)
  return onServer(production, async (client) => {
    const found = await client.query<{ mark: string | null }>(
      "SELECT shobj_description(oid, 'pg_database') AS mark FROM pg_database WHERE datname = $1",
      [scratch.name],
    )
    if (!found.rowCount) return false
    if (found.rows[0]?.mark !== SCRATCH_MARK)
      throw new UnmarkedScratchError(
        `recording.rehearsal.database: "${scratch.name}" exists on ${scratch.host}:${scratch.port} and was not made by a rehearsal (it lacks svcops' mark), so it is neither dropped nor reused; expected a name of its own.`,
      )
    await client.query(`DROP DATABASE ${pg.escapeIdentifier(scratch.name)} WITH (FORCE)`)
    return true
  })
}

/** Creates the scratch database empty and marks it as svcops' own (the mark is what lets a later drop through). */
export async function createScratch(production: DatabaseTarget, scratch: DatabaseTarget): Promise<void> {
  assertScratch(production, scratch)
  await onServer(production, async (client) => {
    try {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(scratch.name)}`)
    } catch (error) {
      throw new OperationError(
        `Could not create the rehearsal's scratch database ${scratch.name} on ${scratch.host}:${scratch.port} as ${scratch.user}: ${errorMessage(error)}.`,
        `Grant it with: ALTER ROLE ${scratch.user} CREATEDB`,
      )
    }
    // Its creator owns it, so the same role may comment on it; the literal is a constant.
    await client.query(`COMMENT ON DATABASE ${pg.escapeIdentifier(scratch.name)} IS ${pg.escapeLiteral(SCRATCH_MARK)}`)
  })
}

/**
 * Makes the scratch database a fresh copy of backup `id`: dropped if present, created empty, the
 * backup restored into it by the backup library (signature, checksum, key, row counts and fingerprint
 * checked as in any restore). Returns how long the restore took, in ms.
 */
export async function restoreCopy(env: Environment, id: string, expectFingerprint: string): Promise<{ restoreMs: number }> {
  const production = databaseTarget(requireSection(env, 'recording').database)
  const scratch = scratchTarget(env)
  await dropScratch(production, scratch)
  await createScratch(production, scratch)
  const ctx = await openBackupContext(env)
  const started = Date.now()
  try {
    await restoreBackup(ctx.store, id, scratch, {
      signers: ctx.signers,
      environment: ctx.environment,
      identity: await readIdentity(ctx.backup),
      confirmed: true,
      expectFingerprint,
    })
  } finally {
    await ctx.store.close()
  }
  const restoreMs = Date.now() - started
  events.info(`Backup ${id} restored into the scratch database ${scratch.name} in ${restoreMs} ms.`)
  return { restoreMs }
}
