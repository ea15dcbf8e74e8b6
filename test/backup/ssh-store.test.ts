import { chmodSync, chownSync, mkdirSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBackup, listBackups, openStore, pruneBackups, verifyBackup, type BackupStore } from '../../src/backup/index.ts'
import { lookupUser, startSshd, type Sshd } from '../../src/lab/sshd.ts'
import { startBackupBed, type BackupBed } from './fixture.ts'

describe('backup store on a host over SSH/SFTP (real sshd on loopback)', () => {
  let bed: BackupBed
  let sshd: Sshd
  let store: BackupStore
  let remoteDir: string

  beforeAll(async () => {
    ;[bed, sshd] = await Promise.all([startBackupBed(800), startSshd()])
    // The SSH user must be able to reach its directory inside the test's private temp dir.
    chmodSync(bed.dir, 0o711)
    const parent = join(bed.dir, 'remote')
    mkdirSync(parent, { mode: 0o755 })
    const owner = lookupUser(sshd.user)
    if (owner) chownSync(parent, owner.uid, owner.gid)
    remoteDir = join(parent, 'backups')
    store = await openStore({
      store: {
        path: remoteDir,
        ssh: { host: sshd.host, port: sshd.port, user: sshd.user, keyFile: sshd.privateKeyPath, hostKey: sshd.hostKey },
      },
    })
  })
  afterAll(async () => {
    await store?.close()
    await sshd?.stop()
    await bed?.stop()
  })

  it('creates, lists, verifies with a restore test and prunes through the same interface', async () => {
    expect(store.location).toBe(`${sshd.user}@127.0.0.1:${sshd.port}:${remoteDir}`)
    const first = await createBackup(bed.options({ store }))
    const files = readdirSync(remoteDir).sort()
    expect(files).toEqual([first.file, `${first.id}.manifest.json`, `${first.id}.manifest.json.sig`])
    for (const f of files) expect(statSync(join(remoteDir, f)).mode & 0o777).toBe(0o600)

    const report = await verifyBackup(store, first.id, {
      signers: bed.signers,
      environment: 'test',
      identity: bed.identity,
      restoreTest: { server: bed.database },
    })
    expect(report.failedCheck).toBeUndefined()
    expect(report.ok).toBe(true)

    const second = await createBackup(bed.options({ store }))
    expect((await listBackups(store)).map((b) => [b.id, b.verified?.ok ?? null])).toEqual([
      [second.id, null],
      [first.id, true],
    ])
    const plan = await pruneBackups(store, { environment: 'test', keepLast: 1 })
    expect(plan.remove).toEqual([])
    expect(plan.keep.map((k) => k.id)).toEqual([second.id, first.id])
  })
  it('never reads or writes outside its directory, whatever name it is given', async () => {
    for (const name of ['../../../../etc/hostname', '/etc/hostname', '..', 'x/../../y']) {
      const refused = `'${name}' is not a file name inside the backup store ${store.location}`
      await expect(store.readText(name)).rejects.toThrow(refused)
      await expect(store.openRead(name)).rejects.toThrow(refused)
      await expect(store.size(name)).rejects.toThrow(refused)
      await expect(store.createWriter(name)).rejects.toThrow(refused)
    }
  })
})
