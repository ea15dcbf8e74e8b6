/**
 * Reading a backup back. The stored file is read once, into a private copy (0600 in a 0700 temp
 * dir) while its size and SHA-256 are computed; only when both equal the signed manifest's is the
 * copy decrypted and loaded. Checking one read and loading another would let whoever can write the
 * store swap the file in between. Decryption streams (openpgp.js `allowUnauthenticatedStream`) —
 * the integrity check at the end of the OpenPGP message then can only confirm what the checksum
 * already proved, and memory stays bounded. The copy is ciphertext: no plaintext touches disk.
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Transform, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import * as openpgp from 'openpgp'
import { BadInputError, OperationError } from '../core/errors.ts'
import { GNUPG22_CONFIG, keyIdsOf } from './keys.ts'
import type { Manifest } from './manifest.ts'
import type { BackupStore } from './store.ts'
import { HashingTap, toWebStream } from './streams.ts'

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

/** The stored file, copied once into a private place after its size and SHA-256 matched the manifest. */
export interface CheckedCopy {
  path: string
  size: number
  sha256: string
  /** Removes the copy and its directory. Safe to call twice. */
  remove(): Promise<void>
}

/**
 * Copies the backup's file out of the store in one read, hashing it on the way, and refuses it
 * unless size and SHA-256 are the manifest's. Everything afterwards reads the copy.
 */
export async function checkedCopy(store: BackupStore, manifest: Manifest): Promise<CheckedCopy> {
  const size = await store.size(manifest.file)
  if (size === undefined)
    throw new CheckFailedError('file', `The file ${manifest.file} of backup ${manifest.id} is missing from ${store.location}.`)
  if (size !== manifest.sizes.encrypted) {
    throw new CheckFailedError(
      'size',
      `The file ${manifest.file} has ${size} bytes; the manifest says ${manifest.sizes.encrypted} (truncated or replaced).`,
    )
  }
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
  return { path, size: tap.bytes, sha256, remove }
}

/** Refuses a private key that is not one of the backup's recipients, naming both sides. */
export async function checkRecipientKey(copy: CheckedCopy, manifest: Manifest, identity: openpgp.PrivateKey): Promise<void> {
  const message = await readStoredMessage(copy, manifest)
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

async function readStoredMessage(copy: CheckedCopy, manifest: Manifest): Promise<openpgp.Message<ReadableStream<Uint8Array>>> {
  try {
    return await openpgp.readMessage({ binaryMessage: toWebStream(createReadStream(copy.path, { highWaterMark: 1 << 20 })) })
  } catch (error) {
    throw new CheckFailedError('decrypt', `The file ${manifest.file} is not an OpenPGP message (${(error as Error).message}).`)
  }
}

/**
 * The decrypted dump as a Node stream. Errors while streaming (a failed integrity check, a
 * truncated file) surface as stream errors naming the `decrypt` check.
 */
export async function openDecrypted(copy: CheckedCopy, manifest: Manifest, identity: openpgp.PrivateKey): Promise<Readable> {
  if (!identity.isDecrypted())
    throw new BadInputError('backup.identity: the private key is still locked; expected it unlocked with backup.passphrase.')
  const message = await readStoredMessage(copy, manifest)
  let data: ReadableStream<Uint8Array>
  try {
    const result = await openpgp.decrypt({
      message,
      decryptionKeys: identity,
      format: 'binary',
      config: { ...GNUPG22_CONFIG, allowUnauthenticatedStream: true },
    })
    data = result.data as ReadableStream<Uint8Array>
  } catch (error) {
    throw new CheckFailedError(
      'decrypt',
      `Backup ${manifest.id} could not be decrypted with the key ${identity.getFingerprint().toUpperCase()}: ${(error as Error).message}.`,
    )
  }
  return Readable.fromWeb(data)
}

/** Wraps an error raised while the decrypted stream flowed as a failed `decrypt` check. */
export function decryptFailure(manifest: Manifest, error: unknown): CheckFailedError {
  if (error instanceof CheckFailedError) return error
  return new CheckFailedError('decrypt', `Decrypting backup ${manifest.id} failed: ${(error as Error).message}.`)
}
