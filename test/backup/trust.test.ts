/**
 * A backup store is written by others: everything read from it is checked before it is used.
 * Each case plants what an attacker with write access to the store would, and expects a refusal
 * that names the file, with nothing read outside the store and nothing loaded into a database.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import * as openpgp from 'openpgp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createBackup,
  generateBackupKey,
  listBackups,
  LocalStore,
  readSigningKey,
  restoreBackup,
  verifyBackup,
  type BackupStore,
  type Manifest,
  type SigningKey,
} from '../../src/backup/index.ts'
import { assertToolPatched, type PgTool } from '../../src/drivers/postgres.ts'
import { signManifest } from '../../src/backup/signing.ts'
import { PIECE_BYTES } from '../../src/backup/streams.ts'
import { collect } from '../../src/core/events.ts'
import { stringify } from 'yaml'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { createVerifiedBackup, restoreVerifiedBackup } from '../../src/recording/backup-gate.ts'
import { seedRecordings, SERVICE_PASSWORD, startBackupBed, type BackupBed } from './fixture.ts'

describe('a backup store that others can write to', () => {
  let bed: BackupBed
  let manifest: Manifest

  beforeAll(async () => {
    bed = await startBackupBed(300)
    manifest = await createBackup(bed.options())
  })
  afterAll(async () => {
    await bed?.stop()
  })

  const manifestPath = (id: string) => join(bed.store.location, `${id}.manifest.json`)
  /** Plants a manifest signed by the trusted key: containment must hold even for a signer gone rogue. */
  const plant = async (id: string, changes: Partial<Manifest>): Promise<void> => {
    const text = JSON.stringify({ ...manifest, ...changes }, null, 2)
    writeFileSync(manifestPath(id), text)
    writeFileSync(`${manifestPath(id)}.sig`, await signManifest(Buffer.from(text), bed.signer))
  }
  const recordings = async () => Number((await bed.sql('SELECT count(*) AS n FROM recordings'))[0]?.n)

  it('refuses a manifest whose file points outside the store, before reading that file', async () => {
    const other = await createBackup(bed.options())
    await plant(other.id, { id: other.id, file: '../../../../etc/hostname' })
    const report = await verifyBackup(bed.store, other.id, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      record: false,
    })
    expect(report.checks.map((c) => [c.check, c.ok])).toEqual([['manifest', false]])
    expect(report.checks[0]?.detail).toBe(
      `${bed.store.location}/${other.id}.manifest.json: file: '../../../../etc/hostname' is not this backup's dump; expected '${other.id}.dump.pgp' in the store directory (a manifest never names another path).`,
    )
    const before = await recordings()
    await expect(
      restoreBackup(bed.store, other.id, bed.database, {
        signers: bed.signers,
        environment: 'test',
        identity: bed.identity,
        confirmed: true,
      }),
    ).rejects.toThrow(/file: '\.\.\/\.\.\/\.\.\/\.\.\/etc\/hostname' is not this backup's dump/)
    expect(await recordings()).toBe(before)
  })

  it('refuses a manifest that describes another backup than the one asked for (a copy under a new name)', async () => {
    const copy = manifest.id.replace(/-[0-9a-f]{4}$/, '-beef')
    writeFileSync(manifestPath(copy), readFileSync(manifestPath(manifest.id)))
    writeFileSync(`${manifestPath(copy)}.sig`, readFileSync(`${manifestPath(manifest.id)}.sig`))
    writeFileSync(join(bed.store.location, `${copy}.dump.pgp`), readFileSync(join(bed.store.location, manifest.file)))
    const report = await verifyBackup(bed.store, copy, { signers: bed.signers, environment: 'test', identity: bed.identity, record: false })
    expect(report.failedCheck).toBe('manifest')
    expect(report.checks[0]?.detail).toBe(
      `${bed.store.location}/${copy}.manifest.json: id: '${manifest.id}' is not the backup asked for; expected '${copy}'.`,
    )
  })

  it('lists neither of them, naming each skipped manifest, and still lists the real backup', async () => {
    const log = collect()
    try {
      const ids = (await listBackups(bed.store)).map((b) => b.id)
      expect(ids).toContain(manifest.id)
      expect(ids.every((id) => id === manifest.id)).toBe(true)
    } finally {
      log.stop()
    }
    const warnings = log.events.flatMap((e) => (e.kind === 'warn' ? [e.message] : []))
    expect(warnings.some((w) => w.includes("is not this backup's dump"))).toBe(true)
    expect(warnings.some((w) => w.includes('is not the backup asked for'))).toBe(true)
  })

  it('names a dump cut short inside its zstd frame as the cause of a failed test restore, not pg_restore', async () => {
    // A signer gone rogue, or a writer that died: a genuine encryption of a zstd stream that stops mid-frame.
    const other = await createBackup(bed.options())
    const stored = readFileSync(join(bed.store.location, other.file))
    const decrypted = await openpgp.decrypt({
      message: await openpgp.readMessage({ binaryMessage: stored }),
      decryptionKeys: bed.identity,
      format: 'binary',
    })
    const data = decrypted.data as Uint8Array
    const cut = data.subarray(0, data.length - 40)
    const encrypted = Buffer.from(
      (await openpgp.encrypt({
        message: await openpgp.createMessage({ binary: cut }),
        encryptionKeys: bed.recipients.map((r) => r.key),
        format: 'binary',
        config: { preferredCompressionAlgorithm: openpgp.enums.compression.uncompressed },
      })) as Uint8Array,
    )
    writeFileSync(join(bed.store.location, other.file), encrypted)
    const sha256 = createHash('sha256').update(encrypted).digest('hex')
    await plant(other.id, {
      ...other,
      sizes: { ...other.sizes, encrypted: encrypted.length },
      checksums: { ...other.checksums, encryptedSha256: sha256, encryptedPieces: { size: PIECE_BYTES, sha256: [sha256] } },
    })
    const report = await verifyBackup(bed.store, other.id, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      restoreTest: { server: bed.database },
      record: false,
    })
    expect(report.failedCheck, JSON.stringify(report.checks)).toBe('decrypt')
    expect(report.checks.at(-1)?.detail).toBe(
      `Decrypting backup ${other.id} failed: the zstd stream ends in the middle of a frame (truncated).`,
    )
  })

  it('never builds a store path from a name with a directory part', async () => {
    for (const name of ['../etc/hostname', '/etc/hostname', '..', 'a/b'])
      await expect(bed.store.readText(name)).rejects.toThrow(`'${name}' is not a file name inside the backup store ${bed.store.location}`)
  })

  it('lists a backup whose verification record is corrupt as not verified, naming the file', async () => {
    writeFileSync(join(bed.store.location, `${manifest.id}.verified.json`), '{"id": "x", "ok": tru')
    const log = collect()
    try {
      const entry = (await listBackups(bed.store)).find((b) => b.id === manifest.id)
      expect(entry?.verified).toBeUndefined()
    } finally {
      log.stop()
    }
    expect(log.events).toContainEqual(
      expect.objectContaining({
        kind: 'warn',
        message: `ignoring ${bed.store.location}/${manifest.id}.verified.json: not valid JSON; backup ${manifest.id} counts as not verified`,
      }),
    )
  })

  it('refuses a manifest far larger than any real one without reading it', async () => {
    const big = manifest.id.replace(/-[0-9a-f]{4}$/, '-b16b')
    writeFileSync(manifestPath(big), Buffer.alloc(3 << 20, 0x20))
    const report = await verifyBackup(bed.store, big, { signers: bed.signers, environment: 'test', record: false })
    expect(report.failedCheck).toBe('manifest')
    expect(report.checks[0]?.detail).toMatch(/has 3145728 bytes; a manifest, signature or verification record has at most 1048576/)
  })
})

describe('signed backups: verify, restore and the automatic rollback accept only what a trusted signer made', () => {
  let bed: BackupBed
  let genuine: Manifest
  let attackerdb: string

  beforeAll(async () => {
    bed = await startBackupBed(400)
    genuine = await createBackup(bed.options())
    attackerdb = `${bed.database.name}_attacker`
    await bed.cluster.query(`CREATE DATABASE ${attackerdb} OWNER ${bed.database.user}`)
    await seedRecordings(bed.cluster, attackerdb, 30, bed.database.user)
    await bed.cluster.query(
      `CREATE TABLE attacker_marker (planted int); ALTER TABLE attacker_marker OWNER TO ${bed.database.user}`,
      [],
      attackerdb,
    )
  })
  afterAll(async () => {
    await bed?.stop()
  })

  const at = (name: string) => join(bed.store.location, name)
  const count = async () => Number((await bed.sql('SELECT count(*) AS n FROM recordings'))[0]?.n)
  const restore = (id: string, extra: { allowUnsigned?: boolean } = {}) =>
    restoreBackup(bed.store, id, bed.database, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      confirmed: true,
      ...extra,
    })
  /** A backup of a database the attacker chose (30 rows and a table of theirs), made and signed as they would. */
  const plantedBackup = async (signer?: SigningKey): Promise<Manifest> => {
    const store = new LocalStore(join(bed.dir, `attacker-${randomBytes(4).toString('hex')}`))
    const m = await createBackup(
      bed.options({ store, signer: signer ?? (await unknownSigner()), database: { ...bed.database, name: attackerdb } }),
    )
    for (const name of readdirSync(store.location)) writeFileSync(at(name), readFileSync(join(store.location, name)))
    return m
  }
  const unknownSigner = async (): Promise<SigningKey> => {
    const pair = await generateBackupKey({ name: 'not trusted' })
    const key = await openpgp.readPrivateKey({ armoredKey: pair.privateKey })
    return { key, fingerprint: pair.fingerprint }
  }
  const tablesNow = async () =>
    (await bed.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")).map((r) => r.tablename)

  it('refuses an unsigned backup (planted, or made before signing) in verify --restore-test and restore, loading nothing', async () => {
    const planted = await plantedBackup()
    rmSync(at(`${planted.id}.manifest.json.sig`))
    const before = { rows: await count(), tables: await tablesNow() }
    const report = await verifyBackup(bed.store, planted.id, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      restoreTest: { server: bed.database },
    })
    expect(report.checks.map((c) => [c.check, c.ok])).toEqual([['signature', false]])
    expect(report.checks[0]?.detail).toBe(
      `Backup ${planted.id} is not signed (no ${planted.id}.manifest.json.sig in ${bed.store.location}): made before svcops signed backups, or planted; it was refused.`,
    )
    await expect(restore(planted.id)).rejects.toThrow(`Backup ${planted.id} is not signed`)
    expect({ rows: await count(), tables: await tablesNow() }).toEqual(before)
    // The bed role's own scratch databases: other files may be verifying backups on the same server.
    const scratch = `SELECT datname FROM pg_database WHERE datname LIKE 'svcops_verify_%' AND datdba = (SELECT oid FROM pg_roles WHERE rolname = '${bed.database.user}')`
    expect(await bed.sql(scratch, 'postgres')).toEqual([])
    const listed = (await listBackups(bed.store, { signers: bed.signers, environment: 'test' })).find((b) => b.id === planted.id)
    expect(listed?.signature).toBe('unsigned')
  })

  it('restores an unsigned backup only with the explicit flag, and says so', async () => {
    const old = await createBackup(bed.options())
    rmSync(at(`${old.id}.manifest.json.sig`))
    const log = collect()
    try {
      const report = await restore(old.id, { allowUnsigned: true })
      expect(report.rowCounts['public.recordings']).toBe(400)
    } finally {
      log.stop()
    }
    expect(log.events).toContainEqual(
      expect.objectContaining({
        kind: 'warn',
        message: `Backup ${old.id} is not signed; it is used only because unsigned backups were explicitly allowed.`,
      }),
    )
  })

  it('refuses a backup signed by a key that is not a trusted signer, loading nothing', async () => {
    const stranger = await unknownSigner()
    const planted = await plantedBackup(stranger)
    const before = await count()
    const report = await verifyBackup(bed.store, planted.id, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      restoreTest: { server: bed.database },
    })
    expect(report.failedCheck).toBe('signature')
    expect(report.checks[0]?.detail).toBe(
      `Backup ${planted.id} was refused: it is signed by the key ${stranger.fingerprint.slice(-16)}, which is not one of the trusted signers.`,
    )
    await expect(restore(planted.id, { allowUnsigned: true })).rejects.toThrow('which is not one of the trusted signers')
    expect(await count()).toBe(before)
  })

  it('refuses a manifest altered after it was signed', async () => {
    const altered = await createBackup(bed.options())
    const text = readFileSync(at(`${altered.id}.manifest.json`), 'utf8').replace('"public.recordings": 400', '"public.recordings": 401')
    writeFileSync(at(`${altered.id}.manifest.json`), text)
    const report = await verifyBackup(bed.store, altered.id, { signers: bed.signers, environment: 'test', identity: bed.identity })
    expect(report.failedCheck).toBe('signature')
    expect(report.checks[0]?.detail).toBe(
      `Backup ${altered.id} was refused: its signature by ${bed.signer.fingerprint} does not match the manifest (altered after it was signed).`,
    )
  })

  it('reads the stored file once: a file swapped after the check is never the one loaded', async () => {
    const planted = await plantedBackup(bed.signer)
    const swapIn = readFileSync(at(planted.file))
    // A store that answers the genuine file the first time and the attacker's from then on.
    let reads = 0
    const store: BackupStore = Object.assign(Object.create(bed.store) as BackupStore, {
      openRead: async (name: string) => {
        if (name !== genuine.file) return bed.store.openRead(name)
        reads++
        return reads === 1 ? bed.store.openRead(name) : Readable.from([swapIn])
      },
    })
    await bed.sql('DELETE FROM recordings WHERE id > 200')
    const report = await restoreBackup(store, genuine.id, bed.database, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      confirmed: true,
    })
    expect(reads).toBe(1)
    expect(report.rowCounts).toEqual(genuine.rowCounts)
    expect(await tablesNow()).not.toContain('attacker_marker')
    const swapped = await verifyBackup(store, genuine.id, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      restoreTest: { server: bed.database },
      record: false,
    })
    // The next read gets the attacker's file: its one read is checked before anything is decrypted.
    expect(swapped.checks.map((c) => [c.check, c.ok])).toEqual([
      ['signature', true],
      ['manifest', true],
      ['checksum', false],
    ])
    expect(reads).toBe(2)
  })

  it('commits nothing when the decrypted dump is not the one the signed manifest names', async () => {
    // A signer gone rogue: a genuine file under a manifest whose dump checksum is wrong.
    const other = await createBackup(bed.options())
    const text = JSON.stringify({ ...other, checksums: { ...other.checksums, dumpSha256: '0'.repeat(64) } }, null, 2)
    writeFileSync(at(`${other.id}.manifest.json`), text)
    writeFileSync(at(`${other.id}.manifest.json.sig`), await signManifest(Buffer.from(text), bed.signer))
    await bed.sql(
      `DELETE FROM recordings WHERE id > 300; CREATE TABLE written_after (id int); ALTER TABLE written_after OWNER TO ${bed.database.user}`,
    )
    const before = { rows: await count(), tables: await tablesNow() }
    await expect(restore(other.id)).rejects.toThrow(/the manifest says \d+ bytes with 0{64}; nothing was committed\.$/)
    expect({ rows: await count(), tables: await tablesNow() }).toEqual(before)
    await bed.sql('DROP TABLE written_after')
  })

  it('refuses pg_restore and psql without the fix for CVE-2025-8714, at the minor version', () => {
    const tool = (version: string): PgTool => ({ name: 'psql', path: '/usr/bin/psql', version, major: Number(version.split('.')[0]) })
    expect(() => assertToolPatched(tool('15.13'))).toThrow(
      'psql 15.13 (/usr/bin/psql) lacks the fix for CVE-2025-8714 (a dump can run shell commands through psql meta-commands); restoring needs 15.14 or newer.',
    )
    expect(() => assertToolPatched(tool('12.22'))).toThrow(/restoring needs 13\.22, 14\.19, 15\.14, 16\.10, 17\.6 or 18/)
    for (const fixed of ['13.22', '14.19', '15.14', '16.10', '17.6', '18.0']) expect(() => assertToolPatched(tool(fixed))).not.toThrow()
  })

  it('refuses to create a backup with a signing key that is not a trusted signer, and needs a signing key at all', async () => {
    const stranger = await generateBackupKey({ name: 'stranger' })
    process.env.SVCOPS_TEST_STRANGER_KEY = stranger.privateKey
    try {
      await expect(readSigningKey({ signingKey: { env: 'SVCOPS_TEST_STRANGER_KEY' } }, bed.signers)).rejects.toThrow(
        `backup.signingKey: the key ${stranger.fingerprint} is not one of the trusted signers (${bed.signer.fingerprint}); a backup it signs could not be verified or restored.`,
      )
    } finally {
      delete process.env.SVCOPS_TEST_STRANGER_KEY
    }
    await expect(readSigningKey({}, bed.signers)).rejects.toThrow(/^backup\.signingKey: missing; every backup is signed/)
  })
})

describe('the automatic rollback path (backup gate) with the upgrade fixture’s configuration: recipients and identity only', () => {
  let bed: BackupBed
  let envFile: string

  beforeAll(async () => {
    bed = await startBackupBed(200)
    process.env.SVCOPS_TEST_GATE_DB_PASSWORD = SERVICE_PASSWORD
    envFile = join(bed.dir, 'Pulumi.gate.yaml')
    writeFileSync(
      envFile,
      stringify({
        config: {
          'svcops:recording': {
            version: '1.6.0',
            hosts: [{ name: 'rec1', url: 'http://127.0.0.1:9', transport: 'local' }],
            database: { ...bed.database, password: { env: 'SVCOPS_TEST_GATE_DB_PASSWORD' } },
          },
          // What test/recording/fixture.ts writes: no signing key, no signers. The identity signs; the recipients are trusted.
          'svcops:backup': {
            store: { path: join(bed.dir, 'gate-store') },
            recipients: [bed.publicKeyFile],
            identity: { file: bed.privateKeyFile },
          },
        },
      }),
    )
  })
  afterAll(async () => {
    delete process.env.SVCOPS_TEST_GATE_DB_PASSWORD
    await bed?.stop()
  })

  it('makes a signed, verified backup, restores it, and refuses it once its signature is gone', async () => {
    const env = loadEnvironmentFile(envFile, 'gate')
    const { id } = await createVerifiedBackup(env, { rec1: '1.6.0' })
    expect(existsSync(join(bed.dir, 'gate-store', `${id}.manifest.json.sig`))).toBe(true)
    await restoreVerifiedBackup(env, id, undefined)
    rmSync(join(bed.dir, 'gate-store', `${id}.manifest.json.sig`))
    await bed.sql('DELETE FROM recordings WHERE id > 100')
    await expect(restoreVerifiedBackup(env, id, undefined)).rejects.toThrow(`Backup ${id} is not signed`)
    expect(Number((await bed.sql('SELECT count(*) AS n FROM recordings'))[0]?.n)).toBe(100)
  })
})
