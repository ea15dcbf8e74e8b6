/**
 * A test bed for backups: a recording-service shaped database owned by its own login role (in the
 * e2e tier's shared PostgreSQL cluster, copied from its template), a fresh backup key pair on disk
 * and an empty local store.
 */
import { randomBytes } from 'node:crypto'
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
import pg from 'pg'
import { inject } from 'vitest'
import { registerSecret } from '../../src/core/redact.ts'
import { PostgresCluster, startPostgres } from '../../src/lab/lab-postgres.ts'
import { RECORDINGS_TEMPLATE } from '../support/shared-postgres.ts'
import { createRecordingTables, insertRecordings, ownRecordingTables } from '../support/recording-tables.ts'

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

/** The recording service's tables at schema version 3, owned by `owner`, with `rows` recordings. */
export async function seedRecordings(cluster: PostgresCluster, database: string, rows: number, owner = 'recorder'): Promise<void> {
  await createRecordingTables(cluster, database)
  await ownRecordingTables(cluster, database, owner)
  await insertRecordings(cluster, database, rows)
}

/**
 * The bed's server: the e2e tier's shared cluster (test/support/shared-postgres.ts), where the bed
 * gets a role and a database of its own copied from the template, or, run by another config, a
 * cluster of its own with the role `recorder` and the database `recordings`.
 */
async function openBedDatabase(
  rows: number,
): Promise<{ cluster: PostgresCluster; database: string; user: string; release: () => Promise<void> }> {
  const shared = inject('sharedPostgres')
  if (!shared) {
    const cluster = await startPostgres({ fsync: false })
    try {
      await cluster.createDatabase('recordings', { user: 'recorder', password: SERVICE_PASSWORD, createdb: true })
      await seedRecordings(cluster, 'recordings', rows)
    } catch (error) {
      await cluster.stop()
      throw error
    }
    return { cluster, database: 'recordings', user: 'recorder', release: () => cluster.stop() }
  }
  const cluster = new PostgresCluster(shared)
  const suffix = randomBytes(5).toString('hex')
  const user = `recorder_${suffix}`
  const database = `recordings_${suffix}`
  registerSecret(SERVICE_PASSWORD)
  await cluster.query(`CREATE ROLE ${pg.escapeIdentifier(user)} LOGIN CREATEDB PASSWORD ${pg.escapeLiteral(SERVICE_PASSWORD)}`)
  const release = async (): Promise<void> => {
    // Every database the role made (its own, test restores' scratch, those a test created), then the role.
    const owned = await cluster.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datdba = (SELECT oid FROM pg_roles WHERE rolname = $1)',
      [user],
    )
    for (const { datname } of owned) await cluster.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`)
    await cluster.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(user)}`)
  }
  try {
    await cluster.query(
      `CREATE DATABASE ${pg.escapeIdentifier(database)} TEMPLATE ${RECORDINGS_TEMPLATE} OWNER ${pg.escapeIdentifier(user)}`,
    )
    await ownRecordingTables(cluster, database, user)
    await insertRecordings(cluster, database, rows)
  } catch (error) {
    await release()
    throw error
  }
  return { cluster, database, user, release }
}

/** Starts the bed: a database owned by its own role (CREATEDB for test restores) with `rows` recordings, key pair, store. */
export async function startBackupBed(rows = 2000): Promise<BackupBed> {
  const { cluster, database: name, user, release } = await openBedDatabase(rows)
  const dir = mkdtempSync(join(tmpdir(), 'svcops-backup-test-'))
  try {
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
      name,
      user,
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
      sql: (text, db = name) => cluster.query(text, [], db),
      stop: async () => {
        await release()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  } catch (error) {
    await release()
    throw error
  }
}
