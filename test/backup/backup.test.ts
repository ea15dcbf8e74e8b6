import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  clientConfig,
  createBackup,
  listBackups,
  restoreBackup,
  rowCounts,
  schemaFingerprint,
  verifyBackup,
  type Manifest,
} from '../../src/backup/index.ts'
import { local, runCommand } from '../../src/core/runner.ts'
import { checkedCopy, openDecrypted } from '../../src/backup/decrypt.ts'
import { listWithoutSvcops } from '../../src/backup/restore-list.ts'
import { findPgTool } from '../../src/drivers/postgres.ts'
import { ownSessionPids, rememberOwnSession } from '../../src/drivers/postgres-sessions.ts'
import { startBackupBed, type BackupBed } from './fixture.ts'

describe('backup create, verify and restore on a real PostgreSQL', () => {
  let bed: BackupBed
  let manifest: Manifest

  beforeAll(async () => {
    bed = await startBackupBed(2000)
    manifest = await createBackup(bed.options({ serviceVersions: { rec1: '1.6.0' } }))
  })
  afterAll(async () => {
    await bed?.stop()
  })

  it('writes an encrypted dump and a manifest, both 0600, and lists the backup', async () => {
    const files = readdirSync(bed.store.location).sort()
    expect(files).toEqual([`${manifest.id}.dump.pgp`, `${manifest.id}.manifest.json`, `${manifest.id}.manifest.json.sig`])
    for (const f of files) expect(statSync(join(bed.store.location, f)).mode & 0o777).toBe(0o600)
    // No plaintext: the pg_dump magic never appears in the stored file.
    expect(readFileSync(join(bed.store.location, manifest.file)).includes(Buffer.from('PGDMP'))).toBe(false)
    expect(manifest.rowCounts).toEqual({ 'public.recordings': 2000, 'public.schema_migrations': 3 })
    expect(manifest.versions.pgDump).toMatch(/^\d+\.\d+$/)
    expect(manifest.encryption.recipients[0]?.fingerprint).toBe(bed.recipients[0]?.fingerprint)
    expect(manifest.serviceVersions).toEqual({ rec1: '1.6.0' })
    expect((await listBackups(bed.store, { signers: bed.signers, environment: 'test' })).map((b) => [b.id, b.signature])).toEqual([
      [manifest.id, 'trusted'],
    ])
  })

  it('verifies with a full test restore whose row counts and fingerprint equal the manifest', async () => {
    const report = await verifyBackup(bed.store, manifest.id, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      restoreTest: { server: bed.database },
    })
    // One read of the store: each piece is checked as it flows, before it is decrypted and loaded.
    expect(report.checks.map((c) => [c.check, c.ok])).toEqual([
      ['signature', true],
      ['manifest', true],
      ['key', true],
      ['checksum', true],
      ['decrypt', true],
      ['restore', true],
      ['row counts', true],
      ['fingerprint', true],
    ])
    expect(report.ok).toBe(true)
    const [entry] = await listBackups(bed.store)
    expect(entry?.verified).toMatchObject({ ok: true, restoreTest: true })
    // The role's own scratch databases: other files may be verifying backups on the same server.
    const scratch = await bed.sql(
      `SELECT datname FROM pg_database WHERE datname LIKE 'svcops_verify_%' AND datdba = (SELECT oid FROM pg_roles WHERE rolname = '${bed.database.user}')`,
      'postgres',
    )
    expect(scratch).toEqual([])
  })

  it('is restorable without svcops: gpg --decrypt | zstd -d | pg_restore gives the same rows', async () => {
    expect(manifest.compression).toEqual({ method: 'zstd', level: 1 })
    const gnupgHome = mkdtempSync(join(tmpdir(), 'svcops-gnupg-'))
    const byHand = `${bed.database.name}_by_hand`
    await bed.cluster.query(`CREATE DATABASE ${byHand} OWNER ${bed.database.user}`)
    const env = {
      GNUPGHOME: gnupgHome,
      PGHOST: bed.database.host,
      PGPORT: String(bed.database.port),
      PGUSER: bed.database.user,
      PGPASSWORD: bed.database.password ?? '',
      PGDATABASE: byHand,
    }
    await runCommand(local, ['gpg', '--batch', '--import', bed.privateKeyFile, bed.signerPublicKeyFile], { env })
    // As the README shows: the signature first, then the dump's SHA-256 from the signed manifest, then decrypt.
    const restored = await runCommand(
      local,
      [
        'bash',
        '-c',
        [
          'set -eo pipefail',
          `cd '${bed.store.location}'`,
          `gpg --batch --verify ${manifest.id}.manifest.json.sig ${manifest.id}.manifest.json`,
          `sed -n 's/.*"encryptedSha256": "\\([0-9a-f]*\\)".*/\\1  ${manifest.file}/p' ${manifest.id}.manifest.json | sha256sum -c`,
          `gpg --batch --decrypt ${manifest.file} | zstd -d | pg_restore --no-owner --exit-on-error -d ${byHand}`,
        ].join('\n'),
      ],
      { env, check: false },
    ).finally(async () => {
      // gpg started an agent for the secret key; it must not outlive the test.
      await runCommand(local, ['gpgconf', '--kill', 'gpg-agent'], { env, check: false })
      rmSync(gnupgHome, { recursive: true, force: true })
    })
    expect(restored.stderr).toMatch(/Good signature from "svcops test signing <signing@example.invalid>"/)
    expect(restored.stdout).toContain(`${manifest.file}: OK`)
    expect(restored.stderr).toMatch(/encrypted with 255-bit ECDH key/)
    expect(restored.code).toBe(0)
    const config = clientConfig(bed.database, byHand)
    expect(await rowCounts(config)).toEqual(manifest.rowCounts)
    expect(await schemaFingerprint(config)).toBe(manifest.fingerprint)
  })

  it('reads an archive zstd did not compress (backup.compression 0, and the pg_dump-zlib backups made before zstd) without decompressing it', async () => {
    const plain = await createBackup(bed.options({ compressionLevel: 0 }))
    expect(plain.compression).toEqual({ method: 'pg_dump-zlib', level: 0 })
    // Uncompressed, the archive is much larger than the zstd one of the same rows.
    expect(plain.sizes.encrypted).toBeGreaterThan(manifest.sizes.encrypted * 2)
    const report = await verifyBackup(bed.store, plain.id, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      restoreTest: { server: bed.database },
    })
    expect(report.checks.filter((c) => !c.ok)).toEqual([])
    expect(report.ok).toBe(true)
  })

  it('changes the fingerprint with a migration and restores the backed-up schema and rows over it', async () => {
    await bed.sql(
      "ALTER TABLE recordings ADD COLUMN codec text NOT NULL DEFAULT 'h264'; CREATE TABLE recording_tags (id int PRIMARY KEY); DELETE FROM recordings WHERE id % 2 = 0",
    )
    const migrated = await schemaFingerprint(clientConfig(bed.database))
    expect(migrated).not.toBe(manifest.fingerprint)
    const report = await restoreBackup(bed.store, manifest.id, bed.database, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      confirmed: true,
      expectFingerprint: manifest.fingerprint,
    })
    expect(report.fingerprint).toBe(manifest.fingerprint)
    expect(report.rowCounts).toEqual(manifest.rowCounts)
    expect(await bed.sql("SELECT to_regclass('recording_tags') AS t")).toEqual([{ t: null }])
  })

  it('refuses to restore without confirmation, into a busy database, or a backup of another schema', async () => {
    const before = await rowCounts(clientConfig(bed.database))
    await expect(
      restoreBackup(bed.store, manifest.id, bed.database, {
        signers: bed.signers,
        environment: 'test',
        identity: bed.identity,
        confirmed: false,
      }),
    ).rejects.toThrow(/needs confirmation/)
    await expect(
      restoreBackup(bed.store, manifest.id, bed.database, {
        signers: bed.signers,
        environment: 'test',
        identity: bed.identity,
        confirmed: true,
        expectFingerprint: 'f'.repeat(64),
      }),
    ).rejects.toThrow(/has schema fingerprint [0-9a-f]{64}; expected f{64}/)
    const service = new pg.Client({ ...clientConfig(bed.database), application_name: 'svc-recording' })
    await service.connect()
    try {
      await expect(
        restoreBackup(bed.store, manifest.id, bed.database, {
          signers: bed.signers,
          environment: 'test',
          identity: bed.identity,
          confirmed: true,
        }),
      ).rejects.toThrow(
        new RegExp(`1 other session\\(s\\) are connected to ${bed.database.name} \\(svc-recording\\); stop the recording service`),
      )
    } finally {
      await service.end()
    }
    expect(await rowCounts(clientConfig(bed.database))).toEqual(before)
  })

  it("tells svcops' own sessions apart by backend pid: a stranger named svcops-run-store refuses the restore, svcops' own session does not", async () => {
    const options = { signers: bed.signers, environment: 'test', identity: bed.identity, confirmed: true }
    const stranger = new pg.Client({ ...clientConfig(bed.database), application_name: 'svcops-run-store' })
    await stranger.connect()
    try {
      await expect(restoreBackup(bed.store, manifest.id, bed.database, options)).rejects.toThrow(
        new RegExp(`1 other session\\(s\\) are connected to ${bed.database.name} \\(svcops-run-store\\); stop the recording service`),
      )
    } finally {
      await stranger.end()
    }
    // A session this process opened as its own (the run store's, the lock's), whatever its name.
    const own = new pg.Client({ ...clientConfig(bed.database), application_name: 'svc-recording' })
    await own.connect()
    try {
      await rememberOwnSession(own, bed.database)
      const report = await restoreBackup(bed.store, manifest.id, bed.database, options)
      expect(report.fingerprint).toBe(manifest.fingerprint)
    } finally {
      await own.end()
    }
    // Once it ended, its pid is nobody's: the server may give it to a stranger next.
    expect(ownSessionPids(bed.database)).toEqual([])
  })

  it('restores over schemas of its own that exist again in the database, and removes schemas made after the backup', async () => {
    const asService = `SET ROLE ${pg.escapeIdentifier(bed.database.user)};`
    await bed.sql(
      `${asService} CREATE SCHEMA audit; CREATE TABLE audit.events (id int PRIMARY KEY, what text); INSERT INTO audit.events SELECT g, 'e' || g FROM generate_series(1, 7) g`,
    )
    const withAudit = await createBackup(bed.options({}))
    expect(withAudit.rowCounts['audit.events']).toBe(7)
    await bed.sql(
      `${asService} DELETE FROM audit.events WHERE id > 2; CREATE TABLE audit.later (id int); CREATE SCHEMA scratch; CREATE TABLE scratch.notes (id int)`,
    )
    // pg_restore creates every schema but public itself; one left in place used to fail the restore.
    const report = await restoreBackup(bed.store, withAudit.id, bed.database, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      confirmed: true,
      expectFingerprint: withAudit.fingerprint,
    })
    expect(report.rowCounts).toEqual(withAudit.rowCounts)
    expect(await bed.sql("SELECT to_regclass('audit.later') AS later, to_regnamespace('scratch')::text AS scratch")).toEqual([
      { later: null, scratch: null },
    ])
    expect(await rowCounts(clientConfig(bed.database))).toEqual(withAudit.rowCounts)
  })

  it('restores a backup taken before the svcops schema was left out without that schema: the runs state stays as it is', async () => {
    const asService = `SET ROLE ${pg.escapeIdentifier(bed.database.user)};`
    await bed.sql(
      `${asService} CREATE SCHEMA svcops; CREATE TABLE svcops.runs (id text PRIMARY KEY); INSERT INTO svcops.runs VALUES ('before-the-backup')`,
    )
    // Such a backup came from the same pg_dump without --exclude-schema=svcops.
    const pgDump = (await findPgTool('pg_dump')).path
    const bin = mkdtempSync(join(tmpdir(), 'svcops-older-pg-dump-'))
    writeFileSync(
      join(bin, 'pg_dump'),
      `#!/bin/sh\nfor a; do shift; [ "$a" = --exclude-schema=svcops ] || set -- "$@" "$a"; done\nexec ${pgDump} "$@"\n`,
      { mode: 0o755 },
    )
    const path = process.env.PATH
    process.env.PATH = `${bin}:${path ?? ''}`
    let older: Manifest
    try {
      older = await createBackup(bed.options({}))
    } finally {
      process.env.PATH = path
    }
    // It does hold the schema, its table and the table's row.
    const copy = await checkedCopy(bed.store, older)
    const contents = await listWithoutSvcops(await openDecrypted(copy, older, bed.identity), await findPgTool('pg_restore')).finally(() =>
      copy.remove(),
    )
    contents.remove()
    expect(contents.left.map((l) => l.replace(/^\d+; \d+ \d+ /, ''))).toEqual(
      expect.arrayContaining([expect.stringMatching(/^SCHEMA - svcops /), expect.stringMatching(/^TABLE DATA svcops runs /)]),
    )

    // Runs went on after the backup; the service's data changed too.
    await bed.sql(`${asService} INSERT INTO svcops.runs VALUES ('after-the-backup'); DELETE FROM recordings WHERE id % 3 = 0`)
    const report = await restoreBackup(bed.store, older.id, bed.database, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      confirmed: true,
      expectFingerprint: older.fingerprint,
    })
    expect(report.rowCounts).toEqual(older.rowCounts)
    expect(await bed.sql('SELECT id FROM svcops.runs ORDER BY id')).toEqual([{ id: 'after-the-backup' }, { id: 'before-the-backup' }])
  })
})
