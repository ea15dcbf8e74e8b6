/**
 * Backup key pairs on disk: the public key (0644) goes into `backup.recipients`, the private key
 * (0600) into the vault and `backup.identity`. Existing files are never overwritten — replacing a
 * private key would make every backup encrypted to it unreadable.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { BadInputError } from '../core/errors.ts'
import { generateBackupKey } from './keys.ts'

export interface KeyPairPaths {
  publicKeyFile: string
  privateKeyFile: string
}

/** `<dir>/<slug>.pub.asc` and `<dir>/<slug>.key.asc`, the slug made from the key's name. */
export function keyPairPaths(outDir: string, name: string): KeyPairPaths {
  const slug =
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'backup'
  const dir = resolve(outDir)
  return { publicKeyFile: join(dir, `${slug}.pub.asc`), privateKeyFile: join(dir, `${slug}.key.asc`) }
}

/** Generates a GnuPG 2.2 compatible key pair and writes it; refuses to overwrite either file. */
export async function writeKeyPairFiles(
  paths: KeyPairPaths,
  key: { name: string; email?: string; passphrase?: string },
): Promise<KeyPairPaths & { fingerprint: string }> {
  const pair = await generateBackupKey(key)
  await mkdir(resolve(paths.privateKeyFile, '..'), { recursive: true, mode: 0o700 })
  try {
    await writeFile(paths.privateKeyFile, pair.privateKey, { mode: 0o600, flag: 'wx' })
    await writeFile(paths.publicKeyFile, pair.publicKey, { mode: 0o644, flag: 'wx' })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new BadInputError(
        `--out-dir: '${(error as NodeJS.ErrnoException).path ?? paths.privateKeyFile}' already exists; expected a new file (an existing backup key is never overwritten).`,
        'Pick another --out-dir or --name.',
      )
    }
    throw error
  }
  return { ...paths, fingerprint: pair.fingerprint }
}
