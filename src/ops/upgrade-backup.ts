/**
 * Adapter to the backup library for the upgrade: verify a fresh backup with a test restore, and
 * restore a verified one into the service database. Kept apart so the wiring stays readable.
 */
import type { Environment } from '../config/schema.ts'
import { OperationError } from './errors.ts'
import type { BackupStore } from './backup/store.ts'

/** Verifies backup `id` (checksum, decrypt, test restore, fingerprint and row counts compared). */
export function verifyBackupWithRestore(_env: Environment, _store: BackupStore, id: string): Promise<void> {
  return Promise.reject(new OperationError(`Backup ${id} cannot be verified: the backup library's verify is not available in this build.`))
}

/** Restores backup `id` into the environment's database (service stopped on every host by the caller). */
export function restoreVerifiedBackup(_env: Environment, id: string): Promise<void> {
  return Promise.reject(new OperationError(`Backup ${id} cannot be restored: the backup library's restore is not available in this build.`))
}
