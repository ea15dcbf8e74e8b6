import type { PostgresCluster } from '../../src/lab/lab-postgres.ts'

/** Creates the recording service's tables at schema version 3 (empty) in `database`, owned by the superuser. */
export async function createRecordingTables(cluster: PostgresCluster, database: string): Promise<void> {
  await cluster.query(
    `CREATE TABLE recordings (
       id bigserial PRIMARY KEY, channel_name text NOT NULL, title text NOT NULL,
       start_time bigint NOT NULL, stop_time bigint NOT NULL, location text NOT NULL, file_name text NOT NULL,
       created_at timestamptz NOT NULL DEFAULT now(), duration integer NOT NULL,
       created_by text NOT NULL DEFAULT 'unknown');
     CREATE INDEX recordings_start_time ON recordings (start_time);
     CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
     INSERT INTO schema_migrations (version, name) VALUES (1, 'create recordings'), (2, 'recording duration'), (3, 'recording creator');`,
    [],
    database,
  )
}

/** Hands the recording tables (and the id sequence they own) of `database` to `owner`. */
export async function ownRecordingTables(cluster: PostgresCluster, database: string, owner: string): Promise<void> {
  const role = owner.replaceAll('"', '""')
  await cluster.query(`ALTER TABLE recordings OWNER TO "${role}"; ALTER TABLE schema_migrations OWNER TO "${role}";`, [], database)
}

/** Adds `rows` recordings to `database`. */
export async function insertRecordings(cluster: PostgresCluster, database: string, rows: number): Promise<void> {
  await cluster.query(
    `INSERT INTO recordings (channel_name, title, start_time, stop_time, location, file_name, duration)
     SELECT 'channel-' || (g % 7), 'Recording ' || g, g * 1000, g * 1000 + 600, '/media/rec', 'rec-' || g || '.mxf', 600
       FROM generate_series(1, $1::int) g`,
    [rows],
    database,
  )
}
