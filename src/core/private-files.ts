/**
 * Files that hold a secret for a child process — the PostgreSQL tools' password file — instead of
 * its environment, which the same user reads in /proc/<pid>/environ. Such a file lives in the run's
 * own folder (0700) while a run is under way, else in a private temporary folder (0700, under
 * TMPDIR) made for it; it is created exclusively, 0600, and removed when the child is done, on
 * failure too, and on SIGINT/SIGTERM with the other cleanups.
 */
import { randomBytes } from 'node:crypto'
import { closeSync, mkdtempSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openExclusive } from './atomic-write.ts'
import { onShutdown } from './lifecycle.ts'

let runFolder: string | undefined

/** The folder of the run this process is running (set by the engine when a run starts or resumes). */
export function usePrivateFolder(dir: string | undefined): void {
  runFolder = dir
}

/** The run folder, when there is one and only its owner may enter it. */
function ownRunFolder(): string | undefined {
  if (!runFolder) return undefined
  try {
    const s = statSync(runFolder)
    return s.isDirectory() && (s.mode & 0o077) === 0 && s.uid === process.getuid?.() ? runFolder : undefined
  } catch {
    // Gone (a test removed it, a resumed run elsewhere): a private temporary folder instead.
    return undefined
  }
}

export interface PrivateFile {
  path: string
  /** Removes the file (and the temporary folder made for it); safe to call twice. */
  remove(): void
}

/** Writes `content` to a new 0600 file named `<name>.<random>` in a private folder (module comment). */
export function writePrivateFile(name: string, content: string): PrivateFile {
  const inRun = ownRunFolder()
  const made = inRun ? undefined : mkdtempSync(join(tmpdir(), 'svcops-private-'))
  const path = join(inRun ?? (made as string), `.${name}.${randomBytes(6).toString('hex')}`)
  let removed = false
  const remove = (): void => {
    if (removed) return
    removed = true
    unregister()
    try {
      unlinkSync(path)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
    if (made) rmSync(made, { recursive: true, force: true })
  }
  const unregister = onShutdown(remove)
  try {
    const fd = openExclusive(path, 0o600)
    try {
      const bytes = Buffer.from(content, 'utf8')
      for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done)
    } finally {
      closeSync(fd)
    }
  } catch (error) {
    remove()
    throw error
  }
  return { path, remove }
}
