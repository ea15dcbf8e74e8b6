/**
 * What the upgrade needs from other parts of svcops, as three narrow interfaces: the recording
 * service's API (through the manager's bearer tokens), the backup library (create + verify with a
 * restore test, restore), and the database facts (schema fingerprint, row counts, privileges,
 * size). `openUpgradeDeps` wires the real ones; this is the one adapter between them and the runbooks.
 */
import type { ContentApi } from './content-snapshot.ts'

export interface BackupApi {
  /** Creates an encrypted backup and verifies it with a test restore; resolves with its id only when verified. */
  createVerified(serviceVersions: Record<string, string>): Promise<{ id: string; fingerprint: string }>
  /**
   * Restores backup `id` into the service database (every service host is stopped by the caller);
   * refuses one whose schema is not `expectFingerprint`. The environment lock's row, kept in that
   * database, is there again after it.
   */
  restore(id: string, expectFingerprint?: string): Promise<void>
  /** What a restore of backup `id` would miss (manifest, trusted signature, environment, schema, dump), read only; undefined when nothing. */
  findRestoreProblem(id: string, expectFingerprint?: string): Promise<string | undefined>
  /** Bytes free in the backup store. */
  freeBytes(): Promise<number>
}

/**
 * The check `mayChangeSchema` answers, by the name the doctor's cause gives it (src/recording/doctor/migration.ts
 * takes its id and words from here), so a refusal before a migration names the doctor's check.
 */
export const SCHEMA_CHANGE_PERMISSION = {
  id: 'schema-change-permission',
  check: "the service's role owns (or is a member of the owner of) every table of its schema, and may CREATE in it",
} as const

export interface DatabaseFacts {
  /** Stable hash of the service's schema (equal across dump/restore, different after a migration). */
  fingerprint(): Promise<string>
  rowCounts(): Promise<Record<string, number>>
  /** Size of the service database in bytes. */
  sizeBytes(): Promise<number>
  /** Whether the configured role may change the schema (migrations run with it). */
  mayChangeSchema(): Promise<{ ok: boolean; detail: string }>
}

export interface UpgradeDeps {
  content: ContentApi & {
    /** Checks that the manager grants the scopes the run needs (read and write of content). */
    checkAuth(): Promise<string[]>
  }
  backup: BackupApi
  database: DatabaseFacts
  /** Logs out of the manager (issued access tokens stay valid until they expire). */
  close(): Promise<void>
}
