/**
 * Restoring a verified backup into another database — a new server after the old one was lost, or
 * another name on the same server — with the same checks as a restore in place (the signature by a
 * trusted signer, the manifest's environment, the expected schema, the server and pg_restore not
 * older than the backup's, nobody connected), the load in one transaction, then a verify of what is
 * there afterwards: the schema fingerprint and row counts read again on a new session and compared
 * with the signed manifest.
 *
 * The target is a `postgres://user@host:port/name` URL or the name of another stack beside this
 * environment's (its `svcops:recording.database`). A URL never carries the password (it would be in
 * the process's arguments): it comes from `PGPASSWORD`, or from the libpq password file
 * (`PGPASSFILE`, else `~/.pgpass`, 0600), and is registered with the redaction layer when read.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { loadEnvironmentFile, requireSection, stackFilePath } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError, OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { registerSecret } from '../core/redact.ts'
import { compareRowCounts, rowCounts, schemaFingerprint } from '../drivers/fingerprint.ts'
import { databaseTarget, withDatabase, type DatabaseTarget } from '../drivers/postgres.ts'
import { openBackupContext } from './index.ts'
import { assertFingerprintFits, planRestore, restoreBackup, type RestoreReport } from './restore.ts'
import { readIdentity } from './keys.ts'
import { readManifest } from './verify-backup.ts'

/** `svcops backup restore ID --to-database TARGET`, as asked. */
export interface RestoreElsewhereRequest {
  id: string
  /** A postgres:// URL without a password, or the name of a stack beside this one. */
  to: string
  allowUnsigned?: boolean
  fromEnvironment?: string
  expectFingerprint?: string
}

/** What the restore did and what the verify afterwards read. */
export interface RestoreElsewhereReport extends RestoreReport {
  /** Where the target came from: the URL as given (it has no password), or `stack NAME (file)`. */
  source: string
  verified: { fingerprint: string; rows: number }
}

/** One line of a libpq password file: host:port:database:username:password, '\\' escaping ':' and '\\'. */
function pgpassFields(line: string): string[] {
  const fields = ['']
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (c === '\\' && i + 1 < line.length) fields[fields.length - 1] += line[++i]!
    else if (c === ':') fields.push('')
    else fields[fields.length - 1] += c
  }
  return fields
}

/** The password libpq would use for `target`: PGPASSWORD, else the matching line of the password file; registered as a secret. */
function passwordFor(target: Omit<DatabaseTarget, 'password'>): string | undefined {
  const fromEnv = process.env.PGPASSWORD
  if (fromEnv) return registerSecret(fromEnv)
  const file = process.env.PGPASSFILE || join(homedir(), '.pgpass')
  if (!existsSync(file)) return undefined
  if ((statSync(file).mode & 0o077) !== 0)
    throw new BadInputError(
      `--to-database: the password file '${file}' is readable by group or others; expected mode 0600 (as libpq does).`,
    )
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    if (line.startsWith('#') || line.trim() === '') continue
    const fields = pgpassFields(line)
    if (fields.length !== 5) continue
    const [host, port, name, user, password = ''] = fields
    const fits = (pattern: string | undefined, value: string) => pattern === '*' || pattern === value
    if (fits(host, target.host) && fits(port, String(target.port)) && fits(name, target.name) && fits(user, target.user))
      return registerSecret(password)
  }
  return undefined
}

/** The database `spec` names: a URL (no password in it) or another stack's `svcops:recording.database`. */
export function resolveRestoreTarget(env: Environment, spec: string): { target: DatabaseTarget; source: string } {
  if (/^postgres(ql)?:\/\//i.test(spec)) {
    let url: URL
    try {
      url = new URL(spec)
    } catch {
      throw new BadInputError(
        // Not echoed: a postgres:// string that does not parse may still hold a password.
        '--to-database: the postgres:// value given is not a valid URL; expected postgres://USER@HOST:PORT/DATABASE (the password in PGPASSWORD or PGPASSFILE).',
      )
    }
    if (url.password)
      throw new BadInputError(
        '--to-database: the URL holds a password, which would be visible in the process list; expected postgres://USER@HOST:PORT/DATABASE with the password in PGPASSWORD or the password file (PGPASSFILE, 0600).',
      )
    const name = decodeURIComponent(url.pathname.replace(/^\//, ''))
    const user = decodeURIComponent(url.username)
    if (!user || !url.hostname || !/^[A-Za-z0-9_][A-Za-z0-9_$-]{0,62}$/.test(name))
      throw new BadInputError(
        `--to-database: '${spec}' lacks ${!user ? 'the user' : !url.hostname ? 'the host' : 'a database name'}; expected postgres://USER@HOST:PORT/DATABASE.`,
      )
    const base = { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : 5432, name, user }
    const password = passwordFor(base)
    return { target: { ...base, ...(password !== undefined ? { password } : {}) }, source: spec }
  }
  const other = loadEnvironmentFile(stackFilePath(spec, dirname(env.file)), spec)
  const rec = requireSection(other, 'recording')
  return { target: databaseTarget(rec.database, `${other.file}: recording.database`), source: `stack ${spec} (${other.file})` }
}

/** Refuses the environment's own database: restoring there is `backup restore` without `--to-database` (a locked run). */
function refuseOwnDatabase(env: Environment, target: DatabaseTarget): void {
  const own = requireSection(env, 'recording').database
  if (own.host === target.host && own.port === target.port && own.name === target.name)
    throw new BadInputError(
      `--to-database: ${target.host}:${target.port}/${target.name} is the database of '${env.name}' itself; expected another server or database name.`,
      `To restore in place (a locked, journaled run): svcops backup restore ID --env ${env.name}`,
    )
}

/** The steps `restoreElsewhere` takes, for --dry-run: the checks, the load, the verify afterwards. */
export async function planRestoreElsewhere(env: Environment, req: RestoreElsewhereRequest): Promise<string[]> {
  const { target, source } = resolveRestoreTarget(env, req.to)
  refuseOwnDatabase(env, target)
  const ctx = await openBackupContext(env)
  try {
    const { manifest } = await readManifest(ctx.store, req.id, {
      signers: ctx.signers,
      allowUnsigned: req.allowUnsigned ?? false,
      environment: env.name,
      ...(req.fromEnvironment !== undefined ? { fromEnvironment: req.fromEnvironment } : {}),
    })
    assertFingerprintFits(manifest, req.expectFingerprint)
    return [
      `restore into ${target.user}@${target.host}:${target.port}/${target.name} (${source}), not the database of '${env.name}'`,
      ...planRestore(manifest, target),
      `verify afterwards on a new session: schema fingerprint and row counts of ${target.name} equal to the manifest's`,
    ]
  } finally {
    await ctx.store.close()
  }
}

/**
 * Restores backup `req.id` of `env`'s store into the database `req.to` names and verifies it
 * afterwards. The caller confirmed the target's tables are replaced. Not a run of `env`: the
 * environment's own database (where its lock and runs are kept) may be the one that was lost.
 */
export async function restoreElsewhere(env: Environment, req: RestoreElsewhereRequest): Promise<RestoreElsewhereReport> {
  const { target, source } = resolveRestoreTarget(env, req.to)
  refuseOwnDatabase(env, target)
  const backup = requireSection(env, 'backup')
  const ctx = await openBackupContext(env)
  try {
    const trust = {
      signers: ctx.signers,
      allowUnsigned: req.allowUnsigned ?? false,
      environment: env.name,
      ...(req.fromEnvironment !== undefined ? { fromEnvironment: req.fromEnvironment } : {}),
    }
    const { manifest } = await readManifest(ctx.store, req.id, trust)
    const identity = await readIdentity(backup)
    events.info(`Restoring backup ${req.id} into ${target.host}:${target.port}/${target.name} (${source}).`)
    const report = await restoreBackup(ctx.store, req.id, target, {
      ...trust,
      identity,
      confirmed: true,
      ...(req.expectFingerprint ? { expectFingerprint: req.expectFingerprint } : {}),
    })
    // The verify afterwards: what a new session reads there now is what the signed manifest says.
    const after = await withDatabase(target, async (c) => ({ fingerprint: await schemaFingerprint(c), counts: await rowCounts(c) }))
    const diff = compareRowCounts(manifest.rowCounts, after.counts)
    if (after.fingerprint !== manifest.fingerprint || diff.length)
      throw new OperationError(
        `The verify after restoring backup ${req.id} into ${target.host}:${target.port}/${target.name} failed: ${after.fingerprint !== manifest.fingerprint ? `schema fingerprint ${after.fingerprint.slice(0, 16)}… is not the manifest's ${manifest.fingerprint.slice(0, 16)}…` : `row counts differ (${diff.join(', ')})`}.`,
      )
    const rows = Object.values(after.counts).reduce((a, b) => a + b, 0)
    events.emit({
      kind: 'check',
      check: 'verify after the restore',
      ok: true,
      detail: `${rows} rows, fingerprint ${after.fingerprint.slice(0, 16)}…`,
    })
    return { ...report, source, verified: { fingerprint: after.fingerprint, rows } }
  } finally {
    await ctx.store.close()
  }
}
