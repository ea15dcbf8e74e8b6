/**
 * Decompressing a backup's zstd stream (src/backup/zstd-frames.ts): every valid stream of one or
 * more frames gives back all its bytes, however its chunks split it and however late the reader
 * starts reading, as `verify --restore-test` reads it (decrypting ahead while the scratch database
 * is made). Node's own compressor ends a stream with a second, empty frame when its input ends with
 * writes queued; a chunk boundary inside that frame made the plain decompressor drop the data.
 */
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { setTimeout as sleep } from 'node:timers/promises'
import { constants, createZstdCompress, zstdCompressSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { zstdDecompressed } from '../../src/backup/zstd-frames.ts'
import { random } from '../support/random.ts'

/** Compressible data with some noise, as a pg_dump archive is. */
function dumpLike(bytes: number, next: () => number): Buffer {
  const out = Buffer.alloc(bytes)
  for (let i = 0; i < bytes; i++) out[i] = next() < 0.1 ? Math.floor(next() * 256) : 65 + (i % 23)
  return out
}

/** `data` cut at `cuts`, written one chunk at a time with a pause between; read only after the input ended. */
async function decompressLate(data: Buffer, cuts: number[]): Promise<Buffer> {
  const bounds = [0, ...cuts.filter((c) => c > 0 && c < data.length).sort((a, b) => a - b), data.length]
  const chunks = bounds.slice(1).map((end, i) => data.subarray(bounds[i], end))
  async function* slowly(): AsyncGenerator<Buffer> {
    for (const chunk of chunks) {
      yield chunk
      await sleep(1)
    }
  }
  const out = zstdDecompressed(Readable.from(slowly()))
  await sleep(10 + chunks.length * 2)
  return buffer(out)
}

const EMPTY_FRAME = zstdCompressSync(Buffer.alloc(0))

describe('zstd decompression of a backup', () => {
  it('gives every byte back when a chunk boundary falls anywhere in a trailing empty frame', async () => {
    const plain = dumpLike(20_000, random(1))
    const data = zstdCompressSync(plain)
    const stream = Buffer.concat([data, EMPTY_FRAME])
    for (let cut = data.length - 2; cut <= stream.length; cut++) {
      expect((await decompressLate(stream, [cut])).equals(plain), `cut at ${cut - data.length} from the frame's end`).toBe(true)
    }
  })

  it("gives every byte back from Node's own streaming compressor, whatever the writes", async () => {
    const next = random(2)
    for (let round = 0; round < 20; round++) {
      const pieces = Array.from({ length: 1 + Math.floor(next() * 6) }, () => dumpLike(200 + Math.floor(next() * 5000), next))
      const compressor = createZstdCompress({ params: { [constants.ZSTD_c_compressionLevel]: 1 } })
      const compressed = buffer(compressor)
      for (const piece of pieces) compressor.write(piece)
      compressor.end()
      const stream = await compressed
      const cuts = Array.from({ length: 3 }, () => Math.floor(next() * stream.length))
      expect((await decompressLate(stream, cuts)).equals(Buffer.concat(pieces)), `round ${round}, cuts ${cuts.join(',')}`).toBe(true)
    }
  })

  it.each([3, 4, 5])('decodes concatenated frames with checksums and skippable frames, chunked at random (seed %i)', async (seed) => {
    const next = random(seed)
    const parts = Array.from({ length: 4 }, () => dumpLike(1000 + Math.floor(next() * 30_000), next))
    const skippable = Buffer.concat([Buffer.from([0x50, 0x2a, 0x4d, 0x18, 5, 0, 0, 0]), randomBytes(5)])
    const frames = parts.map((part, i) =>
      zstdCompressSync(part, { params: { [constants.ZSTD_c_checksumFlag]: i % 2, [constants.ZSTD_c_contentSizeFlag]: i % 2 } }),
    )
    const stream = Buffer.concat([frames[0]!, skippable, frames[1]!, EMPTY_FRAME, frames[2]!, frames[3]!, EMPTY_FRAME])
    const cuts = Array.from({ length: 12 }, () => Math.floor(next() * stream.length))
    expect((await decompressLate(stream, cuts)).equals(Buffer.concat(parts))).toBe(true)
  })

  it('refuses a stream cut short inside a frame, and data that is not zstd, naming what is wrong', async () => {
    const data = zstdCompressSync(dumpLike(5000, random(6)))
    await expect(decompressLate(data.subarray(0, data.length - 3), [10])).rejects.toThrow(/ends in the middle of a frame \(truncated\)/)
    await expect(decompressLate(Buffer.concat([data, Buffer.from('PGDMP')]), [])).rejects.toThrow(
      new RegExp(`not zstd: no frame starts at byte ${data.length}`),
    )
    await expect(decompressLate(Buffer.alloc(0), [])).rejects.toThrow(/holds no frame/)
  })

  it('names the failure of its input (an integrity check at the end) over the garbage that came before it', async () => {
    const garbage = Buffer.concat([zstdCompressSync(dumpLike(5000, random(7))).subarray(0, 40), Buffer.from('not a frame at all')])
    async function* tampered(): AsyncGenerator<Buffer> {
      yield garbage
      await sleep(5)
      yield randomBytes(1000)
      throw new Error('Modification detected.')
    }
    await expect(buffer(zstdDecompressed(Readable.from(tampered())))).rejects.toThrow('Modification detected.')
    // Without a failure upstream, the decompression's own error.
    await expect(buffer(zstdDecompressed(Readable.from([garbage, randomBytes(1000)])))).rejects.toThrow(/zstd|frame|block/i)
  })

  it('stops reading its input when its reader stops early (pg_restore --list)', async () => {
    const data = zstdCompressSync(randomBytes(4 << 20))
    let read = 0
    async function* chunks(): AsyncGenerator<Buffer> {
      for (let at = 0; at < data.length; at += 16_384) {
        read = at
        yield data.subarray(at, at + 16_384)
        await sleep(1)
      }
    }
    const input = Readable.from(chunks())
    const out = zstdDecompressed(input)
    for await (const _chunk of out) break
    await sleep(20)
    expect(input.destroyed).toBe(true)
    expect(read).toBeLessThan(data.length / 2)
  })
})
