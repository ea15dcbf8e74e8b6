/**
 * A backup store in a directory on another host, over SFTP on the SSH transport's connection. The
 * same rules as the local store: files 0600, created exclusively under a random `.partial` name until they are synced
 * (coreutils `sync FILE` on the host) and renamed (`mv`, atomic on one file system).
 */
import type { Readable, Writable } from 'node:stream'
import { posix } from 'node:path'
import type { z } from 'zod'
import type { sshSchema } from '../config/schema.ts'
import { partialNameOf } from '../core/atomic-write.ts'
import { OperationError } from '../core/errors.ts'
import { runCommand } from '../core/runner.ts'
import { SshTransport } from '../drivers/ssh.ts'
import { assertPlainName } from './manifest.ts'
import { MAX_TEXT_BYTES, tooLargeInStore } from './limits.ts'
import type { BackupStore, StoreWriter } from './store-interface.ts'

// The members of ssh2's SFTP session used here (ssh2 ships no type declarations of its own).
interface SftpLike {
  readdir(path: string, cb: (error: Error | undefined, list: { filename: string }[]) => void): void
  stat(path: string, cb: (error: (Error & { code?: number }) | undefined, stats: { size: number }) => void): void
  createReadStream(path: string, options?: { highWaterMark?: number }): Readable
  createWriteStream(path: string, options: { flags: string; mode: number }): Writable
  unlink(path: string, cb: (error: (Error & { code?: number }) | undefined) => void): void
  end(): void
}

const PARTIAL = '.partial'
// SFTP status code for "no such file".
const NO_SUCH_FILE = 2
/** How long `close` waits for the streams still closing their files before it ends the session. */
const STREAMS_CLOSE_MS = 5_000

function callback<T>(fn: (cb: (error: (Error & { code?: number }) | undefined, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((error, value) => (error ? reject(error) : resolve(value))))
}

/** A directory on a host reached over SSH. */
export class SshStore implements BackupStore {
  readonly location: string
  private sftpSession: Promise<SftpLike> | undefined
  /** The streams opened on the session that have not closed yet (a file handle's close may be in flight). */
  private readonly streams = new Set<Readable | Writable>()

  private readonly transport: SshTransport
  private readonly dir: string

  constructor(transport: SshTransport, dir: string, target: { user: string; host: string; port: number }) {
    this.transport = transport
    this.dir = dir
    this.location = `${target.user}@${target.host}:${target.port}:${dir}`
  }

  private path(name: string): string {
    return posix.join(this.dir, assertPlainName(name, this.location))
  }

  private sftp(): Promise<SftpLike> {
    this.sftpSession ??= this.transport.connect().then(async (ssh) => (await ssh.requestSFTP()) as unknown as SftpLike)
    return this.sftpSession
  }

  /** Keeps `stream` in `streams` until it closes. */
  private tracked<T extends Readable | Writable>(stream: T): T {
    this.streams.add(stream)
    stream.once('close', () => this.streams.delete(stream))
    return stream
  }

  private async ensure(): Promise<void> {
    await runCommand(this.transport, ['mkdir', '-p', '-m', '0700', '--', this.dir])
  }

  async names(): Promise<string[]> {
    const sftp = await this.sftp()
    try {
      const list = await callback<{ filename: string }[]>((cb) => sftp.readdir(this.dir, cb))
      return list
        .map((e) => e.filename)
        .filter((n) => !n.endsWith(PARTIAL))
        .sort()
    } catch (error) {
      if ((error as { code?: number }).code === NO_SUCH_FILE) return []
      throw error
    }
  }

  async readText(name: string): Promise<string> {
    const chunks: Buffer[] = []
    let size = 0
    const stream = await this.openRead(name)
    for await (const chunk of stream) {
      size += (chunk as Buffer).length
      if (size > MAX_TEXT_BYTES) {
        stream.destroy()
        throw tooLargeInStore(this.location, name, (await this.size(name)) ?? size)
      }
      chunks.push(chunk as Buffer)
    }
    return Buffer.concat(chunks).toString('utf8')
  }

  async writeText(name: string, text: string): Promise<void> {
    const writer = await this.createWriter(name)
    await new Promise<void>((resolve, reject) => {
      writer.stream.once('error', reject)
      writer.stream.end(text, resolve)
    })
    await writer.commit()
  }

  async openRead(name: string): Promise<Readable> {
    return this.tracked((await this.sftp()).createReadStream(this.path(name), { highWaterMark: 1 << 20 }))
  }

  async createWriter(name: string): Promise<StoreWriter> {
    const final = this.path(name)
    // Random and created exclusively ('wx': SSH_FXF_CREAT|SSH_FXF_EXCL): no link planted ahead is followed.
    const partial = this.path(partialNameOf(name))
    await this.ensure()
    const stream = this.tracked((await this.sftp()).createWriteStream(partial, { flags: 'wx', mode: 0o600 }))
    const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()))
    return {
      stream,
      commit: async () => {
        await closed
        await runCommand(this.transport, ['sync', '--', partial])
        // -T: a directory (or a link to one) at the final name is replaced or refused, never moved into.
        await runCommand(this.transport, ['mv', '-f', '-T', '--', partial, final])
        await runCommand(this.transport, ['sync', '--', this.dir])
      },
      abort: async () => {
        stream.destroy()
        await closed
        await this.remove(posix.basename(partial))
      },
    }
  }

  async size(name: string): Promise<number | undefined> {
    const sftp = await this.sftp()
    try {
      return (await callback<{ size: number }>((cb) => sftp.stat(this.path(name), cb))).size
    } catch (error) {
      if ((error as { code?: number }).code === NO_SUCH_FILE) return undefined
      throw error
    }
  }

  async remove(name: string): Promise<void> {
    const sftp = await this.sftp()
    try {
      await callback<undefined>((cb) => sftp.unlink(this.path(name), (error) => cb(error, undefined)))
    } catch (error) {
      if ((error as { code?: number }).code !== NO_SUCH_FILE)
        throw new OperationError(`Could not remove ${name} from ${this.location}: ${(error as Error).message}.`)
    }
  }

  /**
   * Ends the SFTP session and the connection. A stream its reader dropped early (destroyed) still
   * has its file handle's close request in flight: ending the session under it fails that request,
   * and the stream reports the failure ("No response from server") as an error its reader no longer
   * listens for, an uncaught exception that would end the process. So the session ends once every
   * stream closed, or after STREAMS_CLOSE_MS; a stream still open then is past its reader, and its
   * error is dropped.
   */
  async close(): Promise<void> {
    const session = this.sftpSession
    this.sftpSession = undefined
    const open = [...this.streams]
    if (open.length > 0) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        Promise.all(
          open.map((stream) => new Promise<void>((resolve) => (stream.closed ? resolve() : stream.once('close', () => resolve())))),
        ),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, STREAMS_CLOSE_MS))),
      ])
      clearTimeout(timer)
      for (const stream of this.streams) stream.on('error', () => undefined)
    }
    if (session) (await session.catch(() => undefined))?.end()
    await this.transport.close()
  }
}

/** Opens the store `path` on the host `ssh` names (backup.store.ssh). */
export function openSshStore(ssh: z.infer<typeof sshSchema>, path: string): SshStore {
  const transport = new SshTransport(
    { host: ssh.host, port: ssh.port, user: ssh.user, keyFile: ssh.keyFile, hostKey: ssh.hostKey, trustOnFirstUse: ssh.trustOnFirstUse },
    { name: `backup store ${ssh.host}` },
  )
  return new SshStore(transport, path, { user: ssh.user, host: ssh.host, port: ssh.port })
}
