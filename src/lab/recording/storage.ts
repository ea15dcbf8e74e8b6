/**
 * Recording storage on disk: one small JSON file per recording under its storage location's
 * directory. Wrong paths, unknown location names and missing permissions surface as
 * StorageError — the service's "recordings inaccessible" symptom.
 */
import { constants } from 'node:fs'
import { access, mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { resolveUnderRoot, type RecordingServiceConfig } from './config.ts'
import { errorMessage } from '../../core/errors.ts'

/** A recording could not be read or written. */
export class StorageError extends Error {}

/** What the content info cache keeps per recording: its file was read and holds this many bytes. */
interface ContentInfo {
  size: number
  checkedAt: number
}

export class RecordingStorage {
  private readonly base: string
  private readonly cache = new Map<string, ContentInfo>()

  private readonly config: RecordingServiceConfig

  constructor(root: string, config: RecordingServiceConfig) {
    this.config = config
    this.base = resolveUnderRoot(root, config.storage.path)
  }

  /** Name of the location new recordings are written to. */
  get defaultLocation(): string {
    return this.config.storage.defaultLocation ?? this.config.storage.locations[0]?.name ?? 'main'
  }

  /** Directory of a named location; StorageError when the name is not configured. */
  locationDir(name: string): string {
    const location = this.config.storage.locations.find((candidate) => candidate.name === name)
    if (!location)
      throw new StorageError(
        `storage location "${name}" is not configured (configured: ${this.config.storage.locations.map((l) => l.name).join(', ')})`,
      )
    return resolveUnderRoot('/', location.path, this.base)
  }

  /** Checks every location is a readable, writable directory; returns one problem per bad location. */
  async checkLocations(): Promise<string[]> {
    const problems: string[] = []
    try {
      // The storage path itself is never created: a wrong path must show, not fill a new directory.
      if (!(await stat(this.base)).isDirectory()) return [`storage path ${this.base} is not a directory`]
    } catch (error) {
      return [`storage path ${this.base}: ${describe(error)}`]
    }
    for (const location of this.config.storage.locations) {
      const dir = this.locationDir(location.name)
      try {
        await mkdir(dir, { recursive: true })
        await access(dir, constants.R_OK | constants.W_OK | constants.X_OK)
      } catch (error) {
        problems.push(`storage location "${location.name}" at ${dir}: ${describe(error)}`)
      }
    }
    return problems
  }

  /** Writes the file of a new recording. */
  async writeRecording(location: string, fileName: string, content: unknown): Promise<void> {
    const dir = this.locationDir(location)
    try {
      await writeFile(join(dir, fileName), `${JSON.stringify(content)}\n`, { mode: 0o644 })
    } catch (error) {
      throw new StorageError(`cannot write recording file ${join(dir, fileName)}: ${describe(error)}`)
    }
  }

  /** Reads a recording's file (or trusts the content info cache); StorageError when it cannot. */
  async checkRecording(id: string, location: string, fileName: string): Promise<void> {
    const ttlMs = (this.config.contentInfoCacheTtlSeconds ?? 300) * 1000
    const cached = this.cache.get(id)
    if (cached && Date.now() - cached.checkedAt < ttlMs) return
    const path = join(this.locationDir(location), fileName)
    try {
      await readFile(path)
      const info = await stat(path)
      this.remember(id, { size: info.size, checkedAt: Date.now() })
    } catch (error) {
      this.cache.delete(id)
      throw new StorageError(`cannot read recording file ${path}: ${describe(error)}`)
    }
  }

  private remember(id: string, info: ContentInfo): void {
    const size = this.config.contentInfoCacheSize
    if (size <= 0) return
    this.cache.delete(id)
    this.cache.set(id, info)
    // Map keeps insertion order: the first key is the least recently checked.
    while (this.cache.size > size) {
      const oldest = this.cache.keys().next().value
      if (oldest === undefined) break
      this.cache.delete(oldest)
    }
  }
}

function describe(error: unknown): string {
  if (error && typeof error === 'object' && 'code' in error) {
    const code = String(error.code)
    if (code === 'EACCES' || code === 'EPERM') return `permission denied (${code})`
    if (code === 'ENOENT') return 'no such file or directory (ENOENT)'
    if (code === 'ENOTDIR') return 'a path component is not a directory (ENOTDIR)'
    return code
  }
  return errorMessage(error)
}
