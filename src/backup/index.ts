/**
 * The backup API the CLI and the playbooks call. An environment's `recording.database` and
 * `backup` sections go in; manifests, verification reports and restore reports come out.
 *
 *   const ctx = await openBackupContext(env)
 *   const manifest = await createBackup({ ...ctx.createOptions, signer: await ctx.signingKey(), serviceVersions })
 *   const report = await verifyBackup(ctx.store, manifest.id, { signers: ctx.signers, identity: await readIdentity(ctx.backup), restoreTest: { server: ctx.database } })
 *   await restoreBackup(ctx.store, manifest.id, ctx.database, { signers: ctx.signers, identity, confirmed: true, expectFingerprint })
 *
 * Verify and restore refuse a backup whose manifest no trusted signer signed (`allowUnsigned` lets
 * an old, unsigned one through on request), and decrypt and load only the private copy whose size
 * and SHA-256 they checked.
 */
import { requireSection } from '../config/load.ts'
import type { BackupConfig, Environment } from '../config/schema.ts'
import { DEFAULT_COMPRESSION_LEVEL, type CreateBackupOptions } from './create.ts'
import { readRecipients } from './keys.ts'
import { databaseTarget, type DatabaseTarget } from '../drivers/postgres.ts'
import { readSigners, readSigningKey, type Signer, type SigningKey } from './signing.ts'
import { openStore, type BackupStore } from './store.ts'

export { createBackup, planBackup, DEFAULT_COMPRESSION_LEVEL, type CreateBackupOptions } from './create.ts'
export {
  verifyBackup,
  assertVerified,
  readManifest,
  type BackupTrust,
  type TrustedManifest,
  type VerifyReport,
  type VerifyCheck,
  type VerifyOptions,
} from './verify-backup.ts'
export { readSigners, readSigningKey, type Signer, type SigningKey } from './signing.ts'
export { restoreBackup, planRestore, assertFingerprintFits, type RestoreOptions, type RestoreReport } from './restore.ts'
export {
  listBackups,
  pruneBackups,
  planPrune,
  heldBackups,
  deleteBackup,
  planDeleteBackup,
  type BackupEntry,
  type PruneOptions,
  type PrunePlan,
} from './prune.ts'
export { generateBackupKey, readIdentity, readRecipients, GNUPG22_CONFIG, type Recipient, type GeneratedKeyPair } from './keys.ts'
export { openStore, LocalStore, type BackupStore } from './store.ts'
export { databaseTarget, clientConfig, type DatabaseTarget } from '../drivers/postgres.ts'
export { CheckFailedError } from './decrypt.ts'
export type { Manifest, VerifyRecord } from './manifest.ts'
export { schemaFingerprint, rowCounts, describeSchema, compareRowCounts } from '../drivers/fingerprint.ts'

export interface BackupContext {
  environment: string
  backup: BackupConfig
  store: BackupStore
  /** The recording service database (password read and registered). */
  database: DatabaseTarget
  /** Trusted signers (`backup.signers`, else the recipients): what verify and restore accept. */
  signers: Signer[]
  /** Reads and unlocks the signing key (a secret: read only by the commands that back up). */
  signingKey(): Promise<SigningKey>
  /** Everything `createBackup` needs except the signing key and what the caller knows better (service versions). */
  createOptions: Omit<CreateBackupOptions, 'signer'>
}

/**
 * Reads what backup commands need from an environment: the store, the service database and the
 * recipients. Fails on missing sections with the field named. The store must be closed by the caller.
 */
export async function openBackupContext(env: Environment): Promise<BackupContext> {
  const backup = requireSection(env, 'backup')
  const recording = requireSection(env, 'recording')
  const database = databaseTarget(recording.database)
  const recipients = await readRecipients(backup.recipients)
  const signers = await readSigners(backup)
  const store = await openStore(backup)
  const level = backup.compression ?? DEFAULT_COMPRESSION_LEVEL
  const serviceVersions = Object.fromEntries(recording.hosts.map((h) => [h.name, recording.version]))
  return {
    environment: env.name,
    backup,
    store,
    database,
    signers,
    signingKey: () => readSigningKey(backup, signers),
    createOptions: {
      store,
      database,
      recipients,
      environment: env.name,
      compressionLevel: level,
      serviceVersions,
      serviceVersionsSource: 'config',
    },
  }
}
