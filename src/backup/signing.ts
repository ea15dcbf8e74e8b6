/**
 * Signed backups. Every manifest is signed (a detached OpenPGP signature, `<id>.manifest.json.sig`,
 * which `gpg --verify` checks) by a key that lives on the machine that backs up; the manifest holds
 * the SHA-256 and size of the encrypted dump, so the one signature covers both — the way a signed
 * Debian `Release` file covers its packages. Verify and restore accept a backup only when its
 * manifest is signed by one of the trusted signers (`backup.signers`): encrypting to a public key
 * proves nothing about who wrote a file, and a store is writable by others.
 *
 * Defaults that keep an existing configuration safe: without `backup.signingKey` the recipient's
 * private key (`backup.identity`) signs, and without `backup.signers` the recipients' public keys are
 * the trusted signers — either way only a holder of a private key svcops was given can sign.
 */
import { readFileSync } from 'node:fs'
import * as openpgp from 'openpgp'
import type { BackupConfig, SecretRef } from '../config/schema.ts'
import { readSecret } from '../config/secrets.ts'
import { BadInputError } from '../core/errors.ts'
import { GNUPG22_CONFIG, keyIdsOf } from './keys.ts'

/** A private key that signs manifests. */
export interface SigningKey {
  key: openpgp.PrivateKey
  fingerprint: string
}

/** A public key whose signatures make a backup trusted. */
export interface Signer {
  key: openpgp.PublicKey
  fingerprint: string
  userIds: string[]
  /** Where it was read from, for messages. */
  source: string
}

/** Who signed a manifest, once the signature checked out. */
export interface SignatureCheck {
  signed: true
  fingerprint: string
  userIds: string[]
}

/** Reads the trusted signers' public keys: `backup.signers`, or `backup.recipients` when absent. */
export async function readSigners(config: Pick<BackupConfig, 'signers' | 'recipients'>): Promise<Signer[]> {
  const field = config.signers ? 'backup.signers' : 'backup.recipients'
  const paths = config.signers ?? config.recipients
  if (paths.length === 0) throw new BadInputError(`${field}: is empty; expected at least one armored OpenPGP public key file of a signer.`)
  const signers: Signer[] = []
  for (const [i, path] of paths.entries()) {
    let armored: string
    try {
      armored = readFileSync(path, 'utf8')
    } catch {
      throw new BadInputError(
        `${field}[${i}]: the file '${path}' does not exist or cannot be read; expected an armored OpenPGP public key.`,
      )
    }
    let key: openpgp.PublicKey
    try {
      key = /PRIVATE KEY BLOCK/.test(armored)
        ? (await openpgp.readPrivateKey({ armoredKey: armored })).toPublic()
        : await openpgp.readKey({ armoredKey: armored })
    } catch (error) {
      throw new BadInputError(`${field}[${i}]: the file '${path}' is not an armored OpenPGP public key (${(error as Error).message}).`)
    }
    signers.push({ key, fingerprint: key.getFingerprint().toUpperCase(), userIds: key.getUserIDs(), source: path })
  }
  return signers
}

/**
 * Reads and unlocks the signing key: `backup.signingKey` (+ `backup.signingPassphrase`), or the
 * recipient's private key `backup.identity` (+ `backup.passphrase`) when no signing key is set. The
 * key must be one of the trusted signers, or nothing it signs could be restored.
 */
export async function readSigningKey(
  config: Pick<BackupConfig, 'signingKey' | 'signingPassphrase' | 'identity' | 'passphrase'>,
  signers: Signer[],
): Promise<SigningKey> {
  const own = config.signingKey !== undefined
  const ref: SecretRef | undefined = config.signingKey ?? config.identity
  const field = own ? 'backup.signingKey' : 'backup.identity'
  if (!ref) {
    throw new BadInputError(
      'backup.signingKey: missing; every backup is signed, by a private key on the machine that backs up (a reference { file: PATH } or { env: VARIABLE }).',
      'Create one with: svcops backup keygen --signing --out-dir DIR; set backup.signingKey to its .key.asc and add its .pub.asc to backup.signers.',
    )
  }
  let key: openpgp.PrivateKey
  try {
    key = await openpgp.readPrivateKey({ armoredKey: readSecret(ref, field) })
  } catch (error) {
    if (error instanceof BadInputError) throw error
    throw new BadInputError(`${field}: is not an armored OpenPGP private key (${(error as Error).message}).`)
  }
  if (!key.isDecrypted()) {
    const passField = own ? 'backup.signingPassphrase' : 'backup.passphrase'
    const passRef = own ? config.signingPassphrase : config.passphrase
    if (!passRef)
      throw new BadInputError(`${passField}: missing; the private key ${key.getFingerprint().toUpperCase()} is protected by a passphrase.`)
    try {
      key = await openpgp.decryptKey({ privateKey: key, passphrase: readSecret(passRef, passField) })
    } catch {
      throw new BadInputError(
        `${passField}: does not unlock the private key ${key.getFingerprint().toUpperCase()}; expected its passphrase.`,
      )
    }
  }
  try {
    await key.getSigningKey()
  } catch {
    throw new BadInputError(
      `${field}: the key ${key.getFingerprint().toUpperCase()} cannot sign (no valid signing key: expired or revoked?).`,
    )
  }
  const fingerprint = key.getFingerprint().toUpperCase()
  if (!signers.some((s) => s.fingerprint === fingerprint)) {
    throw new BadInputError(
      `${field}: the key ${fingerprint} is not one of the trusted signers (${signers.map((s) => s.fingerprint).join(', ')}); a backup it signs could not be verified or restored.`,
      'Add its public key to backup.signers.',
    )
  }
  return { key, fingerprint }
}

/** A detached, armored OpenPGP signature over the exact bytes of a manifest. */
export async function signManifest(bytes: Uint8Array, signer: SigningKey): Promise<string> {
  const message = await openpgp.createMessage({ binary: bytes })
  // The declared return type depends on the overload matched; with format 'armored' it is the armored text.
  const signature: unknown = await openpgp.sign({
    message,
    signingKeys: signer.key,
    detached: true,
    format: 'armored',
    config: GNUPG22_CONFIG,
  })
  return String(signature)
}

/**
 * Checks a detached signature over the exact bytes that are then parsed. Returns why it failed, in
 * one sentence, or who signed.
 */
export async function checkManifestSignature(
  bytes: Uint8Array,
  armoredSignature: string,
  signers: Signer[],
): Promise<SignatureCheck | { signed: false; reason: string }> {
  if (signers.length === 0) return { signed: false, reason: 'no trusted signer is configured (backup.signers)' }
  let signature: openpgp.Signature
  try {
    signature = await openpgp.readSignature({ armoredSignature })
  } catch (error) {
    return { signed: false, reason: `its signature file is not an OpenPGP signature (${(error as Error).message})` }
  }
  const issuers = signature.getSigningKeyIDs().map((id) => id.toHex().toUpperCase())
  const trusted = signers.filter((s) => keyIdsOf(s.key).some((id) => issuers.includes(id)))
  if (trusted.length === 0)
    return {
      signed: false,
      reason: `it is signed by the key ${issuers.join(', ') || '(none named)'}, which is not one of the trusted signers`,
    }
  const result = await openpgp.verify({
    message: await openpgp.createMessage({ binary: bytes }),
    signature,
    verificationKeys: trusted.map((s) => s.key),
    config: GNUPG22_CONFIG,
  })
  for (const candidate of result.signatures) {
    try {
      await candidate.verified
      const signer = trusted.find((s) => keyIdsOf(s.key).includes(candidate.keyID.toHex().toUpperCase()))
      if (signer) return { signed: true, fingerprint: signer.fingerprint, userIds: signer.userIds }
    } catch {
      // Another signature in the file may still be good; the reason below covers none being so.
    }
  }
  return {
    signed: false,
    reason: `its signature by ${trusted[0]?.fingerprint ?? ''} does not match the manifest (altered after it was signed)`,
  }
}
