/**
 * Free space of a folder's filesystem on a host, read there with POSIX `df -Pk` (of the folder, or
 * of its nearest existing parent: folders svcops writes into are made by their first write). The
 * answer is trusted only in its POSIX shape: the header, then one row of integers and a mount point.
 */
import { OperationError } from '../core/errors.ts'
import { runCommand, type Transport } from '../core/runner.ts'

/** `df -Pk` of the folder `$1`, or of its nearest existing parent. */
const DF_NEAREST = 'd="$1"; while [ ! -d "$d" ]; do d="$(dirname -- "$d")"; done; df -Pk -- "$d"'
/** `df -P`'s header (POSIX.1, with -k: 1024-byte blocks). */
const DF_HEADER = /^Filesystem\s+1024-blocks\s+Used\s+Available\s+Capacity\s+Mounted on$/
/** One `df -P` row: file system, total, used, available, capacity%, mount point (which may hold spaces). */
const DF_ROW = /^(\S.*?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)%\s+(\/.*)$/
/** df's answer for one folder is two short lines. */
const MAX_DF_BYTES = 64 * 1024

/** A filesystem as df saw it: where it is mounted and the bytes an unprivileged writer may still use. */
export interface FreeSpace {
  mount: string
  free: number
}

/** Reads the filesystem of `path` (or its nearest existing parent) on `transport`'s host; one sentence naming `what` when it cannot. */
export async function readFreeSpace(transport: Transport, path: string, what: string): Promise<FreeSpace> {
  const r = await runCommand(transport, ['sh', '-c', DF_NEAREST, 'sh', path], { check: false })
  if (r.code !== 0)
    throw new OperationError(
      `The free space of ${what} could not be read (df -Pk): ${r.stderr.trim().split('\n').at(-1) || `exit ${r.code}`}.`,
    )
  return parseDf(r.stdout, what)
}

/** The first filesystem of `df -Pk`'s output; one sentence naming `what` when the answer is not df's. */
export function parseDf(stdout: string, what: string): FreeSpace {
  const refuse = (why: string) => new OperationError(`The free space of ${what} could not be read (df -Pk): ${why}.`)
  if (Buffer.byteLength(stdout) > MAX_DF_BYTES) throw refuse(`df printed more than ${MAX_DF_BYTES} bytes`)
  const lines = stdout.split('\n').filter((l) => l.trim() !== '')
  if (!lines.length) throw refuse('df printed nothing')
  if (!DF_HEADER.test(lines[0]!.trim()))
    throw refuse('df did not print the POSIX header (Filesystem 1024-blocks Used Available Capacity Mounted on)')
  const row = lines[1] === undefined ? undefined : DF_ROW.exec(lines[1].trim())
  if (!row) throw refuse('df printed no row of numbers')
  const kib = Number(row[4])
  if (!Number.isSafeInteger(kib * 1024)) throw refuse(`df's available blocks '${row[4]}' are out of range`)
  return { mount: row[6]!, free: kib * 1024 }
}
