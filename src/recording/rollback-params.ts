/**
 * What a rollback of the recording service takes from its run's record, checked before it follows
 * any of it: the record is kept with the environment (the service's database), where others can
 * write, and it names the backup restored, the version each host goes back to and the recordings
 * counted as there before the backup. The hosts come from the stack, the backup id from the store's
 * own rule (src/backup/manifest.ts), versions and snapshot keys from the shapes svcops writes; one
 * sentence names the first field that is not so.
 */
import { BadInputError } from '../core/errors.ts'
import { assertBackupId } from '../backup/manifest.ts'
import type { RecordingContext } from './recording-context.ts'

/** A version as svcops records it (the packages' `MAJOR.MINOR.PATCH`, a pre-release or build suffix allowed). */
const VERSION = /^\d{1,6}\.\d{1,6}\.\d{1,6}(?:[-+][0-9A-Za-z.-]{1,64})?$/

/** A schema fingerprint as src/drivers/fingerprint.ts computes it. */
const FINGERPRINT = /^[0-9a-f]{64}$/

/** A snapshot key as `identityKey` writes it: the service's id, at most 200 printable characters. */
const ID_KEY = /^id:[\x21-\x7e]{1,200}$/

/** True when `key` is a snapshot key svcops writes: `id:ID`, or the JSON of a recording's creation fields (`contentKey`). */
export function isSnapshotKey(key: string): boolean {
  if (ID_KEY.test(key)) return true
  if (key.length > 4096 || !key.startsWith('[')) return false
  try {
    const fields = JSON.parse(key) as unknown
    return (
      Array.isArray(fields) &&
      fields.length === 4 &&
      typeof fields[0] === 'string' &&
      typeof fields[1] === 'string' &&
      Number.isFinite(fields[2]) &&
      Number.isFinite(fields[3])
    )
  } catch {
    return false
  }
}

/** One field of the record, refused. */
function refused(runId: string, field: string, why: string): BadInputError {
  return new BadInputError(
    `Run ${runId}: ${field}: ${why}; svcops does not follow it.`,
    `Look at the run: svcops runs show ${runId} (its record was changed by something other than svcops); nothing was changed.`,
  )
}

/** A value as the sentence shows it: short, quoted, whatever it is. */
function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value)
  return `'${text.length > 80 ? `${text.slice(0, 80)}...` : text}'`
}

/**
 * Refuses the run's params that a rollback would follow when they are not what svcops writes: the
 * backup id (the store's rule), each host of `previousVersions` (one the stack names) and its
 * version, the fingerprints, and the snapshot's keys (well-formed, fewer than the content limit,
 * as a snapshot refuses a list at the limit).
 */
export function assertRollbackParams(ctx: RecordingContext): void {
  const { id, params } = ctx.journal.run
  if (params.backupId !== undefined) {
    try {
      assertBackupId(params.backupId)
    } catch {
      throw refused(
        id,
        'params.backupId',
        `${shown(params.backupId)} is not an id of the backup store; expected one like ${ctx.env.name}-20260101T020000Z-1a2b`,
      )
    }
  }
  const hosts = new Set(ctx.allTargets.map((t) => t.name))
  for (const [host, version] of Object.entries(params.previousVersions)) {
    if (!hosts.has(host))
      throw refused(id, 'params.previousVersions', `${shown(host)} is not a host the stack names (${[...hosts].join(', ')})`)
    if (!VERSION.test(version))
      throw refused(id, `params.previousVersions.${host}`, `${shown(version)} is not a version; expected one like 1.5.0`)
  }
  for (const field of ['fingerprintBefore', 'fingerprintAfter'] as const) {
    const value = params[field]
    if (value !== undefined && !FINGERPRINT.test(value))
      throw refused(id, `params.${field}`, `${shown(value)} is not a schema fingerprint; expected 64 lower-case hex digits`)
  }
  const keys = params.snapshotIds ?? []
  if (keys.length >= ctx.settings.contentLimit)
    throw refused(
      id,
      'params.snapshotIds',
      `${keys.length} keys is more than a snapshot holds; expected fewer than ${ctx.settings.contentLimit} (recording.contentLimit)`,
    )
  const bad = keys.findIndex((k) => typeof k !== 'string' || !isSnapshotKey(k))
  if (bad >= 0)
    throw refused(
      id,
      `params.snapshotIds.${bad}`,
      `${shown(keys[bad])} is not a recording's key; expected id:ID or the JSON of its channel, title, start and stop`,
    )
}
