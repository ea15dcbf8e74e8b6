/**
 * Creating a backup: `pg_dump` (custom format) streamed through OpenPGP encryption into the store,
 * hashed on the way. No plaintext touches disk and memory stays bounded. Row counts and the schema
 * fingerprint are read inside the very snapshot pg_dump dumps (`pg_export_snapshot`), so the
 * manifest describes exactly the rows in the file. The manifest is written last, only after
 * pg_dump exited 0 and the file was synced: a backup without a manifest does not exist.
 */
import { pipeline as pipelineTo, Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { constants as zlib, createZstdCompress } from 'node:zlib'
import type { ReadableStream as NodeWebStream } from 'node:stream/web'
import * as openpgp from 'openpgp'
import { CommandError, OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { describeSchema, rowCounts } from '../drivers/fingerprint.ts'
import { createHash } from 'node:crypto'
import { GNUPG22_CONFIG, type Recipient } from './keys.ts'
import { backupFiles, MANIFEST_FORMAT, newBackupId, type Manifest } from './manifest.ts'
import {
  SVCOPS_SCHEMA,
  assertToolFits,
  connectDatabase,
  findPgTool,
  lastLine,
  majorOf,
  serverVersion,
  spawnPgTool,
  type DatabaseTarget,
} from '../drivers/postgres.ts'
import { signManifest, type SigningKey } from './signing.ts'
import type { BackupStore } from './store.ts'
import { ChunkJoiner, HashingTap, PIECE_BYTES, PieceHashingTap, toWebStream } from './streams.ts'

/**
 * zstd's level (`backup.compression`, 1-9; 0 leaves the archive uncompressed). Level 1 compresses
 * the custom-format archive about four times as fast as pg_dump's own zlib at level 1, into fewer
 * bytes than `pg_dump -Fc | gpg` (docs/benchmarks.md).
 */
export const DEFAULT_COMPRESSION_LEVEL = 1

/** How a backup at `level` is compressed (0: nothing compresses; pg_dump-zlib at level 0 says so, as before). */
export function compressionFor(level: number): Manifest['compression'] {
  return level === 0 ? { method: 'pg_dump-zlib', level: 0 } : { method: 'zstd', level }
}

export interface CreateBackupOptions {
  store: BackupStore
  database: DatabaseTarget
  recipients: Recipient[]
  /** The key that signs the manifest (`readSigningKey`); one of the trusted signers. */
  signer: SigningKey
  /** Environment name; the first part of the backup id. */
  environment: string
  /** zstd level 1-9, or 0 for an uncompressed archive (default 1). */
  compressionLevel?: number
  /** Schemas covered by fingerprint and row counts (default: every non-system schema). */
  schemas?: string[]
  /** Recording service version per host, and whether it was read from the hosts or the config. */
  serviceVersions?: Record<string, string>
  serviceVersionsSource?: Manifest['serviceVersionsSource']
}

/** The steps `createBackup` takes, for --dry-run. */
export function planBackup(options: Omit<CreateBackupOptions, 'store' | 'signer'> & { storeLocation: string }): string[] {
  const d = options.database
  return [
    `check that pg_dump is installed and not older than the server at ${d.host}:${d.port}`,
    `open a read-only snapshot of ${d.name} and record its schema fingerprint and row counts`,
    `stream pg_dump --format=custom --compress=0 of that snapshot${describeCompression(compressionFor(options.compressionLevel ?? DEFAULT_COMPRESSION_LEVEL))} through OpenPGP encryption to ${options.recipients.map((r) => r.fingerprint).join(', ')}`,
    `write the encrypted dump to ${options.storeLocation} (0600), computing its SHA-256 on the way, and sync it`,
    `sign the manifest (it holds the dump's SHA-256) and write the signature, then the manifest last`,
  ]
}

/** Creates an encrypted, checksummed backup of `database` in `store` and returns its manifest. */
export async function createBackup(options: CreateBackupOptions): Promise<Manifest> {
  const { store, database } = options
  const compression = compressionFor(options.compressionLevel ?? DEFAULT_COMPRESSION_LEVEL)
  const schemaOptions = options.schemas ? { schemas: options.schemas } : {}
  const pgDump = await findPgTool('pg_dump')
  const client = await connectDatabase(database)
  try {
    const server = await serverVersion(client)
    assertToolFits(pgDump, server.text, majorOf(server.num), `the database server at ${database.host}:${database.port}`)
    const startedAt = new Date()
    const id = newBackupId(options.environment, startedAt)
    const files = backupFiles(id)

    // One snapshot for the counts, the fingerprint and pg_dump: the manifest describes the dump exactly.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    const snapshot = (await client.query<{ s: string }>('SELECT pg_export_snapshot() AS s')).rows[0]?.s ?? ''
    const { fingerprint, counts } = await events.step('record schema fingerprint and row counts', async () => {
      const lines = await describeSchema(client, schemaOptions)
      return { fingerprint: createHash('sha256').update(lines.join('\n')).digest('hex'), counts: await rowCounts(client, schemaOptions) }
    })

    const streamed = await events.step(`stream pg_dump of ${database.name} encrypted to ${store.location}/${files.dump}`, () =>
      streamDump({ store, file: files.dump, database, pgDumpPath: pgDump.path, compression, snapshot, recipients: options.recipients }),
    )
    await client.query('COMMIT')

    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      id,
      environment: options.environment,
      startedAt: startedAt.toISOString(),
      completedAt: new Date().toISOString(),
      file: files.dump,
      database: { host: database.host, port: database.port, name: database.name, user: database.user },
      serviceVersions: options.serviceVersions ?? {},
      serviceVersionsSource: options.serviceVersionsSource ?? (options.serviceVersions ? 'config' : 'unknown'),
      versions: { server: server.text, serverNum: server.num, pgDump: pgDump.version },
      schemas: options.schemas ?? [],
      fingerprint,
      rowCounts: counts,
      compression,
      encryption: { standard: 'OpenPGP', recipients: options.recipients.map((r) => ({ fingerprint: r.fingerprint, userIds: r.userIds })) },
      sizes: { dump: streamed.dumpBytes, encrypted: streamed.encryptedBytes },
      checksums: {
        encryptedSha256: streamed.encryptedSha256,
        dumpSha256: streamed.dumpSha256,
        encryptedPieces: { size: PIECE_BYTES, sha256: streamed.encryptedPieces },
      },
    }
    const text = JSON.stringify(manifest, null, 2) + '\n'
    const signature = await signManifest(Buffer.from(text, 'utf8'), options.signer)
    await events.step(`sign and write the manifest (key ${options.signer.fingerprint})`, async () => {
      // The signature first: the manifest, written last, is what makes the backup exist.
      await store.writeText(files.signature, signature)
      await store.writeText(files.manifest, text)
    })
    return manifest
  } finally {
    await client.end().catch(() => undefined)
  }
}

interface StreamDumpOptions {
  store: BackupStore
  file: string
  database: DatabaseTarget
  pgDumpPath: string
  compression: Manifest['compression']
  snapshot: string
  recipients: Recipient[]
}

interface Streamed {
  dumpBytes: number
  dumpSha256: string
  encryptedBytes: number
  encryptedSha256: string
  encryptedPieces: string[]
}

/** `, compressed by zstd at level N` for the plan; nothing when the archive is not compressed. */
function describeCompression(c: Manifest['compression']): string {
  return c.method === 'zstd' ? `, compressed by zstd at level ${c.level},` : ''
}

/**
 * pg_dump -> SHA-256 (of the archive) -> zstd -> OpenPGP -> SHA-256 -> store; removes the partial
 * file on any failure. pg_dump compresses nothing: its zlib is single-threaded and was most of a
 * backup's time, while zstd runs on libuv's thread pool beside the encryption.
 */
async function streamDump(o: StreamDumpOptions): Promise<Streamed> {
  // svcops' own schema (run lock, run records, journals) is not the service's data: a restore keeps it as it is.
  const argv = [
    o.pgDumpPath,
    '--format=custom',
    '--compress=0',
    `--snapshot=${o.snapshot}`,
    `--exclude-schema=${SVCOPS_SCHEMA}`,
    '--no-password',
  ]
  const writer = await o.store.createWriter(o.file)
  const dump = spawnPgTool(argv, { target: o.database }, { stdin: false, stdout: true, wideOutput: true })
  const stdout = dump.child.stdout
  if (!stdout) throw new OperationError('pg_dump was started without an output stream.')
  const plainTap = new HashingTap()
  const cipherTap = new HashingTap()
  const pieceTap = new PieceHashingTap()
  try {
    // One pipeline, so that a consumer that stops (a full store) stops the reads of pg_dump's output too.
    const plain = pipelineTo(stdout, new ChunkJoiner(JOINED_BYTES), plainTap, () => undefined)
    const packed = o.compression.method === 'zstd' ? zstdCompressed(plain, o.compression.level) : plain
    const message = await openpgp.createMessage({ binary: toWebStream(packed), format: 'binary' })
    // The declared return type depends on which ReadableStream the input was; it is a web stream of bytes.
    const encrypted: unknown = await openpgp.encrypt({
      message,
      encryptionKeys: o.recipients.map((r) => r.key),
      format: 'binary',
      config: { ...GNUPG22_CONFIG, preferredCompressionAlgorithm: openpgp.enums.compression.uncompressed },
    })
    const [, exit] = await Promise.all([
      pipeline(
        Readable.fromWeb(encrypted as NodeWebStream<Uint8Array>),
        new ChunkJoiner(WRITTEN_BYTES),
        cipherTap,
        pieceTap,
        writer.stream,
      ),
      dump.exited,
    ])
    if (exit.code !== 0) {
      throw new CommandError(
        `pg_dump of ${o.database.name} at ${o.database.host}:${o.database.port} ${exit.code === null ? `was killed by ${exit.signal ?? 'a signal'}` : `exited with code ${exit.code}`}: ${lastLine(exit.stderr) || 'no message'}; the partial file was removed.`,
        exit.code,
        exit.stderr,
      )
    }
    await writer.commit()
  } catch (error) {
    dump.child.kill('SIGTERM')
    await writer.abort()
    await dump.exited.catch(() => undefined)
    throw explainWriteError(error, o.store.location, cipherTap.bytes)
  }
  return {
    dumpBytes: plainTap.bytes,
    dumpSha256: plainTap.digest(),
    encryptedBytes: cipherTap.bytes,
    encryptedSha256: cipherTap.digest(),
    encryptedPieces: pieceTap.pieces,
  }
}

/** The size of the chunks pg_dump's output is joined into before it is hashed and compressed. */
const JOINED_BYTES = 1 << 20

/**
 * The size of the chunks the encrypted message is joined into before it is hashed and written.
 * openpgp.js hands it on in the chunks zstd made (16 KiB); each write to the store is a round trip
 * through libuv's thread pool, and a backup of 1 GB made about 13,000 of them: joined, a 1 GB
 * create used 7.3 s of CPU instead of 7.9 s (docs/benchmarks.md). Larger chunks into openpgp.js itself cost more.
 */
const WRITTEN_BYTES = 256 << 10

/** `input` compressed as one zstd stream; an error or early end on either side ends both. */
function zstdCompressed(input: Readable, level: number): Readable {
  return pipelineTo(input, createZstdCompress({ params: { [zlib.ZSTD_c_compressionLevel]: level } }), () => undefined)
}

/** Disk full and friends become one sentence naming the store; other errors pass through. */
function explainWriteError(error: unknown, location: string, written: number): unknown {
  const code = (error as NodeJS.ErrnoException).code
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new OperationError(
      `The backup store ${location} ran out of space (${code}) after ${(written / 1024 ** 2).toFixed(1)} MB of the backup; the partial file was removed and no backup was listed.`,
      'Free space in the store (svcops backup prune --keep-last N) or point backup.store.path at a larger disk.',
    )
  }
  if (code === 'EACCES' || code === 'EROFS') {
    return new OperationError(`The backup store ${location} is not writable (${code}); no backup was listed.`)
  }
  return error
}
