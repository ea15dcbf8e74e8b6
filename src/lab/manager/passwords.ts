/**
 * Password hashes of the manager emulator's users: scrypt with a random salt, stored as
 * `scrypt$N$r$p$salt$hash` (base64url). The emulator never holds a plain password, and the lab
 * writes only hashes into the emulator's configuration.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto'

const N = 16384
const R = 8
const P = 1
const KEY_LENGTH = 32

function scrypt(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(password, salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key)))
  })
}

/** Hashes `password` with scrypt and a fresh salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await scrypt(password, salt, KEY_LENGTH, { N, r: R, p: P })
  return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$')
}

/** True when `hash` has the shape `hashPassword` writes. */
export function isPasswordHash(hash: string): boolean {
  return /^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/.test(hash)
}

// Verifying against this keeps an unknown e-mail as slow as a wrong password, so timing does not
// tell which users exist.
let decoy: Promise<string> | undefined

/** Compares `password` with `hash` in constant time; `hash` undefined (unknown user) is always false. */
export async function verifyPassword(password: string, hash: string | undefined): Promise<boolean> {
  const stored = hash && isPasswordHash(hash) ? hash : await (decoy ??= hashPassword(randomBytes(12).toString('base64url')))
  const [, n, r, p, salt, expected] = stored.split('$') as [string, string, string, string, string, string]
  const expectedKey = Buffer.from(expected, 'base64url')
  const key = await scrypt(password, Buffer.from(salt, 'base64url'), expectedKey.length, { N: Number(n), r: Number(r), p: Number(p) })
  return timingSafeEqual(key, expectedKey) && stored === hash
}
