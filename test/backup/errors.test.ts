import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  readFileSync,
  writeFileSync,
  openSync,
  readdirSync,
  closeSync,
  writeSync,
  readSync,
  truncateSync,
  statSync,
  rmSync,
} from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as openpgp from 'openpgp'
import {
  createBackup,
  generateBackupKey,
  listBackups,
  LocalStore,
  readIdentity,
  verifyBackup,
  type Manifest,
} from '../../src/backup/index.ts'
import { assertToolFits, findPgTool } from '../../src/drivers/postgres.ts'
import { BadInputError, MissingBinaryError, OperationError } from '../../src/core/errors.ts'
import { freePort } from '../../src/lab/ports.ts'
import { local, runCommand } from '../../src/core/runner.ts'
import { signManifest } from '../../src/backup/signing.ts'
import { startBackupBed, type BackupBed } from './fixture.ts'

describe('backup errors, each against the real components', () => {
  let bed: BackupBed
  let manifest: Manifest

  beforeAll(async () => {
    bed = await startBackupBed(500)
    manifest = await createBackup(bed.options())
  })
  afterAll(async () => {
    await bed?.stop()
  })

  it('names the server when the database is unreachable', async () => {
    const port = await freePort()
    const error = await createBackup(bed.options({ database: { ...bed.database, port } })).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OperationError)
    expect((error as Error).message).toBe(
      `The database server 127.0.0.1:${port} is unreachable (ECONNREFUSED); could not connect as ${bed.database.user} to ${bed.database.name}.`,
    )
  })

  it('says how to install pg_dump when it is missing', async () => {
    const path = process.env.PATH
    process.env.PATH = join(bed.dir, 'empty-bin')
    try {
      const error = await createBackup(bed.options()).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(MissingBinaryError)
      expect((error as MissingBinaryError).message).toBe("The program 'pg_dump' is not installed.")
      expect((error as MissingBinaryError).hint).toMatch(/apt-get install -y postgresql-client/)
    } finally {
      process.env.PATH = path
    }
  })

  it('names both versions when pg_dump is older than the server (the installed pg_dump against a newer server version)', async () => {
    const pgDump = await findPgTool('pg_dump')
    const newer = `${pgDump.major + 1}.2`
    expect(() => assertToolFits(pgDump, newer, pgDump.major + 1, 'the database server at db:5432')).toThrow(
      `pg_dump ${pgDump.version} (${pgDump.path}) is older than the database server at db:5432 ${newer}; pg_dump must be of major version ${pgDump.major + 1} or newer.`,
    )
    expect(() => assertToolFits(pgDump, pgDump.version, pgDump.major, 'the database server')).not.toThrow()
  })

  it('names the table when the backup user may not read it', async () => {
    await bed.sql('CREATE TABLE audit_secret (id int)')
    const error = await createBackup(bed.options({ store: new LocalStore(join(bed.dir, 'unread-store')) })).catch((e: unknown) => e)
    await bed.sql('DROP TABLE audit_secret')
    expect((error as Error).message).toBe('Could not count the rows of public.audit_secret: permission denied for table audit_secret.')
    expect(existsSync(join(bed.dir, 'unread-store'))).toBe(false)
  })

  it('lists nothing when pg_dump fails (a sequence it may not read)', async () => {
    await bed.sql('CREATE SEQUENCE audit_seq')
    const store = new LocalStore(join(bed.dir, 'failing-store'))
    const error = await createBackup(bed.options({ store })).catch((e: unknown) => e)
    await bed.sql('DROP SEQUENCE audit_seq')
    expect((error as Error).message).toMatch(
      new RegExp(
        `^pg_dump of ${bed.database.name} at 127\\.0\\.0\\.1:\\d+ exited with code 1: .*permission denied for sequence audit_seq; the partial file was removed\\.$`,
      ),
    )
    expect(readdirSync(store.location)).toEqual([])
    expect(await listBackups(store)).toEqual([])
  })

  it('removes the partial file and lists nothing when the store runs out of space', async () => {
    await bed.sql(
      `CREATE TABLE media_blobs (b bytea); INSERT INTO media_blobs SELECT decode(string_agg(md5(random()::text || g::text || s::text), ''), 'hex') FROM generate_series(1, 200) g, generate_series(1, 1000) s GROUP BY g; ALTER TABLE media_blobs OWNER TO ${bed.database.user}`,
    )
    const mountPoint = join(bed.dir, 'tiny')
    mkdirSync(mountPoint)
    await runCommand(local, ['mount', '-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mountPoint])
    try {
      const store = new LocalStore(mountPoint)
      const error = await createBackup(bed.options({ store })).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OperationError)
      expect((error as Error).message).toMatch(
        new RegExp(
          `^The backup store ${mountPoint} ran out of space \\(ENOSPC\\) after \\d+\\.\\d MB of the backup; the partial file was removed and no backup was listed\\.$`,
        ),
      )
      expect(readdirSync(mountPoint)).toEqual([])
      expect(await listBackups(store)).toEqual([])
    } finally {
      await runCommand(local, ['umount', mountPoint])
      await bed.sql('DROP TABLE media_blobs')
    }
  })

  it('refuses a missing private key and names the check when the key is not a recipient', async () => {
    await expect(readIdentity({})).rejects.toThrow(BadInputError)
    await expect(readIdentity({})).rejects.toThrow(/^backup\.identity: missing; verify and restore need the private key/)
    const other = await generateBackupKey({ name: 'someone else' })
    const wrong = await openpgp.readPrivateKey({ armoredKey: other.privateKey })
    const report = await verifyBackup(bed.store, manifest.id, { signers: bed.signers, environment: 'test', identity: wrong, record: false })
    expect(report.ok).toBe(false)
    expect(report.failedCheck).toBe('key')
    expect(report.checks.at(-1)?.detail).toBe(
      `The private key ${other.fingerprint} (backup.identity) cannot decrypt backup ${manifest.id}: it is encrypted to ${bed.recipients[0]?.fingerprint}.`,
    )
  })

  it('asks for the passphrase of a protected key and refuses a wrong one', async () => {
    const pair = await generateBackupKey({ name: 'protected', passphrase: 'correct horse battery' })
    process.env.SVCOPS_TEST_BACKUP_KEY = pair.privateKey
    process.env.SVCOPS_TEST_BACKUP_PASS = 'wrong passphrase'
    try {
      await expect(readIdentity({ identity: { env: 'SVCOPS_TEST_BACKUP_KEY' } })).rejects.toThrow(
        /^backup\.passphrase: missing; the private key [0-9A-F]{40} is protected/,
      )
      await expect(
        readIdentity({ identity: { env: 'SVCOPS_TEST_BACKUP_KEY' }, passphrase: { env: 'SVCOPS_TEST_BACKUP_PASS' } }),
      ).rejects.toThrow(/^backup\.passphrase: does not unlock the private key/)
      process.env.SVCOPS_TEST_BACKUP_PASS = 'correct horse battery'
      const key = await readIdentity({ identity: { env: 'SVCOPS_TEST_BACKUP_KEY' }, passphrase: { env: 'SVCOPS_TEST_BACKUP_PASS' } })
      expect(key.isDecrypted()).toBe(true)
    } finally {
      delete process.env.SVCOPS_TEST_BACKUP_KEY
      delete process.env.SVCOPS_TEST_BACKUP_PASS
    }
  })

  it('names the checksum check for a corrupted file and the size check for a truncated one', async () => {
    const file = join(bed.store.location, manifest.file)
    const fd = openSync(file, 'r+')
    const offset = Math.floor(statSync(file).size / 2)
    const byte = Buffer.alloc(1)
    readSync(fd, byte, 0, 1, offset)
    writeSync(fd, Buffer.from([byte[0]! ^ 0xff]), 0, 1, offset)
    closeSync(fd)
    const corrupted = await verifyBackup(bed.store, manifest.id, { signers: bed.signers, environment: 'test', identity: bed.identity })
    expect(corrupted.failedCheck).toBe('checksum')
    // Checked piece by piece as it is read: the message names the bytes of the piece that differs.
    const pieces = manifest.checksums.encryptedPieces
    const piece = Math.floor(offset / (pieces?.size ?? 1))
    expect(corrupted.checks.at(-1)?.detail).toMatch(
      new RegExp(
        `^The SHA-256 of bytes ${piece * (pieces?.size ?? 0)}-\\d+ of ${manifest.file} is [0-9a-f]{64}; the manifest says ${pieces?.sha256[piece]} \\(the file is corrupted\\)\\.$`,
      ),
    )
    expect(corrupted.checks.map((c) => c.check)).not.toContain('decrypt')
    expect((await listBackups(bed.store))[0]?.verified).toMatchObject({ ok: false, failedCheck: 'checksum' })

    truncateSync(file, 1000)
    const truncated = await verifyBackup(bed.store, manifest.id, { signers: bed.signers, environment: 'test', identity: bed.identity })
    expect(truncated.failedCheck).toBe('size')
    expect(truncated.checks.at(-1)?.detail).toBe(
      `The file ${manifest.file} has 1000 bytes; the manifest says ${manifest.sizes.encrypted} (truncated or replaced).`,
    )

    rmSync(file)
    expect(
      (await verifyBackup(bed.store, manifest.id, { signers: bed.signers, environment: 'test', identity: bed.identity })).failedCheck,
    ).toBe('file')
  })

  it('names the decrypt check when the data fails the OpenPGP integrity check although the checksum was rewritten', async () => {
    const other = await createBackup(bed.options())
    const file = join(bed.store.location, other.file)
    const data = readFileSync(file)
    const at = data.length - 40
    data[at] = (data[at] ?? 0) ^ 0x01
    writeFileSync(file, data)
    const pieceSize = other.checksums.encryptedPieces?.size ?? data.length
    const pieces = { size: pieceSize, sha256: [] as string[] }
    for (let at = 0; at < data.length; at += pieceSize)
      pieces.sha256.push(
        createHash('sha256')
          .update(data.subarray(at, at + pieceSize))
          .digest('hex'),
      )
    const tampered = {
      ...other,
      checksums: { ...other.checksums, encryptedSha256: createHash('sha256').update(data).digest('hex'), encryptedPieces: pieces },
    }
    // Re-signed with the trusted key (a signer gone rogue): the OpenPGP integrity check still holds.
    const text = JSON.stringify(tampered)
    writeFileSync(join(bed.store.location, `${other.id}.manifest.json`), text)
    writeFileSync(join(bed.store.location, `${other.id}.manifest.json.sig`), await signManifest(Buffer.from(text), bed.signer))
    const report = await verifyBackup(bed.store, other.id, { signers: bed.signers, environment: 'test', identity: bed.identity })
    expect(report.checks.map((c) => [c.check, c.ok])).toEqual([
      ['signature', true],
      ['manifest', true],
      ['key', true],
      ['checksum', true],
      ['decrypt', false],
    ])
    expect(report.checks.at(-1)?.detail).toMatch(/^Decrypting backup .* failed: .*(Modification detected|integrity|MDC)/i)
  })

  it('checks a backup whose manifest lists no pieces (made before it did) through a private copy, up front', async () => {
    const older = await createBackup(bed.options())
    const { encryptedPieces, ...checksums } = older.checksums
    expect(encryptedPieces?.sha256.length).toBeGreaterThan(0)
    const text = JSON.stringify({ ...older, checksums }, null, 2)
    writeFileSync(join(bed.store.location, `${older.id}.manifest.json`), text)
    writeFileSync(join(bed.store.location, `${older.id}.manifest.json.sig`), await signManifest(Buffer.from(text), bed.signer))
    const report = await verifyBackup(bed.store, older.id, { signers: bed.signers, environment: 'test', identity: bed.identity })
    expect(report.checks.map((c) => [c.check, c.ok])).toEqual([
      ['signature', true],
      ['manifest', true],
      ['checksum', true],
      ['key', true],
      ['decrypt', true],
    ])
    expect(report.checks[2]?.detail).toBe(
      `SHA-256 ${older.checksums.encryptedSha256} of ${older.sizes.encrypted} bytes matches the manifest`,
    )
  })

  it('refuses an id that is not a backup id before touching the store', async () => {
    await expect(verifyBackup(bed.store, '../../etc/passwd', { signers: bed.signers, environment: 'test' })).rejects.toThrow(
      /^backup id: '\.\.\/\.\.\/etc\/passwd' is not a backup id/,
    )
  })
})
