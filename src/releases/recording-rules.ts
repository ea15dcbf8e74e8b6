/**
 * The recording service's upgrade rules (the seed's "Recording service" versioning) as data:
 * the upgrade and rollback procedures the playbooks follow, and the compatibility rules that
 * decide what a rollback must restore.
 */

/** One rule with a verbatim fragment of the seed (the catalog test checks it is there). */
export interface RecordingRule {
  id: string
  text: string
  seed: string
}

export const RECORDING_RULES: readonly RecordingRule[] = [
  {
    id: 'upgrade-steps',
    text: 'Upgrade: stop, install the new package, review configuration changes, start, check status and the last log lines.',
    seed: 'Upgrade steps: stop the service; install the new package; review configuration changes; start the service; check status and the last log lines.',
  },
  {
    id: 'migrations-on-first-start',
    text: 'Schema migrations run automatically on the first start of the new version; the database must be configured and reachable.',
    seed: 'Database schema migrations are applied automatically on first start.',
  },
  { id: 'backup-before-upgrade', text: 'Back up the database before upgrading.', seed: 'Back up the database before upgrading.' },
  {
    id: 'rollback-steps',
    text: 'Rollback: stop, downgrade the package, restore the database backup only if the schema changed, start.',
    seed: 'Rollback: stop the service; downgrade the package to the previous version; restore the database backup only if the schema changed; start the service.',
  },
  {
    id: 'schema-forward-only',
    text: 'Schema changes are forward-compatible but not backward-compatible: an older version cannot run on a migrated schema.',
    seed: 'schema changes are forward-compatible but not backward-compatible',
  },
  {
    id: 'config-defaults',
    text: 'New configuration options have defaults, so existing configurations stay valid.',
    seed: 'new configuration options have defaults, so existing configurations stay valid',
  },
  {
    id: 'api-compatible-within-major',
    text: 'The management API keeps backward compatibility within a major version.',
    seed: 'the management API keeps backward compatibility within a major version',
  },
  {
    id: 'storage-compatible',
    text: 'The recording storage format is backward-compatible: recordings need no restore on rollback.',
    seed: 'the recording storage format is backward-compatible',
  },
  {
    id: 'post-upgrade-check',
    text: 'After an upgrade: GET / for health, GET /api/v1/content with limit, POST /api/v1/content with a test recording, read the logs.',
    seed: 'Post-upgrade check: GET / for health; GET /api/v1/content with `limit`; POST /api/v1/content with a test recording; read the logs.',
  },
  {
    id: 'problem-no-start',
    text: 'Service does not start: check logs, configuration syntax, file permissions, database access.',
    seed: 'the service does not start (check logs, configuration syntax, file permissions, database access)',
  },
  {
    id: 'problem-migration',
    text: 'Migration fails: check database connectivity and schema-change permission, review migration logs, restore backup and retry.',
    seed: 'migration fails (check database connectivity and schema-change permission, review migration logs, restore backup and retry)',
  },
  {
    id: 'problem-recordings',
    text: 'Recordings inaccessible: check storage paths, file permissions, storage location names in the configuration, media API configuration.',
    seed: 'recordings inaccessible (storage paths, file permissions, storage location names in the configuration, media API configuration)',
  },
  {
    id: 'problem-slow',
    text: 'Slow performance: check content info cache size, write rate limit if enabled, database query performance, disk I/O.',
    seed: 'slow performance (content info cache size, write rate limit if enabled, database query performance, disk I/O)',
  },
]
