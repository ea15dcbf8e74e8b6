/**
 * The shapes of what the recording playbooks' `once` steps journal, which a resume reuses instead
 * of acting again. The journal is kept with the environment (the service's database), where others
 * can write: the engine hands a reused entry on only once it matches its step's shape here
 * (`stepData` in src/runs/step.ts), and refuses one that does not with one sentence.
 * Fields a platform adds (its own preflight facts) are kept as they are and followed by nothing.
 */
import { z } from 'zod'
import { assertBackupId } from '../backup/manifest.ts'

/** A schema fingerprint as src/drivers/fingerprint.ts computes it. */
const fingerprint = z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lower-case hex digits')

/** True when `id` follows the backup store's rule for ids. */
function isBackupId(id: string): boolean {
  try {
    assertBackupId(id)
    return true
  } catch {
    return false
  }
}

/** A backup's id by the store's own rule. */
export const backupIdSchema = z.string().refine(isBackupId, 'expected an id of the backup store, like lab-20260101T020000Z-1a2b')

/** A host's name (the stack's), or a table's. */
const name = z.string().min(1).max(253)

/** A version as a host reports it: one line of text. */
const version = z
  .string()
  .max(200)
  .refine((v) => !/[\p{Cc}]/u.test(v), 'expected one line of text without control characters')

/** A count of things (recordings, rows). */
const count = z.number().int().nonnegative()

/** What the preflight journals: the version each target runs and the scopes granted (and the platform's own facts). */
export const preflightDataSchema = z.looseObject({
  versions: z.record(name, version),
  granted: z.array(z.string().max(200)).max(100).optional(),
})

/** What the backup step journals: the verified backup and the schema fingerprint it was taken on. */
export const backupDataSchema = z.object({ backupId: backupIdSchema, fingerprint })

/** What the content snapshot journals: how many recordings, the tables' row counts, when. */
export const snapshotDataSchema = z.object({
  count,
  rowCounts: z.record(name, count).optional(),
  takenAt: z.iso.datetime(),
})

/** What the export before a restore of an older backup journals: how many recordings it kept. */
export const exportDataSchema = z.object({ count })
