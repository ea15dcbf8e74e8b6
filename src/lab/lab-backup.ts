/**
 * Backups in the lab: two key pairs of the lab's own (GnuPG 2.2 compatible) — one backups are
 * encrypted to, one that signs them, as in production — and the `svcops:backup` section of the
 * lab's environment file, so `svcops backup create|verify|restore --env lab` work right after
 * `svcops lab up`. The private keys stay in the lab directory (0600); the section references them
 * by path, never by value.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BackupConfig, SecretRef } from '../config/schema.ts'
import { keyPairPaths, writeKeyPairFiles } from '../backup/keyfiles.ts'

/**
 * Creates (once; reused on the next `lab up`) the lab's backup key pair under `labDir/keys` and
 * returns the `svcops:backup` section with the store in `labDir/backups`. The lab database user
 * needs CREATEDB for `backup verify --restore-test`.
 */
export async function prepareLabBackup(labDir: string): Promise<BackupConfig> {
  const paths = keyPairPaths(join(labDir, 'keys'), 'svcops lab backups')
  if (!existsSync(paths.privateKeyFile) || !existsSync(paths.publicKeyFile)) {
    await writeKeyPairFiles(paths, { name: 'svcops lab backups', email: 'backups@lab.invalid' })
  }
  const signing = keyPairPaths(join(labDir, 'keys'), 'svcops lab backup signing')
  if (!existsSync(signing.privateKeyFile) || !existsSync(signing.publicKeyFile)) {
    await writeKeyPairFiles(signing, { name: 'svcops lab backup signing', email: 'backups@lab.invalid' })
  }
  return {
    store: { path: join(labDir, 'backups') },
    recipients: [paths.publicKeyFile],
    identity: { file: paths.privateKeyFile },
    signingKey: { file: signing.privateKeyFile },
    signers: [signing.publicKeyFile],
  }
}

/**
 * The lab's run key (`svcops:runs.key`, src/runs/run-mac.ts): 48 random bytes in base64 under
 * `labDir/keys/run.key` (0600), made at `lab up` and removed by `lab down` with the other keys, so
 * the runs kept in the lab's stores are signed as a site's are.
 */
export function prepareLabRunKey(labDir: string): { key: SecretRef } {
  const dir = join(labDir, 'keys')
  const file = join(dir, 'run.key')
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    writeFileSync(file, randomBytes(48).toString('base64') + '\n', { mode: 0o600, flag: 'wx' })
  }
  return { key: { file } }
}
