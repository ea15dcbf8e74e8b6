/**
 * Backup stores: where encrypted dumps and their manifests live. One interface, two places — a
 * local directory, or a directory on a host over SSH (`ssh-store.ts`). Writes go to a new file
 * created exclusively under a random `.partial` name (never through a link planted in a shared
 * store) and become visible only after they are synced and renamed, so a reader never sees half a file.
 */
import { createReadStream, type WriteStream } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { Readable } from 'node:stream'
import type { BackupConfig } from '../config/schema.ts'
import { CREATE_EXCLUSIVE, partialNameOf, writeFileAtomic } from '../core/atomic-write.ts'
import type { BackupStore, StoreWriter } from './store-interface.ts'
import { MAX_TEXT_BYTES, tooLargeInStore } from './limits.ts'
import { assertPlainName } from './manifest.ts'

export type { BackupStore, StoreWriter } from './store-interface.ts'

const PARTIAL = '.partial'

/** A directory on this machine, created 0700 when missing. */
export class LocalStore implements BackupStore {
  readonly location: string
  constructor(dir: string) {
    this.location = resolve(dir)
  }

  private path(name: string): string {
    return join(this.location, assertPlainName(name, this.location))
  }

  async ensure(): Promise<void> {
    await mkdir(this.location, { recursive: true, mode: 0o700 })
  }

  async names(): Promise<string[]> {
    try {
      return (await readdir(this.location)).filter((n) => !n.endsWith(PARTIAL)).sort()
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    }
  }

  async readText(name: string): Promise<string> {
    const handle = await open(this.path(name), 'r')
    try {
      const { size } = await handle.stat()
      if (size > MAX_TEXT_BYTES) throw tooLargeInStore(this.location, name, size)
      return await handle.readFile('utf8')
    } finally {
      await handle.close()
    }
  }

  async writeText(name: string, text: string): Promise<void> {
    await this.ensure()
    // A store may be shared: never written through a link planted at a guessable name.
    writeFileAtomic(this.path(name), text, { mode: 0o600, sync: true })
  }

  openRead(name: string): Promise<Readable> {
    const stream = createReadStream(this.path(name), { highWaterMark: 1 << 20 })
    return new Promise((resolveStream, reject) => {
      stream.once('open', () => resolveStream(stream))
      stream.once('error', reject)
    })
  }

  async createWriter(name: string): Promise<StoreWriter> {
    const final = this.path(name)
    const partial = this.path(partialNameOf(name))
    await this.ensure()
    const handle = await open(partial, CREATE_EXCLUSIVE, 0o600)
    const stream: WriteStream = handle.createWriteStream({ highWaterMark: 1 << 20 })
    const closed = new Promise<void>((resolveClosed) => stream.once('close', () => resolveClosed()))
    return {
      stream,
      commit: async () => {
        await closed
        // fsync through a second descriptor syncs the same inode: the data is on disk before the rename.
        const handle = await open(partial, 'r')
        try {
          await handle.sync()
        } finally {
          await handle.close()
        }
        await rename(partial, final)
        await this.syncDir()
      },
      abort: async () => {
        stream.destroy()
        await closed
        await rm(partial, { force: true })
      },
    }
  }

  async size(name: string): Promise<number | undefined> {
    try {
      return (await stat(this.path(name))).size
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
  }

  async remove(name: string): Promise<void> {
    await rm(this.path(name), { force: true })
  }

  close(): Promise<void> {
    return Promise.resolve()
  }

  /** A rename is durable only once the directory entry is synced too. */
  private async syncDir(): Promise<void> {
    const dir = await open(this.location, 'r')
    try {
      await dir.sync()
    } finally {
      await dir.close()
    }
  }
}

/**
 * Opens the store an environment's `backup.store` names: a local directory, or (with `ssh`) a
 * directory on that host over SFTP.
 */
export async function openStore(config: Pick<BackupConfig, 'store'>): Promise<BackupStore> {
  const { path, ssh } = config.store
  if (ssh) {
    const { openSshStore } = await import('./ssh-store.ts')
    return openSshStore(ssh, path)
  }
  return new LocalStore(path)
}
