/**
 * zstd decompression that holds for every valid zstd stream, whatever the chunks it arrives in.
 *
 * A zstd stream is one or more frames (RFC 8878, section 3.1). Node's zstd streams write a second,
 * empty frame after the data when their input ends with writes still queued (nodejs/node#66078),
 * and the decompressor drops whatever follows the end of a frame within one write
 * (nodejs/node#64741). A backup whose decrypted chunks happen to split that empty frame then
 * fails: the bytes before the split are dropped, the rest are read as a frame of their own, and the
 * stream errors with "Unknown frame descriptor" after its data, which a reader that had not begun
 * reading never sees. `FrameAligner` cuts the input at every frame boundary (skippable frames
 * included), so each write to the decompressor holds bytes of one frame only. A stream that ends
 * inside a frame is refused, which Node's decompressor does not always do.
 */
import { PassThrough, Transform, type Readable } from 'node:stream'
import { createZstdDecompress } from 'node:zlib'

const ZSTD_MAGIC = 0xfd2fb528
const SKIPPABLE_MASK = 0xfffffff0
const SKIPPABLE_MAGIC = 0x184d2a50

/** Where the parser is: reading a header of known length, or passing `left` bytes of a block body. */
type State =
  | { at: 'magic' }
  | { at: 'frame-header' }
  | { at: 'block-header' }
  | { at: 'body'; left: number; last: boolean }
  | { at: 'checksum' }
  | { at: 'skippable-size' }
  | { at: 'skip'; left: number }

/** Passes a zstd stream on cut at its frame boundaries: no chunk it pushes spans two frames. */
export class FrameAligner extends Transform {
  private state: State = { at: 'magic' }
  /** Header bytes gathered across chunks (at most 18: a frame header's maximum). */
  private header = Buffer.alloc(0)
  private checksum = false
  private frames = 0
  /** Bytes read before the chunk at hand, for the message that names where the stream went wrong. */
  private offset = 0

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    try {
      let start = 0
      let at = 0
      while (at < chunk.length) {
        const s = this.state
        if (s.at === 'body' || s.at === 'skip') {
          const take = Math.min(s.left, chunk.length - at)
          s.left -= take
          at += take
          if (s.left === 0) start = s.at === 'skip' ? this.endFrame(chunk, start, at) : this.blockDone(s.last, chunk, start, at)
          continue
        }
        const need = this.headerLength()
        const take = Math.min(need - this.header.length, chunk.length - at)
        this.header = Buffer.concat([this.header, chunk.subarray(at, at + take)])
        at += take
        if (this.header.length < need) continue
        // A frame header's length is known only once its first byte is read: read again.
        if (s.at === 'frame-header' && this.headerLength() > this.header.length) continue
        const header = this.header
        this.header = Buffer.alloc(0)
        if (s.at === 'magic') {
          const magic = header.readUInt32LE(0)
          if (magic === ZSTD_MAGIC) this.state = { at: 'frame-header' }
          else if ((magic & SKIPPABLE_MASK) >>> 0 === SKIPPABLE_MAGIC) this.state = { at: 'skippable-size' }
          else throw new Error(`the data is not zstd: no frame starts at byte ${this.offset + at - 4}`)
        } else if (s.at === 'frame-header') {
          this.checksum = (header[0]! & 0x04) !== 0
          this.state = { at: 'block-header' }
        } else if (s.at === 'block-header') {
          const value = header.readUIntLE(0, 3)
          const type = (value >> 1) & 3
          const size = value >>> 3
          if (type === 3) throw new Error('the zstd stream has a block of the reserved type')
          const body = type === 1 ? 1 : size
          const last = (value & 1) === 1
          if (body > 0) this.state = { at: 'body', left: body, last }
          else start = this.blockDone(last, chunk, start, at)
        } else if (s.at === 'checksum') start = this.endFrame(chunk, start, at)
        else if (s.at === 'skippable-size') {
          const size = header.readUInt32LE(0)
          if (size > 0) this.state = { at: 'skip', left: size }
          else start = this.endFrame(chunk, start, at)
        }
      }
      if (at > start) this.push(chunk.subarray(start, at))
      this.offset += chunk.length
      callback()
    } catch (error) {
      callback(error as Error)
    }
  }

  override _flush(callback: (error?: Error | null) => void): void {
    if (this.state.at !== 'magic' || this.header.length > 0)
      callback(new Error('the zstd stream ends in the middle of a frame (truncated)'))
    else if (this.frames === 0) callback(new Error('the zstd stream holds no frame'))
    else callback()
  }

  /** After a block: the next block, the frame's checksum, or the frame's end. Returns where the next push starts. */
  private blockDone(last: boolean, chunk: Buffer, start: number, at: number): number {
    if (!last) this.state = { at: 'block-header' }
    else if (this.checksum) this.state = { at: 'checksum' }
    else return this.endFrame(chunk, start, at)
    return start
  }

  /** Pushes the frame that ends at `at` on its own; returns `at`, where the next push starts. */
  private endFrame(chunk: Buffer, start: number, at: number): number {
    if (at > start) this.push(chunk.subarray(start, at))
    this.frames++
    this.state = { at: 'magic' }
    return at
  }

  /** Bytes of the header being read (never called in a body): a frame header's length follows from its first byte. */
  private headerLength(): number {
    switch (this.state.at) {
      case 'magic':
      case 'checksum':
      case 'skippable-size':
        return 4
      case 'block-header':
        return 3
      case 'frame-header': {
        const descriptor = this.header[0]
        if (descriptor === undefined) return 1
        const fcsFlag = descriptor >> 6
        const singleSegment = (descriptor & 0x20) !== 0
        const dictionary = [0, 1, 2, 4][descriptor & 3] ?? 0
        const contentSize = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag] ?? 0
        return 1 + (singleSegment ? 0 : 1) + dictionary + contentSize
      }
      default:
        return 0
    }
  }
}

/**
 * The size of the chunks the decompressor hands on (Node's default is 16 KiB). Each chunk is a
 * round trip through libuv's thread pool, a hash update and a write to pg_restore's pipe: a
 * `verify --restore-test` of 1 GB made about 60,000 of them, and with 256 KiB chunks it used about a
 * tenth less CPU (docs/benchmarks.md).
 */
const DECOMPRESSED_CHUNK_BYTES = 256 << 10

/**
 * `input` decompressed as a zstd stream of any number of frames. A reader that stops early stops
 * the input too. When decompression fails, the input is first read to its end: a failure there
 * (OpenPGP's integrity check at the end of the message, a piece that differs) is the cause of the
 * garbage, and the stream fails with it; otherwise with the decompression's error.
 */
export function zstdDecompressed(input: Readable): Readable {
  const aligner = new FrameAligner()
  const zstd = createZstdDecompress({ chunkSize: DECOMPRESSED_CHUNK_BYTES })
  const output = new PassThrough()
  let failed = false
  const stopDecompressing = (): void => {
    input.unpipe(aligner)
    aligner.destroy()
    zstd.destroy()
  }
  const decompressionFailed = (error: Error): void => {
    if (failed) return
    failed = true
    stopDecompressing()
    if (input.errored) return void output.destroy(input.errored)
    if (input.readableEnded) return void output.destroy(error)
    input.once('end', () => output.destroy(error))
    input.resume()
  }
  aligner.on('error', decompressionFailed)
  zstd.on('error', decompressionFailed)
  input.on('error', (error) => {
    failed = true
    stopDecompressing()
    output.destroy(error)
  })
  // Kept for whoever reads later (a pipeline reports a stream's stored error), never thrown as unhandled.
  output.on('error', () => undefined)
  output.on('close', () => {
    if (output.readableEnded) return
    stopDecompressing()
    input.destroy()
  })
  input.pipe(aligner).pipe(zstd).pipe(output)
  return output
}
