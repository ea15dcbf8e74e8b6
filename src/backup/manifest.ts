/**
 * The manifest of a backup: one JSON file beside the encrypted dump, written last. Its presence is
 * what makes a backup exist — a dump without a manifest (interrupted, disk full) is never listed.
 * Read back through a zod schema so a hand-edited or foreign file is refused with the field named.
 */
import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import { BadInputError } from '../core/errors.ts'

export const MANIFEST_FORMAT = 'svcops-backup/1'

const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lower-case hex digits')

export const manifestSchema = z.object({
  format: z.literal(MANIFEST_FORMAT),
  id: z.string().min(1),
  environment: z.string().min(1),
  /** When pg_dump started and when the dump was synced to the store (ISO 8601, UTC). */
  startedAt: z.string(),
  completedAt: z.string(),
  /** Name of the encrypted dump in the store. */
  file: z.string().min(1),
  database: z.object({ host: z.string(), port: z.number(), name: z.string(), user: z.string() }),
  /** Recording service version per host at backup time, and where that knowledge came from. */
  serviceVersions: z.record(z.string(), z.string()),
  serviceVersionsSource: z.enum(['hosts', 'config', 'unknown']),
  versions: z.object({ server: z.string(), serverNum: z.number().int(), pgDump: z.string() }),
  /** Schemas covered by the fingerprint and the row counts (empty: every non-system schema). */
  schemas: z.array(z.string()),
  fingerprint: sha256,
  rowCounts: z.record(z.string(), z.number().int().min(0)),
  /**
   * How the pg_dump custom-format archive was compressed: `zstd` — pg_dump wrote it uncompressed and
   * the whole archive is one zstd stream inside the OpenPGP message (`gpg --decrypt | zstd -d |
   * pg_restore`); `pg_dump-zlib` — pg_dump's own zlib at this level, 0 for none (`gpg --decrypt |
   * pg_restore`; every backup made before zstd).
   */
  compression: z.discriminatedUnion('method', [
    z.object({ method: z.literal('zstd'), level: z.number().int().min(1).max(19) }),
    z.object({ method: z.literal('pg_dump-zlib'), level: z.number().int().min(0).max(9) }),
  ]),
  encryption: z.object({
    standard: z.literal('OpenPGP'),
    recipients: z.array(z.object({ fingerprint: z.string(), userIds: z.array(z.string()) })).min(1),
  }),
  sizes: z.object({ dump: z.number().int().min(0), encrypted: z.number().int().min(0) }),
  checksums: z.object({
    /** SHA-256 of the file in the store (the ciphertext): checked before anything is decrypted. */
    encryptedSha256: sha256,
    /** SHA-256 of the decrypted pg_dump output. */
    dumpSha256: sha256,
    /**
     * SHA-256 of each `size`-byte piece of the stored file, in order (backups made since signing
     * began to list them): a reader checks every piece before it is decrypted, in one read. Backups
     * without it are checked through a private copy.
     */
    encryptedPieces: z.object({ size: z.number().int().min(1), sha256: z.array(sha256) }).optional(),
  }),
})
export type Manifest = z.infer<typeof manifestSchema>

/** Result of the last verification of a backup, kept beside it (`<id>.verified.json`). */
export const verifyRecordSchema = z.object({
  id: z.string(),
  verifiedAt: z.string(),
  ok: z.boolean(),
  restoreTest: z.boolean(),
  failedCheck: z.string().optional(),
})
export type VerifyRecord = z.infer<typeof verifyRecordSchema>

/** File names of one backup in the store. */
export function backupFiles(id: string): { dump: string; manifest: string; signature: string; verified: string } {
  return { dump: `${id}.dump.pgp`, manifest: `${id}.manifest.json`, signature: `${id}.manifest.json.sig`, verified: `${id}.verified.json` }
}

const ID = /^[a-z0-9][a-z0-9_-]*-\d{8}T\d{6}Z-[0-9a-f]{4}$/

/** A new backup id: environment, UTC time to the second, and a random suffix (two runs in one second). */
export function newBackupId(environment: string, at = new Date()): string {
  const stamp = at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
  return `${environment}-${stamp}-${randomBytes(2).toString('hex')}`
}

/** Refuses anything that is not a backup id (ids become file names in the store). */
export function assertBackupId(id: string): string {
  if (!ID.test(id))
    throw new BadInputError(
      `backup id: '${id}' is not a backup id; expected one like prod-20260101T020000Z-1a2b, as printed by 'svcops backup list'.`,
      'Run: svcops backup list --env <env>',
    )
  return id
}

/**
 * Parses a manifest's text; `where` names the file in the error. With `expectedId`, the manifest
 * must describe that very backup and name its own dump, `<id>.dump.pgp` in the store directory: a
 * manifest is read from a store others may write to, and its `file` becomes a path to read.
 */
export function parseManifest(text: string, where: string, expectedId?: string): Manifest {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    throw new BadInputError(`${where}: is not valid JSON; expected a backup manifest.`)
  }
  const result = manifestSchema.safeParse(raw)
  if (!result.success) {
    const issue = result.error.issues[0]
    throw new BadInputError(
      `${where}: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'}; expected a ${MANIFEST_FORMAT} manifest.`,
    )
  }
  const manifest = result.data
  if (expectedId !== undefined) {
    if (manifest.id !== expectedId)
      throw new BadInputError(`${where}: id: '${manifest.id}' is not the backup asked for; expected '${expectedId}'.`)
    const dump = backupFiles(expectedId).dump
    if (manifest.file !== dump)
      throw new BadInputError(
        `${where}: file: '${manifest.file}' is not this backup's dump; expected '${dump}' in the store directory (a manifest never names another path).`,
      )
  }
  return manifest
}

/**
 * Refuses a store file name that is not a plain name in the store directory: no directory part,
 * no `.` or `..`, no NUL. Every store path is built through this.
 */
export function assertPlainName(name: string, location: string): string {
  if (name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name))
    throw new BadInputError(`'${name}' is not a file name inside the backup store ${location}; expected a plain name (no '/', no '..').`)
  return name
}
