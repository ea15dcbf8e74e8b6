/**
 * The releases of the lab's recording service, as data. Every release is built into its own
 * `.deb`; the service bundled into it reads its entry from here (version, schema version, fault).
 *
 * Fault releases are distinct package versions `<base>+<fault>` (e.g. `2.1.0+migfail`): `+` is
 * accepted by dpkg (an upstream-version character that sorts after the plain base version) and by
 * the config schema's semver pattern, so `svcops upgrade recording --to 2.1.0+migfail` names one
 * exactly. They share the base's schema version, so rolling back from one across the schema change
 * needs the database restored — unless its migration never committed.
 */

/** How a release misbehaves. `none` for an ordinary release. */
export type RecordingFault =
  /** The schema migration fails midway; the transaction rolls back, the database stays as it was; the service exits non-zero. */
  | 'migration-fails'
  /** Migrations succeed, then the service logs a fatal error and exits non-zero. */
  | 'crash-at-start'
  /** Starts, migrates and listens, but the health check and the API answer 503 forever. */
  | 'never-healthy'
  /** Migrates, then waits `slowStartMs` before it listens (health is refused until then). */
  | 'slow-start'
  /** Its migration silently deletes every third recording; everything else looks fine. */
  | 'lossy-migration'
  /** Starts and passes every start-up check; `degradeAfterMs` after it listens, the content API answers 500 (health stays 200). */
  | 'errors-after-a-while'
  | 'none'

export interface RecordingRelease {
  version: string
  /** Highest database schema version this release knows and migrates to. */
  schemaVersion: number
  /** Configuration options this release adds, each with a default (old config files stay valid). */
  configOptionsAdded: readonly string[]
  /** Shape of the list answer: a bare array (1.x), or `{ "content": [...] }` (2.x, a major-version API change). */
  listShape: 'array' | 'object'
  fault: RecordingFault
  /** For `slow-start`: how long the service waits before it listens. */
  slowStartMs?: number
  /** For `errors-after-a-while`: how long after it listens its content API starts failing. */
  degradeAfterMs?: number
  summary: string
}

/** Every release the lab can build, oldest first. */
export const RECORDING_RELEASES: readonly RecordingRelease[] = [
  { version: '1.4.0', schemaVersion: 1, configOptionsAdded: [], listShape: 'array', fault: 'none', summary: 'first packaged release' },
  {
    version: '1.5.0',
    schemaVersion: 1,
    configOptionsAdded: ['contentInfoCacheTtlSeconds'],
    listShape: 'array',
    fault: 'none',
    summary: 'no schema change; adds contentInfoCacheTtlSeconds (default 300)',
  },
  {
    version: '1.5.0+degrades',
    schemaVersion: 1,
    configOptionsAdded: ['contentInfoCacheTtlSeconds'],
    listShape: 'array',
    fault: 'errors-after-a-while',
    degradeAfterMs: 15_000,
    summary: 'FAULT: 1.5.0 that passes its start-up checks, then answers 500 on the content API from 15 s after it listens',
  },
  {
    version: '2.0.0',
    schemaVersion: 2,
    configOptionsAdded: ['logLevel'],
    listShape: 'object',
    fault: 'none',
    summary: 'schema 2 (recording duration); list answer becomes { "content": [...] }; adds logLevel (default "info")',
  },
  {
    version: '2.1.0',
    schemaVersion: 3,
    configOptionsAdded: [],
    listShape: 'object',
    fault: 'none',
    summary: 'schema 3 (creator of each recording)',
  },
  {
    version: '2.1.0+migfail',
    schemaVersion: 3,
    configOptionsAdded: [],
    listShape: 'object',
    fault: 'migration-fails',
    summary: 'FAULT: migration to schema 3 fails midway; database unchanged; exits non-zero',
  },
  {
    version: '2.1.0+crash',
    schemaVersion: 3,
    configOptionsAdded: [],
    listShape: 'object',
    fault: 'crash-at-start',
    summary: 'FAULT: migrates to schema 3, then crashes at start',
  },
  {
    version: '2.1.0+unhealthy',
    schemaVersion: 3,
    configOptionsAdded: [],
    listShape: 'object',
    fault: 'never-healthy',
    summary: 'FAULT: migrates to schema 3, runs, never becomes healthy (503)',
  },
  {
    version: '2.1.0+slowstart',
    schemaVersion: 3,
    configOptionsAdded: [],
    listShape: 'object',
    fault: 'slow-start',
    slowStartMs: 6000,
    summary: 'FAULT: migrates to schema 3, listens only after 6 s',
  },
  {
    version: '2.1.0+lossy',
    schemaVersion: 3,
    configOptionsAdded: [],
    listShape: 'object',
    fault: 'lossy-migration',
    summary: 'FAULT: migration to schema 3 silently deletes every third recording',
  },
]

/** The release with this version, or undefined. */
export function findRecordingRelease(version: string): RecordingRelease | undefined {
  return RECORDING_RELEASES.find((release) => release.version === version)
}

/** Newest schema version any release knows. */
export const LATEST_RECORDING_SCHEMA = Math.max(...RECORDING_RELEASES.map((release) => release.schemaVersion))
