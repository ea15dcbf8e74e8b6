/**
 * Loading a decrypted dump into a database with the standard tools. Two ways:
 *  - into an empty scratch database (test restores): `pg_restore -d`;
 *  - over the service database (restores): `pg_restore -f -` turned into SQL and run by
 *    `psql --single-transaction` after statements that drop the current objects, so the database
 *    ends up exactly as in the backup (also tables a later migration added) — or, on any error,
 *    exactly as before. Nothing is lost half-way.
 */
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { CommandError } from '../core/errors.ts'
import { requireBinary } from '../core/runner.ts'
import { CheckFailedError, decryptFailure } from './decrypt.ts'
import type { Manifest } from './manifest.ts'
import { SVCOPS_SCHEMA, lastLine, spawnPgTool, type DatabaseTarget, type PgTool } from '../drivers/postgres.ts'
import { HashingTap } from './streams.ts'

export interface LoadResult {
  dumpBytes: number
  dumpSha256: string
}

type Exit = { code: number | null; signal: string | null; stderr: string }

function failed(tool: string, exit: Exit, database: string): CommandError {
  const how = exit.code === null ? `was killed by ${exit.signal ?? 'a signal'}` : `exited with code ${exit.code}`
  return new CommandError(`${tool} into ${database} ${how}: ${lastLine(exit.stderr) || 'no message'}.`, exit.code, exit.stderr)
}

/** The errors a pipeline into a tool meets when the tool stopped reading: the tool's exit says why. */
const TOOL_SIDE = new Set(['EPIPE', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_PREMATURE_CLOSE'])

/**
 * Waits for the data pipeline and the tools. A tool's own error explains more than a broken pipe;
 * a read that failed (a piece that differs, decryption, decompression) explains more than the
 * tool's complaint about its input being cut short.
 */
async function settle(
  manifest: Manifest,
  flow: Promise<void>,
  tools: { name: string; exited: Promise<Exit> }[],
  database: string,
): Promise<void> {
  const [flowResult, ...exits] = await Promise.allSettled([flow, ...tools.map((t) => t.exited)])
  if (flowResult?.status === 'rejected') {
    const reason: unknown = flowResult.reason
    const toolSide = reason instanceof CommandError || TOOL_SIDE.has((reason as NodeJS.ErrnoException).code ?? '')
    if (!toolSide) throw decryptFailure(manifest, reason)
  }
  for (const [i, result] of exits.entries()) {
    const tool = tools[i]
    if (!tool) continue
    if (result.status === 'rejected') throw result.reason
    if (result.value.code !== 0) throw failed(tool.name, result.value, database)
  }
  if (flowResult?.status === 'rejected') throw decryptFailure(manifest, flowResult.reason)
}

/**
 * The standard input of a tool that reads the dump, outliving the tool's reading: pg_restore exits
 * once it has the archive's last entry, which can be before the last bytes of the stream reach it.
 * The rest of the dump is still read (its SHA-256 and size are the manifest's check) and the tool's
 * exit decides: 0 lets the flow finish; any other exit stops it as a closed pipe would, and the
 * tool's own error is the one reported.
 */
function toolInput(stdin: Writable, exited: Promise<Exit>): Writable {
  let open = true
  const shut = (): void => {
    open = false
  }
  stdin.on('close', shut)
  stdin.on('error', shut) // EPIPE once the tool is gone: its exit says whether that is a failure
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (!open || stdin.write(chunk)) return callback()
      const go = (): void => {
        stdin.off('drain', go)
        stdin.off('close', go)
        callback()
      }
      stdin.on('drain', go)
      stdin.on('close', go)
    },
    final(callback) {
      if (open) stdin.end()
      callback()
    },
    destroy(error, callback) {
      if (error) stdin.destroy() // the tool sees its input cut short and fails; never on success, which would drop what is buffered
      callback(error)
    },
  })
  exited.then(
    (exit) => {
      if (exit.code !== 0) sink.destroy(Object.assign(new Error('the tool stopped reading its input'), { code: 'EPIPE' }))
    },
    () => undefined,
  )
  return sink
}

/** Restores the decrypted dump into an empty database (`pg_restore -d`, owners and grants left out). */
export async function loadIntoEmptyDatabase(
  manifest: Manifest,
  dump: Readable,
  pgRestore: PgTool,
  target: DatabaseTarget,
  database: string,
): Promise<LoadResult> {
  const tap = new HashingTap()
  const tool = spawnPgTool(
    [pgRestore.path, '--no-owner', '--no-privileges', '--exit-on-error', `--dbname=${database}`],
    { target, database },
    { stdin: true, stdout: false },
  )
  const stdin = tool.child.stdin
  if (!stdin) throw new CommandError('pg_restore was started without an input stream.', null, '')
  const flow = pipeline(dump, tap, toolInput(stdin, tool.exited))
  await settle(manifest, flow, [{ name: 'pg_restore', exited: tool.exited }], database)
  return { dumpBytes: tap.bytes, dumpSha256: tap.digest() }
}

/**
 * SQL that drops every table, view, sequence, type and function in the non-system schemas, and the
 * schemas (but `public`) the role owns. svcops' own schema (the run lock, run records and journals)
 * is never dropped: a restore must not rewind the history of the runs, the one restoring included.
 */
export async function dropStatements(client: Pick<pg.ClientBase, 'query'>, schemas: string[]): Promise<string[]> {
  const filter =
    schemas.length > 0
      ? 'n.nspname = ANY($1::text[])'
      : `n.nspname NOT IN ('pg_catalog', 'information_schema', '${SVCOPS_SCHEMA}') AND n.nspname NOT LIKE 'pg\\_%'`
  const params = schemas.length > 0 ? [schemas] : []
  const notExtension = "NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = o.oid AND d.deptype = 'e')"
  const relations = await client.query<{ kind: string; name: string }>(
    `SELECT CASE o.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END AS kind,
            quote_ident(n.nspname) || '.' || quote_ident(o.relname) AS name
       FROM pg_class o JOIN pg_namespace n ON n.oid = o.relnamespace
      WHERE o.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND NOT o.relispartition AND ${filter} AND ${notExtension}
      ORDER BY 1, 2`,
    params,
  )
  const types = await client.query<{ name: string; kind: string }>(
    `SELECT quote_ident(n.nspname) || '.' || quote_ident(o.typname) AS name, CASE o.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END AS kind
       FROM pg_type o JOIN pg_namespace n ON n.oid = o.typnamespace
      WHERE o.typtype IN ('e', 'd', 'r', 'm') AND ${filter} AND ${notExtension}`,
    params,
  )
  const functions = await client.query<{ name: string }>(
    `SELECT o.oid::regprocedure::text AS name FROM pg_proc o JOIN pg_namespace n ON n.oid = o.pronamespace WHERE o.prokind IN ('f', 'p') AND ${filter} AND ${notExtension}`,
    params,
  )
  // pg_restore creates every schema of the dump but `public` (which it expects to exist): one left in
  // place fails the load. The role's own schemas go whole, so the result is the dump and nothing else.
  const owned = await client.query<{ name: string }>(
    `SELECT quote_ident(n.nspname) AS name FROM pg_namespace n
      WHERE n.nspowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) AND n.nspname <> 'public' AND ${filter} AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = n.oid AND d.deptype = 'e')
      ORDER BY 1`,
    params,
  )
  return [
    ...relations.rows.map((r) => `DROP ${r.kind} IF EXISTS ${r.name} CASCADE;`),
    ...types.rows.map((t) => `DROP ${t.kind} IF EXISTS ${t.name} CASCADE;`),
    ...functions.rows.map((f) => `DROP ROUTINE IF EXISTS ${f.name} CASCADE;`),
    ...owned.rows.map((n) => `DROP SCHEMA IF EXISTS ${n.name} CASCADE;`),
  ]
}

/**
 * Replaces the contents of `target` with the dump (the entries `selection` picks), all or nothing: the drop statements and the
 * dump's SQL run in one transaction of `psql --single-transaction -v ON_ERROR_STOP=1`. psql commits
 * when its input ends, so its input ends only after pg_restore exited 0 and the whole dump went
 * through with the manifest's size and SHA-256; otherwise psql is killed first (no commit) and the
 * database stays as it was.
 */
export async function loadOverDatabase(
  manifest: Manifest,
  dump: Readable,
  pgRestore: PgTool,
  target: DatabaseTarget,
  drops: string[],
  selection: string[] = [],
): Promise<LoadResult> {
  const psqlPath = requireBinary('psql', 'postgresql-client')
  const tap = new HashingTap()
  // `selection`: `--use-list=FILE` when only part of the archive is restored (restore-list.ts).
  const restore = spawnPgTool([pgRestore.path, '--no-owner', '--no-privileges', ...selection, '--file=-'], undefined, {
    stdin: true,
    stdout: true,
  })
  const psql = spawnPgTool(
    [psqlPath, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '--single-transaction', '-f', '-'],
    { target },
    {
      stdin: true,
      stdout: false,
    },
  )
  const { stdin: restoreIn, stdout: restoreOut } = restore.child
  const psqlIn = psql.child.stdin
  if (!restoreIn || !restoreOut || !psqlIn) throw new CommandError('pg_restore or psql was started without its streams.', null, '')
  const preamble = Buffer.from(drops.join('\n') + '\n')
  const dumpFlow = pipeline(dump, tap, toolInput(restoreIn, restore.exited))
  let result: LoadResult | undefined
  let refusal: unknown
  async function* sql(): AsyncGenerator<Buffer> {
    try {
      yield preamble
      for await (const chunk of restoreOut as AsyncIterable<Buffer>) yield chunk
      await dumpFlow
      const exit = await restore.exited
      if (exit.code !== 0) throw failed('pg_restore', exit, target.name)
      result = { dumpBytes: tap.bytes, dumpSha256: tap.digest() }
      if (result.dumpSha256 !== manifest.checksums.dumpSha256 || result.dumpBytes !== manifest.sizes.dump)
        throw new CheckFailedError(
          'decrypt',
          `The decrypted dump has ${result.dumpBytes} bytes with SHA-256 ${result.dumpSha256}; the manifest says ${manifest.sizes.dump} bytes with ${manifest.checksums.dumpSha256}; nothing was committed.`,
        )
    } catch (error) {
      // The end of psql's input would commit: kill it before the pipe closes.
      refusal = error
      psql.child.kill('SIGKILL')
      throw error
    }
  }
  const flow = Promise.all([dumpFlow, pipeline(Readable.from(sql()), psqlIn)]).then(() => undefined)
  try {
    await settle(
      manifest,
      flow,
      [
        { name: 'pg_restore', exited: restore.exited },
        { name: 'psql', exited: psql.exited },
      ],
      target.name,
    )
  } catch (error) {
    throw refusal instanceof CheckFailedError || refusal instanceof CommandError ? refusal : error
  }
  if (!result) throw new CommandError(`psql into ${target.name} ended before the dump was complete; nothing was committed.`, null, '')
  return result
}
