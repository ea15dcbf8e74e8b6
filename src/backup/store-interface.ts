/**
 * The one interface of a backup store, apart from its two places (store.ts: a local directory and
 * the factory; ssh-store.ts: a directory over SFTP), so that neither place imports the other for its types.
 */
import type { Readable, Writable } from 'node:stream'

/** A file being written to the store; invisible until `commit`. */
export interface StoreWriter {
  readonly stream: Writable
  /** Syncs the file to stable storage and gives it its final name. Call after `stream` finished. */
  commit(): Promise<void>
  /** Removes the partial file (after a failure). Safe to call twice. */
  abort(): Promise<void>
}

/** Where backups are kept. Names are plain file names (no directories). */
export interface BackupStore {
  /** Human-readable place, for messages: a path, or user@host:path. */
  readonly location: string
  /** Names of the complete files in the store. */
  names(): Promise<string[]>
  readText(name: string): Promise<string>
  /** Writes a small file atomically (0600, synced, then renamed into place). */
  writeText(name: string, text: string): Promise<void>
  openRead(name: string): Promise<Readable>
  createWriter(name: string): Promise<StoreWriter>
  /** Size in bytes, or undefined when the file does not exist. */
  size(name: string): Promise<number | undefined>
  remove(name: string): Promise<void>
  close(): Promise<void>
}
