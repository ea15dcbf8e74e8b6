/**
 * The shapes of what the live playbooks' steps journal and a resume or a rollback reads back. The
 * journal is kept with the environment (the live host, a ConfigMap), where others can write: an
 * entry is followed only once it matches its step's shape here (`stepData` in src/runs/step.ts),
 * and what it names is then checked against the stack (`assertRestorable` in
 * hosts/live-host-config.ts).
 */
import { z } from 'zod'

/**
 * A backup's name in the run folder: `backup/NAME`, NAME a plain file name (no `/`, not `.` or
 * `..`), so that it never names a file outside the run's own backup folder.
 */
export const BACKUP_NAME = /^backup\/(?!\.\.?$)[\w.-]{1,255}$/

/** A SHA-256 as the backup step writes it. */
const SHA256 = /^[0-9a-f]{64}$/

/** One file the backup step of a run on hosts kept: where it is, whether it existed, its copy and checksum (never its content). */
export const backedUpFileSchema = z
  .object({
    /** The host the file is on (absent: the controller's host, as records of one host were written). */
    host: z.string().min(1).optional(),
    path: z.string().min(1),
    existed: z.boolean(),
    backup: z
      .string()
      .regex(BACKUP_NAME, "expected backup/NAME, a plain file name in the run's backup folder (no '/', no '..')")
      .optional(),
    sha256: z.string().regex(SHA256, 'expected 64 lower-case hex digits').optional(),
  })
  .refine((f) => !f.existed || f.backup !== undefined, {
    message: 'expected the name of its copy for a file that existed',
    path: ['backup'],
  })
  .refine((f) => !f.existed || f.sha256 !== undefined, {
    message: 'expected the SHA-256 of its copy for a file that existed',
    path: ['sha256'],
  })

export type BackedUpFile = z.infer<typeof backedUpFileSchema>

/** The stack file's values the backup step of a run on Kubernetes kept. */
const stackValuesSchema = z.object({
  version: z
    .string()
    .regex(/^v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/, 'expected a version like 6.0.0')
    .nullable(),
  // A site may name its rotations as it likes; what goes back into the stack file is one line of text.
  pskRotation: z
    .string()
    .min(1)
    .max(256)
    .refine((v) => !/[\p{Cc}]/u.test(v), 'expected one line of text without control characters')
    .nullable(),
})

/**
 * What the backup step journals: the files kept (hosts), or the stack file's values (Kubernetes).
 * Other fields are kept as they are (a platform may journal more) and followed by nothing here.
 */
export const liveBackupDataSchema = z.looseObject({
  files: z.array(backedUpFileSchema).max(1000).optional(),
  stackFile: stackValuesSchema.optional(),
})

export type LiveBackupData = z.infer<typeof liveBackupDataSchema>

/** What a start journals: where its check reads the log from (a resume's check reads it back). */
export const startDataSchema = z.object({ logCursor: z.string().max(4096).optional() })

/**
 * What the check of what a rollback needs journals: the facts its platform proved (on Kubernetes the
 * image each component ran, `images`), which a later check of the same run reads back.
 */
export const readyDataSchema = z.looseObject({
  ready: z.boolean().optional(),
  images: z.record(z.string(), z.object({ image: z.string(), imageID: z.string(), pod: z.string() })).optional(),
})

/** One line of text a platform or a host reports (a version, a gate's detail): no control characters. */
const line = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => !/[\p{Cc}]/u.test(v), 'expected one line of text without control characters')

/**
 * What the preflight journals: the release installed before the run, each unit's version, and the
 * room it read. Its platform's own facts (on Kubernetes `cluster`) are kept as they are and followed by nothing.
 */
export const preflightDataSchema = z.looseObject({
  from: line(200),
  versions: z.record(z.string().min(1).max(253), line(200)),
  room: z
    .array(z.looseObject({ host: z.string().max(253) }))
    .max(1000)
    .optional(),
})

/** What the gates journal: each gate the run crossed and how it was cleared. */
export const gatesDataSchema = z.object({
  gates: z
    .array(z.object({ id: line(200), state: z.enum(['checked', 'acknowledged', 'blocked']), detail: z.string().max(10_000) }))
    .max(1000),
})

/** The names of the steps that write and put back the configuration (their data: `configDataSchema`). */
export const CONFIG_STEPS = { write: 'write-config', restore: 'restore-config' } as const

/**
 * What writing or putting back the configuration journals. On Kubernetes a change of the stack's
 * pskRotation (`from`, `to`: each one line, as the backup keeps it), which lets the preview show
 * the PSK's resources changing; other platforms' fields are kept as they are and followed by nothing.
 */
export const configDataSchema = z.looseObject({
  pskRotation: z.object({ from: line(256), to: line(256) }).optional(),
})
