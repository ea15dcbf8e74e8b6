/**
 * A test bed for backups: a throwaway PostgreSQL cluster holding a recording-service shaped
 * database owned by its own login role, a fresh backup key pair on disk and an empty local store.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as openpgp from 'openpgp'
import {
  generateBackupKey,
  LocalStore,
  readRecipients,
  readSigners,
  readSigningKey,
  type CreateBackupOptions,
  type Signer,
  type SigningKey,
  type DatabaseTarget,
  type Recipient,
} from '../../src/backup/index.ts'
import { startPostgres, type PostgresCluster } from '../../src/lab/lab-postgres.ts'

export const SERVICE_PASSWORD = 'recorder-password-7Hq2'

export interface BackupBed {
  cluster: PostgresCluster
  dir: string
  store: LocalStore
  database: DatabaseTarget
  recipients: Recipient[]
  publicKeyFile: string
  privateKeyFile: string
  identity: openpgp.PrivateKey
  /** The key that signs backups (its own pair, as in production) and the trusted signers. */
  signer: SigningKey
  signers: Signer[]
  signerPublicKeyFile: string
  signerPrivateKeyFile: string
  options(overrides?: Partial<CreateBackupOptions>): CreateBackupOptions
  sql(text: string, database?: string): Promise<Record<string, unknown>[]>
  stop(): Promise<void>
}

/** The recording service's tables at schema version 3, with `rows` recordings. */
export async function seedRecordings(cluster: PostgresCluster, database: string, rows: number): Promise<void> {
  await cluster.query(
    `CREATE TABLE recordings (
       id bigserial PRIMARY KEY, channel_name text NOT NULL, title text NOT NULL,
       start_time bigint NOT NULL, stop_time bigint NOT NULL, location text NOT NULL, file_name text NOT NULL,
       created_at timestamptz NOT NULL DEFAULT now(), duration integer NOT NULL,
       created_by text NOT NULL DEFAULT 'unknown');
     CREATE INDEX recordings_start_time ON recordings (start_time);
     CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
     INSERT INTO schema_migrations (version, name) VALUES (1, 'create recordings'), (2, 'recording duration'), (3, 'recording creator');
     ALTER TABLE recordings OWNER TO recorder; ALTER TABLE schema_migrations OWNER TO recorder;`,
    [],
    database,
  )
  await cluster.query(
    `INSERT INTO recordings (channel_name, title, start_time, stop_time, location, file_name, duration)
     SELECT 'channel-' || (g % 7), 'Recording ' || g, g * 1000, g * 1000 + 600, '/media/rec', 'rec-' || g || '.mxf', 600
       FROM generate_series(1, $1::int) g`,
    [rows],
    database,
  )
}

/** Starts the bed: cluster, database `recordings` owned by `recorder` (CREATEDB for test restores), key pair, store. */
export async function startBackupBed(rows = 2000): Promise<BackupBed> {
  const cluster = await startPostgres({ fsync: false })
  const dir = mkdtempSync(join(tmpdir(), 'svcops-backup-test-'))
  try {
    await cluster.createDatabase('recordings', { user: 'recorder', password: SERVICE_PASSWORD })
    await cluster.query('ALTER ROLE recorder CREATEDB')
    await seedRecordings(cluster, 'recordings', rows)
    const pair = await generateBackupKey({ name: 'svcops test backups', email: 'backups@example.invalid' })
    const publicKeyFile = join(dir, 'backup.pub.asc')
    const privateKeyFile = join(dir, 'backup.key.asc')
    writeFileSync(publicKeyFile, pair.publicKey)
    writeFileSync(privateKeyFile, pair.privateKey, { mode: 0o600 })
    const recipients = await readRecipients([publicKeyFile])
    const identity = await openpgp.readPrivateKey({ armoredKey: pair.privateKey })
    const signing = await generateBackupKey({ name: 'svcops test signing', email: 'signing@example.invalid' })
    const signerPublicKeyFile = join(dir, 'signing.pub.asc')
    const signerPrivateKeyFile = join(dir, 'signing.key.asc')
    writeFileSync(signerPublicKeyFile, signing.publicKey)
    writeFileSync(signerPrivateKeyFile, signing.privateKey, { mode: 0o600 })
    const signers = await readSigners({ recipients: [publicKeyFile], signers: [signerPublicKeyFile] })
    const signer = await readSigningKey({ signingKey: { file: signerPrivateKeyFile } }, signers)
    const store = new LocalStore(join(dir, 'store'))
    const database: DatabaseTarget = {
      host: cluster.info.host,
      port: cluster.port,
      name: 'recordings',
      user: 'recorder',
      password: SERVICE_PASSWORD,
    }
    return {
      cluster,
      dir,
      store,
      database,
      recipients,
      publicKeyFile,
      privateKeyFile,
      identity,
      signer,
      signers,
      signerPublicKeyFile,
      signerPrivateKeyFile,
      options: (overrides = {}) => ({ store, database, recipients, signer, environment: 'test', ...overrides }),
      sql: (text, db = 'recordings') => cluster.query(text, [], db),
      stop: async () => {
        await cluster.stop()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  } catch (error) {
    await cluster.stop()
    throw error
  }
}
