/**
 * Stream plumbing for backups: bridges between Node streams (pg_dump, files, SFTP) and the web
 * streams openpgp.js works with, pulled one chunk at a time so memory stays bounded however big
 * the dump is, and a pass-through that hashes and counts what flows by.
 */
import { createHash, type Hash } from 'node:crypto'
import { Transform, type Readable } from 'node:stream'

/**
 * A pull-based web stream over a Node stream: the next chunk is read only when the consumer asks,
 * so a slow consumer slows the producer instead of buffering the dump in memory.
 */
export function toWebStream(readable: Readable): ReadableStream<Uint8Array> {
  const iterator = readable[Symbol.asyncIterator]() as AsyncIterator<Buffer>
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next: IteratorResult<Buffer> = await iterator.next()
        if (next.done) controller.close()
        else controller.enqueue(new Uint8Array(next.value.buffer, next.value.byteOffset, next.value.byteLength))
      },
      cancel(reason) {
        readable.destroy(reason instanceof Error ? reason : undefined)
      },
    },
    { highWaterMark: 0 },
  )
}

/**
 * Joins the small chunks a pipe delivers into chunks of at least `size` bytes (the last may be
 * shorter). A pipe is read at most 64 KiB at a time, and 4 KiB at a time when the writer writes that
 * little (pg_dump without `stdbuf`); every later stage (a hash update, a zstd call on the thread
 * pool, an encryption step) costs a fixed amount per chunk, which fewer, larger chunks save: a
 * backup's create took about a fifth less time with 1 MiB chunks (docs/benchmarks.md).
 */
export class ChunkJoiner extends Transform {
  private readonly size: number
  private parts: Buffer[] = []
  private held = 0

  constructor(size: number) {
    super()
    this.size = size
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.parts.push(chunk)
    this.held += chunk.length
    if (this.held >= this.size) this.release()
    callback()
  }

  override _flush(callback: (error?: Error | null) => void): void {
    if (this.held > 0) this.release()
    callback()
  }

  private release(): void {
    const joined = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.held)
    this.parts = []
    this.held = 0
    this.push(joined)
  }
}

/** A pass-through that computes the SHA-256 and the byte count of everything that flows through it. */
export class HashingTap extends Transform {
  readonly hash: Hash = createHash('sha256')
  bytes = 0

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null, data?: Buffer) => void): void {
    this.hash.update(chunk)
    this.bytes += chunk.length
    callback(null, chunk)
  }

  /** Hex digest; call once, after the stream finished. */
  digest(): string {
    return this.hash.digest('hex')
  }
}

/** Size of the pieces of the stored file whose SHA-256 the manifest lists (`checksums.encryptedPieces`). */
export const PIECE_BYTES = 4 << 20

/**
 * A pass-through that records the SHA-256 of every `PIECE_BYTES` piece of what flows through it:
 * listed in the signed manifest, they let a reader check the stored file piece by piece as it
 * reads it, in one read and without a copy (`PieceChecker` in decrypt.ts).
 */
export class PieceHashingTap extends Transform {
  readonly pieces: string[] = []
  private piece: Hash = createHash('sha256')
  private filled = 0

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null, data?: Buffer) => void): void {
    for (let offset = 0; offset < chunk.length;) {
      const take = Math.min(PIECE_BYTES - this.filled, chunk.length - offset)
      this.piece.update(chunk.subarray(offset, offset + take))
      this.filled += take
      offset += take
      if (this.filled === PIECE_BYTES) this.close()
    }
    callback(null, chunk)
  }

  override _flush(callback: (error?: Error | null) => void): void {
    if (this.filled > 0) this.close()
    callback()
  }

  private close(): void {
    this.pieces.push(this.piece.digest('hex'))
    this.piece = createHash('sha256')
    this.filled = 0
  }
}
