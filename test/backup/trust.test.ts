/**
 * A backup store is written by others: everything read from it is checked before it is used.
 * Each case plants what an attacker with write access to the store would, and expects a refusal
 * that names the file, with nothing read outside the store and nothing loaded into a database.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBackup, listBackups, restoreBackup, verifyBackup, type Manifest } from '../../src/backup/index.ts'
import { collect } from '../../src/core/events.ts'
import { startBackupBed, type BackupBed } from './fixture.ts'

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
  const plant = (id: string, changes: Partial<Manifest>): void => {
    writeFileSync(manifestPath(id), JSON.stringify({ ...manifest, ...changes }, null, 2))
  }
  const recordings = async () => Number((await bed.sql('SELECT count(*) AS n FROM recordings'))[0]?.n)

  it('refuses a manifest whose file points outside the store, before reading that file', async () => {
    const other = await createBackup(bed.options())
    plant(other.id, { id: other.id, file: '../../../../etc/hostname' })
    const report = await verifyBackup(bed.store, other.id, { identity: bed.identity, record: false })
    expect(report.checks.map((c) => [c.check, c.ok])).toEqual([['manifest', false]])
    expect(report.checks[0]?.detail).toBe(
      `${bed.store.location}/${other.id}.manifest.json: file: '../../../../etc/hostname' is not this backup's dump; expected '${other.id}.dump.pgp' in the store directory (a manifest never names another path).`,
    )
    const before = await recordings()
    await expect(restoreBackup(bed.store, other.id, bed.database, { identity: bed.identity, confirmed: true })).rejects.toThrow(
      /file: '\.\.\/\.\.\/\.\.\/\.\.\/etc\/hostname' is not this backup's dump/,
    )
    expect(await recordings()).toBe(before)
  })

  it('refuses a manifest that describes another backup than the one asked for (a copy under a new name)', async () => {
    const copy = manifest.id.replace(/-[0-9a-f]{4}$/, '-beef')
    writeFileSync(manifestPath(copy), readFileSync(manifestPath(manifest.id)))
    writeFileSync(join(bed.store.location, `${copy}.dump.pgp`), readFileSync(join(bed.store.location, manifest.file)))
    const report = await verifyBackup(bed.store, copy, { identity: bed.identity, record: false })
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
    const report = await verifyBackup(bed.store, big, { record: false })
    expect(report.failedCheck).toBe('manifest')
    expect(report.checks[0]?.detail).toMatch(/has 3145728 bytes; a manifest, signature or verification record has at most 1048576/)
  })
})
