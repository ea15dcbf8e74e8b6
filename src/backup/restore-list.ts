/**
 * What a restore loads from a backup: everything but svcops' own schema. Backups exclude it
 * (`pg_dump --exclude-schema=svcops`), but one taken before they did holds it; restoring it would
 * rewind the run lock, the run records and their journals to the backup's time (or fail on the
 * schema a restore keeps in place). The archive's table of contents is read first (`pg_restore
 * --list`, which stops after the table of contents), its svcops entries are left out, and the load
 * restores through the rest (`pg_restore --use-list`). A backup without the schema loads as before.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { CommandError } from '../core/errors.ts'
import { SVCOPS_SCHEMA, lastLine, spawnPgTool, type PgTool } from '../drivers/postgres.ts'

/** An entry of `pg_restore --list`: `id; tableoid oid DESC NAMESPACE TAG OWNER`, DESC in capitals (`TABLE DATA`). */
const IN_SCHEMA = new RegExp(`^\\d+; \\d+ \\d+ (?:[A-Z]+ )+${SVCOPS_SCHEMA}(?: |$)`)
/** The schema's own entry, and a comment, grant or label on it (`SCHEMA - svcops`, `COMMENT - SCHEMA svcops`). */
const OF_SCHEMA = new RegExp(
  `^\\d+; \\d+ \\d+ (?:SCHEMA - ${SVCOPS_SCHEMA}|(?:COMMENT|ACL|SECURITY LABEL) - SCHEMA ${SVCOPS_SCHEMA})(?: |$)`,
)

/** The entries of a `pg_restore --list` text that belong to svcops' schema. */
export function svcopsEntries(list: string): string[] {
  return list.split('\n').filter((line) => IN_SCHEMA.test(line) || OF_SCHEMA.test(line))
}

/** A list file for `pg_restore --use-list`, and its removal. */
export interface RestoreList {
  /** `--use-list=FILE`, or nothing when the archive holds no svcops entry. */
  argv: string[]
  /** The svcops entries left out. */
  left: string[]
  remove(): void
}

/**
 * Reads the table of contents of the decrypted `dump` (the stream is abandoned once pg_restore has
 * printed it) and writes it without svcops' entries to a private file.
 */
export async function listWithoutSvcops(dump: Readable, pgRestore: PgTool): Promise<RestoreList> {
  const tool = spawnPgTool([pgRestore.path, '--list'], undefined, { stdin: true, stdout: true })
  const { stdin, stdout } = tool.child
  if (!stdin || !stdout) throw new CommandError('pg_restore was started without its streams.', null, '')
  const chunks: Buffer[] = []
  stdout.on('data', (chunk: Buffer) => chunks.push(chunk))
  // pg_restore stops reading once it has the table of contents: the rest of the dump is not needed here.
  const fed = pipeline(dump, stdin).catch(() => undefined)
  const exit = await tool.exited
  dump.destroy()
  await fed
  if (exit.code !== 0)
    throw new CommandError(
      `pg_restore --list of the backup ${exit.code === null ? `was killed by ${exit.signal ?? 'a signal'}` : `exited with code ${exit.code}`}: ${lastLine(exit.stderr) || 'no message'}.`,
      exit.code,
      exit.stderr,
    )
  const list = Buffer.concat(chunks).toString('utf8')
  const left = svcopsEntries(list)
  if (!left.length) return { argv: [], left, remove: () => undefined }
  const dir = mkdtempSync(join(tmpdir(), 'svcops-restore-list-'))
  const file = join(dir, 'contents.list')
  const kept = new Set(left)
  writeFileSync(
    file,
    list
      .split('\n')
      .filter((line) => !kept.has(line))
      .join('\n'),
    { mode: 0o600 },
  )
  return { argv: [`--use-list=${file}`], left, remove: () => rmSync(dir, { recursive: true, force: true }) }
}
