/**
 * OpenPGP keys of backups. Backups are encrypted to public keys only (backing up needs no secret);
 * verify and restore read the private key from the vault. Keys are generated as v4 keys on the
 * legacy curve25519 (ECDH) with an ed25519 primary key: GnuPG 2.2 reads those, while v6 (RFC 9580)
 * keys and AEAD-encrypted data it does not — and "restore with plain gpg" must keep working.
 */
import { readFileSync } from 'node:fs'
import * as openpgp from 'openpgp'
import type { BackupConfig } from '../config/schema.ts'
import { readSecret } from '../config/secrets.ts'
import { BadInputError } from '../core/errors.ts'
import { registerSecret } from '../core/redact.ts'

/** Settings every svcops OpenPGP operation uses: GnuPG 2.2 compatible, no AEAD, no v6 keys. */
export const GNUPG22_CONFIG = { v6Keys: false, aeadProtect: false } as const

export interface Recipient {
  key: openpgp.PublicKey
  fingerprint: string
  userIds: string[]
  /** Where the key was read from, for messages. */
  source: string
}

/** Reads the armored public keys that backups are encrypted to (`backup.recipients`). */
export async function readRecipients(paths: string[]): Promise<Recipient[]> {
  if (paths.length === 0)
    throw new BadInputError(
      'backup.recipients: is empty; expected at least one armored OpenPGP public key file.',
      'Create one with: svcops backup keygen --out-dir <dir>',
    )
  const recipients: Recipient[] = []
  for (const [i, path] of paths.entries()) {
    const field = `backup.recipients[${i}]`
    let armored: string
    try {
      armored = readFileSync(path, 'utf8')
    } catch {
      throw new BadInputError(`${field}: the file '${path}' does not exist or cannot be read; expected an armored OpenPGP public key.`)
    }
    if (/PRIVATE KEY BLOCK/.test(armored)) {
      throw new BadInputError(
        `${field}: the file '${path}' holds a private key; expected the public key only (backing up needs no secret).`,
      )
    }
    let key: openpgp.PublicKey
    try {
      key = await openpgp.readKey({ armoredKey: armored })
    } catch (error) {
      throw new BadInputError(`${field}: the file '${path}' is not an armored OpenPGP public key (${(error as Error).message}).`)
    }
    try {
      await key.getEncryptionKey()
    } catch {
      throw new BadInputError(
        `${field}: the key ${key.getFingerprint().toUpperCase()} in '${path}' has no valid encryption subkey (expired or revoked?).`,
      )
    }
    recipients.push({ key, fingerprint: key.getFingerprint().toUpperCase(), userIds: key.getUserIDs(), source: path })
  }
  return recipients
}

/**
 * Reads and unlocks the private key (`backup.identity`, passphrase in `backup.passphrase`). Both
 * are registered as secrets the moment they are read.
 */
export async function readIdentity(config: Pick<BackupConfig, 'identity' | 'passphrase'>): Promise<openpgp.PrivateKey> {
  if (!config.identity) {
    throw new BadInputError(
      'backup.identity: missing; verify and restore need the private key of a recipient (a reference { file: PATH } or { env: VARIABLE }).',
      'Set backup.identity in the environment file to the private key created by: svcops backup keygen',
    )
  }
  const armored = readSecret(config.identity, 'backup.identity')
  let key: openpgp.PrivateKey
  try {
    key = await openpgp.readPrivateKey({ armoredKey: armored })
  } catch (error) {
    throw new BadInputError(`backup.identity: is not an armored OpenPGP private key (${(error as Error).message}).`)
  }
  if (key.isDecrypted()) return key
  if (!config.passphrase) {
    throw new BadInputError(
      `backup.passphrase: missing; the private key ${key.getFingerprint().toUpperCase()} is protected by a passphrase.`,
    )
  }
  const passphrase = readSecret(config.passphrase, 'backup.passphrase')
  try {
    return await openpgp.decryptKey({ privateKey: key, passphrase })
  } catch {
    throw new BadInputError(
      `backup.passphrase: does not unlock the private key ${key.getFingerprint().toUpperCase()}; expected its passphrase.`,
    )
  }
}

/** Key ids (16 hex digits, upper case) of a key and all its subkeys. */
export function keyIdsOf(key: openpgp.Key): string[] {
  return [key.getKeyID(), ...key.getSubkeys().map((s) => s.getKeyID())].map((id) => id.toHex().toUpperCase())
}

export interface GeneratedKeyPair {
  publicKey: string
  privateKey: string
  fingerprint: string
  revocationCertificate: string
}

/**
 * Generates a backup key pair usable by GnuPG 2.2: v4, ed25519 primary key, curve25519 (ECDH)
 * encryption subkey. The private key (and passphrase) are registered as secrets.
 */
export async function generateBackupKey(options: { name: string; email?: string; passphrase?: string }): Promise<GeneratedKeyPair> {
  if (options.passphrase !== undefined) registerSecret(options.passphrase)
  const pair = await openpgp.generateKey({
    type: 'ecc',
    curve: 'ed25519Legacy',
    userIDs: [{ name: options.name, ...(options.email ? { email: options.email } : {}) }],
    ...(options.passphrase ? { passphrase: options.passphrase } : {}),
    format: 'armored',
    config: GNUPG22_CONFIG,
  })
  registerSecret(pair.privateKey)
  const key = await openpgp.readKey({ armoredKey: pair.publicKey })
  return {
    publicKey: pair.publicKey,
    privateKey: pair.privateKey,
    fingerprint: key.getFingerprint().toUpperCase(),
    revocationCertificate: pair.revocationCertificate,
  }
}
