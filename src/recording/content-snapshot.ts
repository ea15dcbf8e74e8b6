/**
 * Content snapshots: what the recording service lists before anything stops, so that verification
 * can prove every recording survived, and a rollback can tell which recordings were written after
 * the backup (they are exported before a restore and re-created after it — nothing is lost).
 */
import { existsSync, readFileSync } from 'node:fs'
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'

/** A recording as the service lists it. Only the creation fields are documented; `id` when present. */
export interface Recording {
  id?: string | number
  channelName: string
  title: string
  startTime: number
  stopTime: number
  [field: string]: unknown
}

/** The creation request of the seed (what POST /api/v1/content takes). */
export type RecordingInput = Pick<Recording, 'channelName' | 'title' | 'startTime' | 'stopTime'>

/** The recording service's API as the upgrade needs it (see upgrade-deps.ts for the real one). */
export interface ContentApi {
  /** Resolves when `GET /` answers success; rejects with the reason otherwise. */
  health(baseUrl: string): Promise<void>
  list(baseUrl: string, limit: number): Promise<Recording[]>
  create(baseUrl: string, input: RecordingInput): Promise<Recording>
}

/** What the service held at one moment. */
export interface ContentSnapshot {
  takenAt: string
  /** Identity keys of every listed recording (see `identityKey`). */
  keys: string[]
  count: number
  /** Rows per table of the service's database at the same moment. */
  rowCounts?: Record<string, number>
}

/** Channel name of the test recordings that verification creates (excluded from exports). */
export const TEST_CHANNEL = 'svcops-verify'

/** The stable identity of a recording: its id when the service gives one, else its creation fields. */
export function identityKey(r: Recording): string {
  return r.id !== undefined && r.id !== null ? `id:${String(r.id)}` : contentKey(r)
}

/** What a recording is, independent of the id a database gave it (used to avoid re-creating twice). */
export function contentKey(r: RecordingInput): string {
  return JSON.stringify([r.channelName, r.title, r.startTime, r.stopTime])
}

/** True for recordings verification created (marked with a run id). */
export function isTestRecording(r: Recording): boolean {
  return r.channelName === TEST_CHANNEL
}

/** Lists the content and records its keys. Fails when the list is exactly `limit` long (it may be cut). */
export async function snapshotContent(
  api: ContentApi,
  baseUrl: string,
  limit: number,
  rowCounts?: Record<string, number>,
): Promise<ContentSnapshot> {
  const list = await api.list(baseUrl, limit)
  if (list.length >= limit) {
    throw new OperationError(
      `The content list of ${baseUrl} returned ${list.length} recordings, the limit; a snapshot must hold every recording.`,
      'Raise recording.contentLimit in the environment file above the number of recordings.',
    )
  }
  events.emit({ kind: 'check', check: 'content snapshot', ok: true, detail: `${list.length} recordings` })
  return { takenAt: new Date().toISOString(), keys: list.map(identityKey), count: list.length, ...(rowCounts ? { rowCounts } : {}) }
}

/** Keys of the snapshot that `list` does not contain. */
export function missingRecordings(keys: string[], list: Recording[]): string[] {
  const present = new Set(list.map(identityKey))
  return keys.filter((k) => !present.has(k))
}

/**
 * Recordings in `current` that are neither in the backup's snapshot nor test recordings: what was
 * written after the backup and must survive a restore.
 */
export function recordingsAfter(snapshotKeys: string[], current: Recording[]): Recording[] {
  const before = new Set(snapshotKeys)
  const seen = new Set<string>()
  return current.filter((r) => {
    const key = contentKey(r)
    if (before.has(identityKey(r)) || isTestRecording(r) || seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** Recordings saved in a file of the run folder (none when it does not exist yet). */
export function readRecordings(path: string): Recording[] {
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Recording[]) : []
}
