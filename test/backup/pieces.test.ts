/**
 * The piece-by-piece check `verify` reads backups through (src/backup/decrypt.ts): every piece of
 * the stored file is held back until its SHA-256 equals the one the signed manifest lists, so no
 * byte that differs ever reaches the decryption. Small pieces here, so one test file has several.
 */
import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { PieceChecker } from '../../src/backup/decrypt.ts'
import type { Manifest } from '../../src/backup/manifest.ts'
import { ChunkJoiner, PIECE_BYTES, PieceHashingTap } from '../../src/backup/streams.ts'

const SIZE = 16

function piecesOf(data: Buffer, size = SIZE): string[] {
  const out: string[] = []
  for (let at = 0; at < data.length; at += size)
    out.push(
      createHash('sha256')
        .update(data.subarray(at, at + size))
        .digest('hex'),
    )
  return out
}

function manifestFor(data: Buffer): Manifest {
  return {
    file: 'lab-20260101T000000Z-abcd.dump.pgp',
    sizes: { dump: 0, encrypted: data.length },
    checksums: { encryptedSha256: '0'.repeat(64), dumpSha256: '0'.repeat(64), encryptedPieces: { size: SIZE, sha256: piecesOf(data) } },
  } as Manifest
}

/** Feeds `chunks` through a checker made for `original`; what came out, and the error if any. */
async function check(original: Buffer, chunks: Buffer[]): Promise<{ out: Buffer; error?: Error; checker: PieceChecker }> {
  const manifest = manifestFor(original)
  const checker = new PieceChecker(manifest, manifest.checksums.encryptedPieces!)
  const got: Buffer[] = []
  // Everything the checker passed on, as it passed it (a consumer that reads as it goes).
  checker.on('data', (chunk: Buffer) => got.push(chunk))
  const error = await new Promise<Error | undefined>((done) => {
    checker.on('end', () => done(undefined))
    checker.on('error', done)
    Readable.from(chunks, { objectMode: false }).pipe(checker)
  })
  return { out: Buffer.concat(got), checker, ...(error ? { error } : {}) }
}

/** Splits a buffer into chunks of uneven sizes, as a store's reads would deliver it. */
function unevenly(data: Buffer): Buffer[] {
  const chunks: Buffer[] = []
  for (let at = 0, n = 1; at < data.length; at += n, n = (n * 7) % 23 || 5) chunks.push(data.subarray(at, at + n))
  return chunks
}

describe('PieceChecker', () => {
  it('passes the file through unchanged when every piece matches, whatever the read sizes', async () => {
    const data = randomBytes(SIZE * 5 + 3)
    const result = await check(data, unevenly(data))
    expect(result.error).toBeUndefined()
    expect(result.out.equals(data)).toBe(true)
    expect(result.checker.complete).toBe(true)
  })

  it('stops at the piece that differs, naming its bytes, and never passes a byte of it on', async () => {
    const data = randomBytes(SIZE * 5)
    const altered = Buffer.from(data)
    altered[SIZE * 2 + 5] = (altered[SIZE * 2 + 5] ?? 0) ^ 0x01
    const result = await check(data, unevenly(altered))
    expect(result.error?.message).toMatch(
      new RegExp(
        `^The SHA-256 of bytes ${SIZE * 2}-${SIZE * 3 - 1} of lab-20260101T000000Z-abcd\\.dump\\.pgp is [0-9a-f]{64}; the manifest says ${piecesOf(data)[2]} \\(the file is corrupted\\)\\.$`,
      ),
    )
    expect(result.checker.failure?.check).toBe('checksum')
    expect(result.out.equals(data.subarray(0, SIZE * 2))).toBe(true)
    expect(result.checker.complete).toBe(false)
  })

  it('refuses a file that ends early or grows while it is read (the size check)', async () => {
    const data = randomBytes(SIZE * 3)
    const short = await check(data, [data.subarray(0, SIZE * 2)])
    expect(short.checker.failure?.check).toBe('size')
    expect(short.error?.message).toBe(
      `The file lab-20260101T000000Z-abcd.dump.pgp ended after ${SIZE * 2} bytes while it was read; the manifest says ${SIZE * 3} (truncated or replaced).`,
    )
    const long = await check(data, [data, randomBytes(SIZE)])
    expect(long.checker.failure?.check).toBe('size')
    expect(long.out.equals(data)).toBe(true)
  })

  it('checks what backup create recorded: PieceHashingTap lists the same pieces at PIECE_BYTES', async () => {
    const data = randomBytes(PIECE_BYTES * 2 + 1000)
    const tap = new PieceHashingTap()
    for await (const _ of Readable.from(unevenly(data.subarray(0, 5000)).concat([data.subarray(5000)])).pipe(tap));
    expect(tap.pieces).toEqual(piecesOf(data, PIECE_BYTES))
    expect(tap.pieces).toHaveLength(3)
  })
})

describe('ChunkJoiner', () => {
  it('joins the small chunks of a pipe into chunks of at least the size asked, every byte in order', async () => {
    /** The chunks as the joiner pushed them ('data' events; a read() would join them again). */
    const pushed = async (chunks: Buffer[]): Promise<Buffer[]> => {
      const out: Buffer[] = []
      const joiner = Readable.from(chunks).pipe(new ChunkJoiner(1024))
      joiner.on('data', (chunk: Buffer) => out.push(chunk))
      await new Promise((resolve) => joiner.on('end', resolve))
      return out
    }
    const data = randomBytes(10_000)
    const joined = await pushed(unevenly(data))
    expect(Buffer.concat(joined).equals(data)).toBe(true)
    expect(joined.slice(0, -1).every((chunk) => chunk.length >= 1024)).toBe(true)
    expect(joined.length).toBeGreaterThan(5)
    expect(await pushed([])).toEqual([])
  })
})
