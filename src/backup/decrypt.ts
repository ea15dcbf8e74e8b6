/**
 * Reading a backup back: the checksum of the stored file, then the decrypted dump as a stream.
 * Decryption streams (openpgp.js `allowUnauthenticatedStream`) only after the ciphertext's SHA-256
 * matched the manifest — the integrity check at the end of the OpenPGP message then can only
 * confirm what the checksum already proved, and memory stays bounded.
 */
import { Writable, Readable } from 'node:stream'
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

/** Size and SHA-256 of the stored file against the manifest. */
export async function checkStoredFile(store: BackupStore, manifest: Manifest): Promise<{ size: number; sha256: string }> {
  const size = await store.size(manifest.file)
  if (size === undefined)
    throw new CheckFailedError('file', `The file ${manifest.file} of backup ${manifest.id} is missing from ${store.location}.`)
  if (size !== manifest.sizes.encrypted) {
    throw new CheckFailedError(
      'size',
      `The file ${manifest.file} has ${size} bytes; the manifest says ${manifest.sizes.encrypted} (truncated or replaced).`,
    )
  }
  const tap = new HashingTap()
  await pipeline(await store.openRead(manifest.file), tap, discard())
  const sha256 = tap.digest()
  if (sha256 !== manifest.checksums.encryptedSha256) {
    throw new CheckFailedError(
      'checksum',
      `The SHA-256 of ${manifest.file} is ${sha256}; the manifest says ${manifest.checksums.encryptedSha256} (the file is corrupted).`,
    )
  }
  return { size, sha256 }
}

/** Refuses a private key that is not one of the backup's recipients, naming both sides. */
export async function checkRecipientKey(store: BackupStore, manifest: Manifest, identity: openpgp.PrivateKey): Promise<void> {
  const message = await readStoredMessage(store, manifest)
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

async function readStoredMessage(store: BackupStore, manifest: Manifest): Promise<openpgp.Message<ReadableStream<Uint8Array>>> {
  try {
    return await openpgp.readMessage({ binaryMessage: toWebStream(await store.openRead(manifest.file)) })
  } catch (error) {
    throw new CheckFailedError('decrypt', `The file ${manifest.file} is not an OpenPGP message (${(error as Error).message}).`)
  }
}

/**
 * The decrypted dump as a Node stream. Errors while streaming (a failed integrity check, a
 * truncated file) surface as stream errors naming the `decrypt` check.
 */
export async function openDecrypted(store: BackupStore, manifest: Manifest, identity: openpgp.PrivateKey): Promise<Readable> {
  if (!identity.isDecrypted())
    throw new BadInputError('backup.identity: the private key is still locked; expected it unlocked with backup.passphrase.')
  const message = await readStoredMessage(store, manifest)
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
