/**
 * The room on the live hosts for what an upgrade writes there before its first stop: the packages
 * it stages into each host's package cache, and the copies of the settings and environment files it
 * keeps on the system controller's host. Each folder's filesystem is read with `df -Pk` on its host
 * (of the nearest folder that exists: the cache is made by the first staging); what goes to one
 * filesystem adds up. Judged once, for every platform, in ../live-room.ts.
 */
import { readFreeSpace, type FreeSpace } from '../../drivers/free-space.ts'
import { hostPath } from '../../drivers/transports.ts'
import type { RoomReading } from '../live-platform.ts'
import type { LiveHost } from './host-files.ts'

/** Something the upgrade writes into a folder of a host before its first stop. */
export interface RoomNeed {
  host: LiveHost
  /** The folder, as the product names it (the sandbox root is added on a lab host). */
  path: string
  bytes: number
  what: string
}

/** The `df` command of a folder on a host, as the dry run shows it. */
export function describeDf(host: LiveHost, path: string): string {
  return `df -Pk ${hostPath(host.config, path)} on ${host.name} (its nearest existing folder)`
}

/** The free bytes and mount point of the filesystem of `path` on `host`. */
function readFilesystem(host: LiveHost, file: string): Promise<FreeSpace> {
  return readFreeSpace(host.transport, file, `${file} on ${host.name}`)
}

/** Reads the filesystem of every need's folder on its host; needs on one filesystem of a host add up. */
export async function readRoom(needs: RoomNeed[]): Promise<RoomReading[]> {
  const rows = new Map<string, RoomReading>()
  const read = new Map<string, { mount: string; free: number }>()
  for (const n of needs) {
    const file = hostPath(n.host.config, n.path)
    const key = `${n.host.name}\n${file}`
    const fs = read.get(key) ?? (await readFilesystem(n.host, file))
    read.set(key, fs)
    const id = `${n.host.name}\n${fs.mount}`
    const row = rows.get(id) ?? { host: n.host.name, paths: [], mount: fs.mount, needed: 0, free: fs.free, what: [] }
    if (!row.paths.includes(file)) row.paths.push(file)
    row.needed += n.bytes
    if (!row.what.includes(n.what)) row.what.push(n.what)
    rows.set(id, row)
  }
  return [...rows.values()]
}
