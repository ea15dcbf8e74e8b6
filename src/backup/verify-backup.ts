/**
 * Verifying a backup, in the order that makes each step safe: the manifest's signature by a trusted
 * signer (over the very bytes then parsed), the manifest (its own id and dump file), size and
 * SHA-256 of the stored file, read once into a private copy (before anything is decrypted; all later
 * steps read that copy), the private key against the recipients, then a full
 * decryption (OpenPGP integrity check and the dump's own SHA-256) and — with a restore test — a
 * complete restore into a scratch database whose row counts and schema fingerprint must equal the
 * manifest's. The report names the first check that failed. The result is kept beside the backup,
 * so prune can tell verified backups from unverified ones.
 */
import { randomBytes } from 'node:crypto'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import type * as openpgp from 'openpgp'
import { OperationError, SvcopsError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { compareRowCounts, rowCounts, schemaFingerprint } from '../drivers/fingerprint.ts'
import { CheckFailedError, checkedCopy, checkRecipientKey, decryptFailure, discard, openDecrypted, type CheckedCopy } from './decrypt.ts'
import { checkManifestSignature, type SignatureCheck, type Signer } from './signing.ts'
import { loadIntoEmptyDatabase } from './load.ts'
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

/** Who is trusted to have made a backup. */
export interface BackupTrust {
  /** Trusted signers (`readSigners`): a backup counts only when one of them signed its manifest. */
  signers: Signer[]
  /** Accept a backup without a signature file (made before svcops signed backups); warned. Never for a bad signature. */
  allowUnsigned?: boolean
}

/** A manifest read from the store and checked, with who signed it (undefined: unsigned, accepted on request). */
export interface TrustedManifest {
  manifest: Manifest
  signedBy?: SignatureCheck
}

/**
 * Reads the manifest of `id` once, checks its signature over exactly those bytes, then parses them
 * (the id asked for, its own dump file). Each refusal is a CheckFailedError naming the check.
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
  try {
    return { manifest: parseManifest(text, where, id), ...(signedBy ? { signedBy } : {}) }
  } catch (error) {
    return refuse('manifest', error)
  }
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
  let copy: CheckedCopy | undefined
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
    copy = await checkedCopy(store, manifest)
    pass('checksum', `SHA-256 ${copy.sha256} of ${copy.size} bytes matches the manifest`)
    if (options.identity) {
      await checkRecipientKey(copy, manifest, options.identity)
      pass('key', `${options.identity.getFingerprint().toUpperCase()} is a recipient`)
      if (options.restoreTest) await restoreTest(copy, manifest, options.identity, options.restoreTest.server, pass)
      else await decryptOnly(copy, manifest, options.identity, pass)
    }
  } catch (error) {
    if (!(error instanceof SvcopsError)) throw error
    const check = error instanceof CheckFailedError ? error.check : 'restore'
    checks.push({ check, ok: false, detail: error.message })
    events.emit({ kind: 'check', check, ok: false, detail: error.message })
  } finally {
    await copy?.remove()
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

async function decryptOnly(
  copy: CheckedCopy,
  manifest: Manifest,
  identity: openpgp.PrivateKey,
  pass: (check: string, detail: string) => void,
): Promise<void> {
  const tap = new HashingTap()
  try {
    await pipeline(await openDecrypted(copy, manifest, identity), tap, discard())
  } catch (error) {
    throw decryptFailure(manifest, error)
  }
  checkDumpHash(manifest, tap.bytes, tap.digest())
  pass('decrypt', `integrity check passed; ${tap.bytes} bytes of pg_dump output match the manifest's SHA-256`)
}

async function restoreTest(
  copy: CheckedCopy,
  manifest: Manifest,
  identity: openpgp.PrivateKey,
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
      const dump = await openDecrypted(copy, manifest, identity)
      return loadIntoEmptyDatabase(manifest, dump, pgRestore, server, scratch)
    })
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
