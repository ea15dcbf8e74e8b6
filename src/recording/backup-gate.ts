/**
 * Adapter to the backup library for the upgrade: a backup counts only once it passed the full
 * verification (signature, checksum, key, decrypt, test restore into a scratch database with fingerprint and
 * row counts compared); a rollback restores it over the service database, refusing a backup whose
 * schema is not the one the run recorded before it changed anything.
 */
import type { Environment } from '../config/schema.ts'
import { events } from '../core/events.ts'
import {
  assertFingerprintFits,
  assertVerified,
  createBackup,
  openBackupContext,
  readIdentity,
  restoreBackup,
  verifyBackup,
} from '../backup/index.ts'
import { readManifest } from '../backup/verify-backup.ts'
import { errorMessage } from '../core/errors.ts'

/** Creates a backup of the environment's service database and verifies it with a test restore. */
export async function createVerifiedBackup(
  env: Environment,
  serviceVersions: Record<string, string>,
): Promise<{ id: string; fingerprint: string }> {
  const ctx = await openBackupContext(env)
  try {
    const manifest = await createBackup({
      ...ctx.createOptions,
      signer: await ctx.signingKey(),
      serviceVersions,
      serviceVersionsSource: 'hosts',
    })
    const identity = await readIdentity(ctx.backup)
    const trust = { signers: ctx.signers, environment: ctx.environment }
    let report = await verifyBackup(ctx.store, manifest.id, { ...trust, identity, restoreTest: { server: ctx.database } })
    const denied = report.checks.find((c) => !c.ok && c.check === 'restore' && /permission denied to create database/i.test(c.detail))
    if (denied) {
      // A role without CREATEDB cannot test-restore; the decrypted dump is still checked byte for byte.
      events.warn(
        `The test restore of backup ${manifest.id} needs CREATEDB for ${ctx.database.user}; verifying by checksum, key and a full decrypt against the manifest's dump hash instead.`,
      )
      report = await verifyBackup(ctx.store, manifest.id, { ...trust, identity })
    }
    assertVerified(report)
    return { id: manifest.id, fingerprint: manifest.fingerprint }
  } finally {
    await ctx.store.close()
  }
}

/**
 * Restores backup `id` over the service database (every service host stopped by the caller). The
 * backup library refuses one that no trusted signer signed; an automatic rollback never accepts an
 * unsigned backup.
 */
export async function restoreVerifiedBackup(env: Environment, id: string, expectFingerprint: string | undefined): Promise<void> {
  const ctx = await openBackupContext(env)
  try {
    await restoreBackup(ctx.store, id, ctx.database, {
      signers: ctx.signers,
      environment: ctx.environment,
      identity: await readIdentity(ctx.backup),
      confirmed: true,
      ...(expectFingerprint ? { expectFingerprint } : {}),
    })
  } finally {
    await ctx.store.close()
  }
}

/**
 * What a restore of backup `id` needs, read without restoring: its manifest present and signed by a
 * trusted signer, made for this environment, of the schema `expectFingerprint`, and its dump in the
 * store at the manifest's size. Returns the one sentence of what is missing, or undefined when it is
 * all there (the precondition of a rollback that may restore, checked before anything stops).
 */
export async function findRestoreProblem(env: Environment, id: string, expectFingerprint: string | undefined): Promise<string | undefined> {
  const ctx = await openBackupContext(env)
  try {
    const { manifest } = await readManifest(ctx.store, id, { signers: ctx.signers, environment: ctx.environment })
    assertFingerprintFits(manifest, expectFingerprint)
    const size = await ctx.store.size(manifest.file)
    if (size === undefined) return `the dump ${manifest.file} of backup ${id} is not in ${ctx.store.location}`
    if (size !== manifest.sizes.encrypted)
      return `the dump ${manifest.file} of backup ${id} has ${size} bytes, not the ${manifest.sizes.encrypted} its manifest says`
    return undefined
  } catch (error) {
    return errorMessage(error).replace(/\.$/, '')
  } finally {
    await ctx.store.close()
  }
}
