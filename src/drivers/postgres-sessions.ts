/**
 * svcops' own sessions on a PostgreSQL server, known by backend pid. A restore refuses while other
 * sessions use the service database, and must not count the run store's and the run lock's
 * sessions of this very process (a rollback writes its journal while it restores). They are told
 * apart by `pg_backend_pid()`, which the server assigns, never by `application_name`, which any
 * client may set to whatever it likes.
 */
import type pg from 'pg'

/** Backend pids of this process's own sessions, by server (`host:port`). */
const own = new Map<string, Set<number>>()

function keyOf(server: { host: string; port: number }): string {
  return `${server.host}:${server.port}`
}

/**
 * Records `client` (connected to `server`) as one of svcops' own sessions until it ends; `pid` is
 * its `pg_backend_pid()` when the caller already asked for it, otherwise it is asked here.
 */
export async function rememberOwnSession(client: pg.Client, server: { host: string; port: number }, pid?: number): Promise<void> {
  const backendPid = pid ?? (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid
  if (backendPid === undefined) return
  const key = keyOf(server)
  const pids = own.get(key) ?? new Set<number>()
  own.set(key, pids)
  pids.add(backendPid)
  // The server reuses a pid once its session ends: a later stranger with it must count again.
  client.once('end', () => pids.delete(backendPid))
}

/** The backend pids of svcops' own open sessions on `server` in this process. */
export function ownSessionPids(server: { host: string; port: number }): number[] {
  return [...(own.get(keyOf(server)) ?? [])]
}
