/**
 * Verifying a backup, in the order that makes each step safe: the manifest's signature by a trusted
 * signer (over the very bytes then parsed), the manifest (its own id and dump file), size and
 * SHA-256 of the stored file — checked piece by piece as the one read flows, each piece before it is
 * decrypted, or for backups whose manifest lists no pieces up front into a private copy (decrypt.ts)
 * — the private key against the recipients, then a full
 * decryption (OpenPGP integrity check and the dump's own SHA-256) and — with a restore test — a
 * complete restore into a scratch database whose row counts and schema fingerprint must equal the
 * manifest's. The report names the first check that failed. The result is kept beside the backup,
 * so prune can tell verified backups from unverified ones.
 */
import { randomBytes } from 'node:crypto'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import type * as openpgp from 'openpgp'
import { OperationError, SvcopsError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { compareRowCounts, rowCounts, schemaFingerprint } from '../drivers/fingerprint.ts'
import { CheckFailedError, checkedSource, decryptFailure, discard, openDecrypted, type CheckedSource } from './decrypt.ts'
import { checkManifestSignature, type SignatureCheck, type Signer } from './signing.ts'
import { loadIntoEmptyDatabase } from './backup-load.ts'
import { assertBackupId, backupFiles, parseManifest, type Manifest, type VerifyRecord } from './manifest.ts'
import {
  assertToolFits,
  clientConfig,
  connectDatabase,
  findPgTool,
  majorOf,
  serverVersion,
  type DatabaseTarget,
} from '../drivers/postgres.ts'
import { HashingTap } from './streams.ts'
import type { BackupStore } from './store.ts'

export interface VerifyCheck {
  check: string
  ok: boolean
  detail: string
}

export interface VerifyReport {
  id: string
  ok: boolean
  /** Name of the first check that failed. */
  failedCheck?: string
  checks: VerifyCheck[]
  restoreTest: boolean
  manifest?: Manifest
  durationMs: number
}

export interface VerifyOptions extends BackupTrust {
  /** Unlocked private key of a recipient (`readIdentity`). Without it only manifest and checksum are checked. */
  identity?: openpgp.PrivateKey
  /** Restore into a scratch database on this server (the user needs CREATEDB); dropped afterwards. */
  restoreTest?: { server: DatabaseTarget }
  /** Keep the result beside the backup (default true). */
  record?: boolean
}

/** Who is trusted to have made a backup, and for which environment. */
export interface BackupTrust {
  /** Trusted signers (`readSigners`): a backup counts only when one of them signed its manifest. */
  signers: Signer[]
  /** Accept a backup without a signature file (made before svcops signed backups); warned. Never for a bad signature. */
  allowUnsigned?: boolean
  /**
   * This environment: a backup whose signed manifest names another one is refused (signers are
   * often shared between environments, so a signature alone does not say whose data it is).
   */
  environment: string
  /** `--from-env`: accept a backup of this other environment, which must be the one its manifest names. */
  fromEnvironment?: string
}

/**
 * Refuses a backup of another environment unless `fromEnvironment` names exactly the manifest's
 * (restic's repository id, in spirit): one sentence naming both environments.
 */
export function assertEnvironmentFits(
  manifest: Pick<Manifest, 'id' | 'environment'>,
  trust: Pick<BackupTrust, 'environment' | 'fromEnvironment'>,
): void {
  const { id, environment: madeBy } = manifest
  if (trust.fromEnvironment !== undefined) {
    if (trust.fromEnvironment !== madeBy)
      throw new CheckFailedError(
        'environment',
        `--from-env: '${trust.fromEnvironment}' is not the environment of backup ${id}; its signed manifest names '${madeBy}'.`,
        `If it is meant: --from-env ${madeBy}`,
      )
    if (madeBy !== trust.environment)
      events.warn(`Backup ${id} of environment '${madeBy}' is used for '${trust.environment}' as --from-env asked.`)
    return
  }
  if (madeBy !== trust.environment)
    throw new CheckFailedError(
      'environment',
      `Backup ${id} belongs to environment '${madeBy}', not to '${trust.environment}' where it was asked for; it was refused.`,
      `If you mean to use it here: add --from-env ${madeBy}`,
    )
}

/** A manifest read from the store and checked, with who signed it (undefined: unsigned, accepted on request). */
export interface TrustedManifest {
  manifest: Manifest
  signedBy?: SignatureCheck
}

/**
 * Reads the manifest of `id` once, checks its signature over exactly those bytes, then parses them
 * (the id asked for, its own dump file, this environment's or the one `--from-env` names). Each
 * refusal is a CheckFailedError naming the check.
 */
export async function readManifest(store: BackupStore, id: string, trust: BackupTrust): Promise<TrustedManifest> {
  const files = backupFiles(assertBackupId(id))
  const where = `${store.location}/${files.manifest}`
  const refuse = (check: string, error: unknown): never => {
    if (error instanceof CheckFailedError || !(error instanceof SvcopsError)) throw error
    throw new CheckFailedError(check, error.message, 'Treat the store as tampered with: svcops backup list --env <env>')
  }
  if ((await store.size(files.manifest)) === undefined)
    throw new CheckFailedError('manifest', `There is no backup ${id} in ${store.location}.`, 'Run: svcops backup list --env <env>')
  const text = await store.readText(files.manifest).catch((error: unknown) => refuse('manifest', error))
  let signedBy: SignatureCheck | undefined
  if ((await store.size(files.signature)) === undefined) {
    if (!trust.allowUnsigned)
      throw new CheckFailedError(
        'signature',
        `Backup ${id} is not signed (no ${files.signature} in ${store.location}): made before svcops signed backups, or planted; it was refused.`,
        `If you know where it came from: svcops backup restore ${id} --allow-unsigned`,
      )
    events.warn(`Backup ${id} is not signed; it is used only because unsigned backups were explicitly allowed.`)
  } else {
    const signature = await store.readText(files.signature).catch((error: unknown) => refuse('signature', error))
    const check = await checkManifestSignature(Buffer.from(text, 'utf8'), signature, trust.signers)
    if (!check.signed)
      throw new CheckFailedError('signature', `Backup ${id} was refused: ${check.reason}.`, 'Treat the store as tampered with.')
    signedBy = check
  }
  let manifest: Manifest
  try {
    manifest = parseManifest(text, where, id)
  } catch (error) {
    return refuse('manifest', error)
  }
  // Checked on the signed bytes: the environment a backup was made for is part of what was signed.
  assertEnvironmentFits(manifest, trust)
  return { manifest, ...(signedBy ? { signedBy } : {}) }
}

/** Verifies backup `id`; never throws for a failed check — the report says which one failed. */
export async function verifyBackup(store: BackupStore, id: string, options: VerifyOptions): Promise<VerifyReport> {
  assertBackupId(id)
  const started = Date.now()
  const checks: VerifyCheck[] = []
  const pass = (check: string, detail: string): void => {
    checks.push({ check, ok: true, detail })
    events.emit({ kind: 'check', check, ok: true, detail })
  }
  let manifest: Manifest | undefined
  let source: CheckedSource | undefined
  try {
    const trusted = await readManifest(store, id, options)
    manifest = trusted.manifest
    pass(
      'signature',
      trusted.signedBy
        ? `signed by ${trusted.signedBy.fingerprint}${trusted.signedBy.userIds[0] ? ` (${trusted.signedBy.userIds[0]})` : ''}, a trusted signer`
        : 'NOT SIGNED: accepted only because unsigned backups were explicitly allowed',
    )
    pass('manifest', `${manifest.file}, ${manifest.sizes.encrypted} bytes, taken ${manifest.completedAt}`)
    source = await checkedSource(store, manifest)
    if (source.mode === 'copy') pass('checksum', source.summary())
    if (options.identity) {
      const dump = await openDecrypted(source, manifest, options.identity)
      try {
        pass('key', `${options.identity.getFingerprint().toUpperCase()} is a recipient`)
        if (options.restoreTest) await restoreTest(source, dump, manifest, options.restoreTest.server, pass)
        else await decryptOnly(source, dump, manifest, pass)
      } finally {
        dump.destroy() // a check that failed before the dump was read to its end leaves no read of the store open
      }
    } else if (source.mode === 'pieces') {
      await readChecked(source, manifest)
      pass('checksum', source.summary())
    }
  } catch (error) {
    if (!(error instanceof SvcopsError)) throw error
    const check = error instanceof CheckFailedError ? error.check : 'restore'
    checks.push({ check, ok: false, detail: error.message })
    events.emit({ kind: 'check', check, ok: false, detail: error.message })
  } finally {
    await source?.remove()
  }
  const failed = checks.find((c) => !c.ok)
  const report: VerifyReport = {
    id,
    ok: !failed,
    checks,
    restoreTest: Boolean(options.restoreTest),
    durationMs: Date.now() - started,
    ...(failed ? { failedCheck: failed.check } : {}),
    ...(manifest ? { manifest } : {}),
  }
  if (manifest && (options.record ?? true) && (options.identity || failed)) {
    const record: VerifyRecord = {
      id,
      verifiedAt: new Date().toISOString(),
      ok: report.ok,
      restoreTest: report.restoreTest,
      ...(failed ? { failedCheck: failed.check } : {}),
    }
    await store.writeText(backupFiles(id).verified, JSON.stringify(record, null, 2) + '\n')
  }
  return report
}

/** Throws an OperationError naming the failed check (for callers that must stop on a bad backup). */
export function assertVerified(report: VerifyReport): void {
  const failed = report.checks.find((c) => !c.ok)
  if (failed)
    throw new OperationError(
      `Backup ${report.id} failed the check '${failed.check}': ${failed.detail}`,
      `Run: svcops backup verify ${report.id} --restore-test`,
    )
}

function checkDumpHash(manifest: Manifest, bytes: number, sha256: string): void {
  if (sha256 !== manifest.checksums.dumpSha256 || bytes !== manifest.sizes.dump) {
    throw new CheckFailedError(
      'decrypt',
      `The decrypted dump has ${bytes} bytes with SHA-256 ${sha256}; the manifest says ${manifest.sizes.dump} bytes with ${manifest.checksums.dumpSha256}.`,
    )
  }
}

/** Reads the stored file to its end through its checks (a verify without the private key). */
async function readChecked(source: CheckedSource, manifest: Manifest): Promise<void> {
  try {
    await pipeline(await source.open(), discard())
  } catch (error) {
    throw decryptFailure(manifest, error, source)
  }
}

/** In `pieces` mode the checksum check passes once every piece was read and matched. */
function passChecksum(source: CheckedSource, pass: (check: string, detail: string) => void): void {
  if (source.mode === 'pieces' && source.complete()) pass('checksum', source.summary())
}

/** The failure of a read that flowed; every piece having matched is reported first (the cause lies after). */
function flowFailure(
  source: CheckedSource,
  manifest: Manifest,
  error: unknown,
  pass: (check: string, detail: string) => void,
): CheckFailedError {
  const failure = decryptFailure(manifest, error, source)
  if (failure.check !== 'checksum' && failure.check !== 'size') passChecksum(source, pass)
  return failure
}

async function decryptOnly(
  source: CheckedSource,
  dump: Readable,
  manifest: Manifest,
  pass: (check: string, detail: string) => void,
): Promise<void> {
  const tap = new HashingTap()
  try {
    await pipeline(dump, tap, discard())
  } catch (error) {
    throw flowFailure(source, manifest, error, pass)
  }
  passChecksum(source, pass)
  checkDumpHash(manifest, tap.bytes, tap.digest())
  pass('decrypt', `integrity check passed; ${tap.bytes} bytes of pg_dump output match the manifest's SHA-256`)
}

async function restoreTest(
  source: CheckedSource,
  dump: Readable,
  manifest: Manifest,
  server: DatabaseTarget,
  pass: (check: string, detail: string) => void,
): Promise<void> {
  const pgRestore = await findPgTool('pg_restore')
  assertToolFits(pgRestore, manifest.versions.pgDump, Number(manifest.versions.pgDump.split('.')[0]), 'the pg_dump that made the backup')
  const admin = await connectDatabase(server)
  const scratch = `svcops_verify_${randomBytes(4).toString('hex')}`
  try {
    const version = await serverVersion(admin)
    if (majorOf(version.num) < majorOf(manifest.versions.serverNum)) {
      throw new CheckFailedError(
        'restore',
        `The scratch server ${server.host}:${server.port} runs PostgreSQL ${version.text}, older than the backup's ${manifest.versions.server}.`,
      )
    }
    try {
      await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(scratch)}`)
    } catch (error) {
      throw new CheckFailedError(
        'restore',
        `Could not create the scratch database ${scratch} on ${server.host}:${server.port} as ${server.user}: ${(error as Error).message}.`,
        `Grant it with: ALTER ROLE ${server.user} CREATEDB`,
      )
    }
    const loaded = await events.step(`test restore into scratch database ${scratch}`, async () => {
      try {
        return await loadIntoEmptyDatabase(manifest, dump, pgRestore, server, scratch)
      } catch (error) {
        // A piece that differs cuts pg_restore's input short: the piece is the cause, not pg_restore.
        throw source.failure() ?? error
      }
    })
    passChecksum(source, pass)
    checkDumpHash(manifest, loaded.dumpBytes, loaded.dumpSha256)
    pass('decrypt', `integrity check passed; ${loaded.dumpBytes} bytes of pg_dump output match the manifest's SHA-256`)
    pass('restore', `pg_restore into ${scratch} on ${server.host}:${server.port} succeeded`)
    const config = clientConfig(server, scratch)
    const schemas = manifest.schemas.length > 0 ? { schemas: manifest.schemas } : {}
    const differences = compareRowCounts(manifest.rowCounts, await rowCounts(config, schemas))
    if (differences.length > 0)
      throw new CheckFailedError('row counts', `The restored database differs from the manifest: ${differences.slice(0, 5).join('; ')}.`)
    const total = Object.values(manifest.rowCounts).reduce((a, b) => a + b, 0)
    pass('row counts', `${Object.keys(manifest.rowCounts).length} tables, ${total} rows, equal to the manifest`)
    const fingerprint = await schemaFingerprint(config, schemas)
    if (fingerprint !== manifest.fingerprint)
      throw new CheckFailedError(
        'fingerprint',
        `The restored schema's fingerprint is ${fingerprint}; the manifest says ${manifest.fingerprint}.`,
      )
    pass('fingerprint', `schema fingerprint ${fingerprint.slice(0, 16)}… equals the manifest`)
  } finally {
    await admin
      .query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(scratch)} WITH (FORCE)`)
      .catch((error: Error) => events.warn(`could not drop the scratch database ${scratch}: ${error.message}`))
    await admin.end().catch(() => undefined)
  }
}
