/**
 * Adapter to the backup library for the upgrade: a backup counts only once it passed the full
 * verification (signature, checksum, key, decrypt, test restore into a scratch database with fingerprint and
 * row counts compared); a rollback restores it over the service database, refusing a backup whose
 * schema is not the one the run recorded before it changed anything.
 */
import type { Environment } from '../config/schema.ts'
import { events } from '../core/events.ts'
import { assertVerified, createBackup, openBackupContext, readIdentity, restoreBackup, verifyBackup } from '../backup/index.ts'

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
