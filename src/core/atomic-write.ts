/**
 * Writing a file into a directory others may write (a textfile collector directory, /tmp, a shared
 * backup store, a state dir) without ever writing through a link someone planted there: the data
 * goes to a new file created exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`) under a random name beside
 * the target, and that file is renamed over the target. A planted symlink — at the target, at a
 * temporary name, or at any name guessed ahead — is never opened: `O_EXCL` refuses an existing
 * name, link or not, and a rename replaces a link itself, not what it points to. Readers see the
 * old file or the new one, never half of one (the `mkstemp` + `rename` idiom).
 */
import { randomBytes } from 'node:crypto'
import { closeSync, constants, fchmodSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'

/** open(2) flags of a file that must be new: never an existing file, never through a link. */
export const CREATE_EXCLUSIVE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW

/**
 * A random, hidden name for the temporary file of `name` (`.<name>.<random>.partial`): nothing that
 * lists `*.prom` or a store's complete files sees it, and no one can guess it ahead.
 */
export function partialNameOf(name: string): string {
  return `.${name}.${randomBytes(8).toString('hex')}.partial`
}

/** `partialNameOf` beside `path`, in the same directory (a rename never crosses file systems). */
export function temporaryNameFor(path: string): string {
  return join(dirname(path), partialNameOf(basename(path)))
}

export interface AtomicWriteOptions {
  /** Mode of the new file (default 0600), set exactly whatever the umask. */
  mode?: number
  /** Sync the data before the rename and the directory after it (run folders, stores). */
  sync?: boolean
}

/** Opens `path` as a new file (see CREATE_EXCLUSIVE) with `mode`, exactly; returns its descriptor. */
export function openExclusive(path: string, mode = 0o600): number {
  const fd = openSync(path, CREATE_EXCLUSIVE, mode)
  try {
    fchmodSync(fd, mode) // the umask may have taken bits the caller asked for (a 0644 textfile)
  } catch (error) {
    closeSync(fd)
    throw error
  }
  return fd
}

/**
 * Writes `data` to `path` atomically through an exclusively created temporary file (module
 * comment). The temporary file is removed when anything fails; the target is then as it was.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  const tmp = temporaryNameFor(path)
  const fd = openExclusive(tmp, options.mode ?? 0o600)
  try {
    try {
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
      for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done)
      if (options.sync) fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, path)
  } catch (error) {
    try {
      unlinkSync(tmp)
    } catch {
      // Already renamed or never there: nothing of ours is left behind either way.
    }
    throw error
  }
  if (options.sync) syncDirectory(dirname(path))
}

/** Syncs a directory, so that a rename in it survives a power cut. */
export function syncDirectory(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY)
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
