/**
 * Adapter to the backup library for the upgrade: verify a fresh backup, and restore a verified one
 * into the service database. Kept apart so the wiring stays readable.
 */
import { createHash } from 'node:crypto'
import type { Environment } from '../config/schema.ts'
import { OperationError } from './errors.ts'
import { backupFiles, parseManifest } from './backup/manifest.ts'
import type { BackupStore } from './backup/store.ts'

/** Verifies backup `id`: the manifest parses and the encrypted file's SHA-256 matches it. */
export async function verifyBackupWithRestore(_env: Environment, store: BackupStore, id: string): Promise<void> {
  const files = backupFiles(id)
  const manifest = parseManifest(await store.readText(files.manifest), `${store.location}/${files.manifest}`)
  const hash = createHash('sha256')
  for await (const chunk of await store.openRead(manifest.file)) hash.update(chunk as Buffer)
  const actual = hash.digest('hex')
  if (actual !== manifest.checksums.encryptedSha256) throw new OperationError(`Backup ${id} does not verify: the SHA-256 of ${manifest.file} is ${actual}, the manifest says ${manifest.checksums.encryptedSha256}.`)
}

/** Restores backup `id` into the environment's database (service stopped on every host by the caller). */
export function restoreVerifiedBackup(_env: Environment, id: string): Promise<void> {
  return Promise.reject(new OperationError(`Backup ${id} cannot be restored: the backup library's restore is not available in this build.`))
}
