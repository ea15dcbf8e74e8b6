/**
 * Reading a backup back. Checking one read of the stored file and decrypting another would let
 * whoever can write the store swap the file in between, so what is decrypted is always what was
 * checked, in one of two ways:
 * - piece by piece (`verify`, when the signed manifest lists the SHA-256 of every 4 MiB piece): one
 *   read of the store, each piece held back until its hash matches, no copy and no temp space;
 * - a private copy (`restore`, and backups whose manifest lists no pieces): the file is read once
 *   into 0600 in a 0700 temp dir while size and SHA-256 are computed, and only when both equal the
 *   manifest's is the copy decrypted — a file that differs is refused before a database is touched.
 * Decryption streams (openpgp.js `allowUnauthenticatedStream`): the integrity check at the end of
 * the OpenPGP message then can only confirm what the checksums already proved, and memory stays
 * bounded. No plaintext touches disk.
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createHash, type Hash } from 'node:crypto'
import { Readable, Transform, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import * as openpgp from 'openpgp'
import { BadInputError, OperationError } from '../core/errors.ts'
import { GNUPG22_CONFIG, keyIdsOf } from './keys.ts'
import type { Manifest } from './manifest.ts'
import type { BackupStore } from './store.ts'
import { HashingTap, toWebStream } from './streams.ts'
import { zstdDecompressed } from './zstd-frames.ts'

/** A check that failed, named for the report ("checksum", "decrypt", ...). */
export class CheckFailedError extends OperationError {
  readonly check: string
  constructor(check: string, message: string, hint?: string) {
    super(message, hint)
    this.check = check
  }
}

/** A sink that discards what it is given (the dump of a verify without restore test). */
export function discard(): Writable {
  return new Writable({ write: (_chunk, _encoding, callback) => callback() })
}

/**
 * The stored file, checked against the signed manifest: up front into a private copy, or piece by
 * piece as it is read. Whatever reads it gets only bytes that were checked.
 */
export interface CheckedSource {
  /** `copy`: size and SHA-256 were checked before anything opens it; `pieces`: each piece is checked as `open`'s stream reads it. */
  readonly mode: 'copy' | 'pieces'
  /** The bytes; in `pieces` mode a piece that differs from the manifest fails the stream (the `checksum` check). */
  open(): Promise<Readable>
  /** The `checksum` failure met while a stream flowed (consumers such as openpgp.js may pass it on wrapped). */
  failure(): CheckFailedError | undefined
  /** True once every byte was checked: at once for a copy; in `pieces` mode when a stream was read to its end. */
  complete(): boolean
  /** The `checksum` check's result in one sentence, once `complete()`. */
  summary(): string
  /** Removes the copy and its directory, if any. Safe to call twice. */
  remove(): Promise<void>
}

/** The stored file, copied once into a private place after its size and SHA-256 matched the manifest. */
export interface CheckedCopy extends CheckedSource {
  path: string
  size: number
  sha256: string
}

/**
 * How `verify` reads a backup: piece by piece in one read when the manifest lists the pieces'
 * SHA-256 (backups made since it does), else through a private copy (`checkedCopy`).
 */
export async function checkedSource(store: BackupStore, manifest: Manifest): Promise<CheckedSource> {
  const pieces = manifest.checksums.encryptedPieces
  if (!pieces) return checkedCopy(store, manifest)
  await assertStoredSize(store, manifest)
  let checker: PieceChecker | undefined
  return {
    mode: 'pieces',
    async open() {
      const opened = new PieceChecker(manifest, pieces)
      checker = opened
      const raw = await store.openRead(manifest.file)
      raw.on('error', (error) => opened.destroy(error))
      return raw.pipe(opened)
    },
    failure: () => checker?.failure,
    complete: () => checker?.complete ?? false,
    summary: () =>
      `SHA-256 of each of the ${pieces.sha256.length} pieces of the ${manifest.sizes.encrypted}-byte file matches the signed manifest, checked as read`,
    remove: () => Promise.resolve(),
  }
}

/** Refuses a stored file that is missing or not the manifest's size, before anything reads it. */
async function assertStoredSize(store: BackupStore, manifest: Manifest): Promise<void> {
  const size = await store.size(manifest.file)
  if (size === undefined)
    throw new CheckFailedError('file', `The file ${manifest.file} of backup ${manifest.id} is missing from ${store.location}.`)
  if (size !== manifest.sizes.encrypted) {
    throw new CheckFailedError(
      'size',
      `The file ${manifest.file} has ${size} bytes; the manifest says ${manifest.sizes.encrypted} (truncated or replaced).`,
    )
  }
}

/**
 * Holds back each piece of the stored file until its SHA-256 equals the one the signed manifest
 * lists, so no byte reaches the decryption unchecked; a file that grows, shrinks or differs while
 * it is read fails the stream with the `checksum` (or `size`) check. Holds one piece (4 MiB).
 */
export class PieceChecker extends Transform {
  private held: Buffer[] = []
  private filled = 0
  /** The check that failed, kept for callers that see the stream's error only wrapped. */
  failure: CheckFailedError | undefined
  /** Every piece was read and matched. */
  complete = false
  private index = 0
  private released = 0
  private piece: Hash = createHash('sha256')
  private readonly manifest: Manifest
  private readonly pieces: { size: number; sha256: string[] }

  constructor(manifest: Manifest, pieces: { size: number; sha256: string[] }) {
    super()
    this.manifest = manifest
    this.pieces = pieces
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    for (let offset = 0; offset < chunk.length;) {
      const take = Math.min(this.pieces.size - this.filled, chunk.length - offset)
      const part = chunk.subarray(offset, offset + take)
      this.piece.update(part)
      this.held.push(part)
      this.filled += take
      offset += take
      if (this.filled === this.pieces.size) {
        const failed = this.release()
        if (failed) return callback(failed)
      }
    }
    callback()
  }

  override _flush(callback: (error?: Error | null) => void): void {
    const failed = this.filled > 0 ? this.release() : undefined
    if (failed) return callback(failed)
    const read = this.released
    if (this.index !== this.pieces.sha256.length || read !== this.manifest.sizes.encrypted) {
      this.failure = new CheckFailedError(
        'size',
        `The file ${this.manifest.file} ended after ${read} bytes while it was read; the manifest says ${this.manifest.sizes.encrypted} (truncated or replaced).`,
      )
      return callback(this.failure)
    }
    this.complete = true
    callback()
  }

  /** Checks the piece held and passes it on; the failure, if it differs. */
  private release(): CheckFailedError | undefined {
    const { file, sizes } = this.manifest
    const expected = this.pieces.sha256[this.index]
    const start = this.index * this.pieces.size
    const digest = this.piece.digest('hex')
    if (expected === undefined)
      this.failure = new CheckFailedError(
        'size',
        `The file ${file} grew past the manifest's ${sizes.encrypted} bytes while it was read (replaced).`,
      )
    else if (digest !== expected)
      this.failure = new CheckFailedError(
        'checksum',
        `The SHA-256 of bytes ${start}-${start + this.filled - 1} of ${file} is ${digest}; the manifest says ${expected} (the file is corrupted).`,
      )
    if (this.failure) return this.failure
    for (const part of this.held) this.push(part)
    this.released += this.filled
    this.held = []
    this.filled = 0
    this.index++
    this.piece = createHash('sha256')
    return undefined
  }
}

/**
 * Copies the backup's file out of the store in one read, hashing it on the way, and refuses it
 * unless size and SHA-256 are the manifest's. Everything afterwards reads the copy. `restore` reads
 * every backup this way, so that a file that differs is refused before the database is touched.
 */
export async function checkedCopy(store: BackupStore, manifest: Manifest): Promise<CheckedCopy> {
  await assertStoredSize(store, manifest)
  const dir = await mkdtemp(join(tmpdir(), 'svcops-backup-'))
  const remove = (): Promise<void> => rm(dir, { recursive: true, force: true })
  const path = join(dir, 'backup.pgp')
  const tap = new HashingTap()
  try {
    const limit = manifest.sizes.encrypted
    let seen = 0
    const cap = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        seen += chunk.length
        // A file that grows while it is read is not the one that was measured.
        if (seen > limit)
          callback(
            new CheckFailedError('size', `The file ${manifest.file} grew past the manifest's ${limit} bytes while it was read (replaced).`),
          )
        else callback(null, chunk)
      },
    })
    await pipeline(
      await store.openRead(manifest.file),
      cap,
      tap,
      createWriteStream(path, { flags: 'wx', mode: 0o600, highWaterMark: 1 << 20 }),
    )
  } catch (error) {
    await remove()
    throw error
  }
  const sha256 = tap.digest()
  if (tap.bytes !== manifest.sizes.encrypted || sha256 !== manifest.checksums.encryptedSha256) {
    await remove()
    throw new CheckFailedError(
      'checksum',
      `The SHA-256 of ${manifest.file} is ${sha256}; the manifest says ${manifest.checksums.encryptedSha256} (the file is corrupted).`,
    )
  }
  return {
    mode: 'copy',
    path,
    size: tap.bytes,
    sha256,
    open: () => Promise.resolve(createReadStream(path, { highWaterMark: 1 << 20 })),
    failure: () => undefined,
    complete: () => true,
    summary: () => `SHA-256 ${sha256} of ${tap.bytes} bytes matches the manifest`,
    remove,
  }
}

/** Refuses a private key that is not one of the backup's recipients, naming both sides. */
export async function checkRecipientKey(source: CheckedSource, manifest: Manifest, identity: openpgp.PrivateKey): Promise<void> {
  const stream = await source.open()
  try {
    assertRecipient(await readStoredMessage(stream, source, manifest), manifest, identity)
  } finally {
    stream.destroy()
  }
}

function assertRecipient(message: openpgp.Message<ReadableStream<Uint8Array>>, manifest: Manifest, identity: openpgp.PrivateKey): void {
  const recipients = message.getEncryptionKeyIDs().map((id) => id.toHex().toUpperCase())
  const ours = keyIdsOf(identity)
  if (!recipients.some((id) => ours.includes(id))) {
    throw new CheckFailedError(
      'key',
      `The private key ${identity.getFingerprint().toUpperCase()} (backup.identity) cannot decrypt backup ${manifest.id}: it is encrypted to ${manifest.encryption.recipients.map((r) => r.fingerprint).join(', ')}.`,
      'Set backup.identity to the private key of one of those recipients.',
    )
  }
}

async function readStoredMessage(
  stream: Readable,
  source: CheckedSource,
  manifest: Manifest,
): Promise<openpgp.Message<ReadableStream<Uint8Array>>> {
  try {
    return await openpgp.readMessage({ binaryMessage: toWebStream(stream) })
  } catch (error) {
    throw (
      source.failure() ??
      new CheckFailedError('decrypt', `The file ${manifest.file} is not an OpenPGP message (${(error as Error).message}).`)
    )
  }
}

/**
 * The decrypted dump as a Node stream (the pg_dump archive: a zstd backup is decompressed), from one read of the source: the private key is checked
 * against the recipients first (the `key` check). Errors while streaming (a piece that differs, a
 * failed integrity check, a truncated file) surface as stream errors; `decryptFailure` names them.
 */
export async function openDecrypted(source: CheckedSource, manifest: Manifest, identity: openpgp.PrivateKey): Promise<Readable> {
  if (!identity.isDecrypted())
    throw new BadInputError('backup.identity: the private key is still locked; expected it unlocked with backup.passphrase.')
  const stream = await source.open()
  let data: ReadableStream<Uint8Array>
  try {
    const message = await readStoredMessage(stream, source, manifest)
    assertRecipient(message, manifest, identity)
    const result = await openpgp.decrypt({
      message,
      decryptionKeys: identity,
      format: 'binary',
      config: { ...GNUPG22_CONFIG, allowUnauthenticatedStream: true },
    })
    data = result.data as ReadableStream<Uint8Array>
  } catch (error) {
    stream.destroy()
    if (error instanceof CheckFailedError) throw error
    throw new CheckFailedError(
      'decrypt',
      `Backup ${manifest.id} could not be decrypted with the key ${identity.getFingerprint().toUpperCase()}: ${(error as Error).message}.`,
    )
  }
  const plain = Readable.fromWeb(data)
  if (manifest.compression.method !== 'zstd') return plain
  // One stream for the reader: a decompression error ends it, and a reader that stops early (pg_restore --list) ends the decryption too.
  return zstdDecompressed(plain)
}

/** Wraps an error raised while the decrypted stream flowed as a failed `decrypt` check. */
export function decryptFailure(manifest: Manifest, error: unknown, source?: CheckedSource): CheckFailedError {
  const failure = source?.failure()
  if (failure) return failure
  if (error instanceof CheckFailedError) return error
  return new CheckFailedError('decrypt', `Decrypting backup ${manifest.id} failed: ${(error as Error).message}.`)
}
