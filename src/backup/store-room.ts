/**
 * Free space where the backup store keeps its files: the local directory's file system, or, when
 * `backup.store.ssh` is set, the file system of the store's directory on its host, read there with
 * POSIX `df -Pk` over the store's own SSH transport (src/drivers/free-space.ts): a store whose room
 * cannot be read is refused, never guessed.
 */
import { existsSync, statfsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { BackupConfig } from '../config/schema.ts'
import { readFreeSpace } from '../drivers/free-space.ts'
import { SshTransport } from '../drivers/ssh.ts'

/** Where the store is and how its room is read, for the preflight's plan. */
export function describeStoreRoom(store: BackupConfig['store']): string {
  return store.ssh
    ? `df -Pk on ${store.ssh.user}@${store.ssh.host}:${store.ssh.port} for ${store.path} (over SSH)`
    : `the file system of ${store.path} on this machine`
}

/** Bytes free for an unprivileged writer in the store's directory (its nearest existing parent until the first backup made it). */
export async function storeFreeBytes(store: BackupConfig['store']): Promise<number> {
  if (!store.ssh) {
    let dir = resolve(store.path)
    while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir)
    const s = statfsSync(dir)
    return s.bavail * s.bsize
  }
  const ssh = store.ssh
  const transport = new SshTransport(
    { host: ssh.host, port: ssh.port, user: ssh.user, keyFile: ssh.keyFile, hostKey: ssh.hostKey, trustOnFirstUse: ssh.trustOnFirstUse },
    { name: `backup store ${ssh.host}` },
  )
  try {
    return (await readFreeSpace(transport, store.path, `the backup store ${ssh.user}@${ssh.host}:${ssh.port}:${store.path}`)).free
  } finally {
    await transport.close()
  }
}
