/**
 * "Slow performance (content info cache size, write rate limit if enabled, database query
 * performance, disk I/O)": the cache against the number of recordings, the write rate limit against
 * the recent peak write rate, the list query's plan and time (EXPLAIN ANALYZE under a statement
 * timeout) and the index it needs, and free space and write latency of the storage volume.
 */
import { fine, skipped } from '../../doctor/outcome.ts'
import { locationDirs } from './recordings.ts'
import { NO_CONFIG, type Cause } from './cause-types.ts'

/** The service's list query (`GET /api/v1/content?limit=100`). */
const LIST_QUERY = 'SELECT * FROM recordings ORDER BY id LIMIT 100'
/** The list query is slow above this. */
const SLOW_QUERY_MS = 500
/** A storage volume is full below this many free KiB, or below FULL_PERCENT of its size. */
const FULL_KIB = 512
const FULL_PERCENT = 5
/** A synchronous 4 KiB write slower than this is slow disk I/O. */
const SLOW_WRITE_MS = 200

async function recordingCount(client: import('pg').Client): Promise<number> {
  return Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM recordings')).rows[0]?.n ?? 0)
}

export const contentInfoCache: Cause = {
  id: 'content-info-cache',
  problem: 'problem-slow',
  check: 'contentInfoCacheSize holds every recording (else lists re-read files)',
  beforeStop: false,
  async run(view) {
    if (!view.config) return skipped(NO_CONFIG)
    const db = await view.database()
    if (!('client' in db)) return skipped(`no database connection: ${db.error}`)
    const size = view.config.contentInfoCacheSize ?? 1000
    const count = await recordingCount(db.client)
    if (size >= count) return fine(`contentInfoCacheSize ${size} for ${count} recording(s)`)
    return fine(`contentInfoCacheSize ${size} for ${count} recording(s)`, [
      {
        severity: 'warning',
        summary: `The content info cache holds ${size} of ${count} recordings: every list re-reads the files of the others.`,
        evidence: [`${view.configPath}: contentInfoCacheSize = ${size}`, `database: ${count} recordings`],
        remedy: `Set contentInfoCacheSize in ${view.configPath} to at least ${Math.max(1000, Math.ceil(count * 1.2))}, then restart the service.`,
      },
    ])
  },
}

export const writeRateLimit: Cause = {
  id: 'write-rate-limit',
  problem: 'problem-slow',
  check: 'writeRateLimit, if enabled, is above the peak write rate of the last day',
  beforeStop: false,
  async run(view) {
    if (!view.config) return skipped(NO_CONFIG)
    const limit = view.config.writeRateLimit ?? 0
    if (limit <= 0) return fine('writeRateLimit is off')
    const db = await view.database()
    if (!('client' in db)) return skipped(`no database connection: ${db.error}`)
    const peak = Number(
      (
        await db.client.query<{ n: string | null }>(
          `SELECT max(n) AS n FROM (SELECT count(*) AS n FROM recordings WHERE created_at > now() - interval '1 day' GROUP BY date_trunc('second', created_at)) s`,
        )
      ).rows[0]?.n ?? 0,
    )
    if (peak < limit) return fine(`writeRateLimit ${limit}/s, peak ${peak}/s in the last day`)
    return fine(`writeRateLimit ${limit}/s against the peak write rate`, [
      {
        severity: 'warning',
        summary: `The write rate limit of ${limit}/s is at or below the peak of ${peak} recordings/s of the last day: writes beyond it get 429.`,
        evidence: [
          `${view.configPath}: writeRateLimit = ${limit}`,
          `database: up to ${peak} recordings created in one second in the last day`,
        ],
        remedy: `Raise writeRateLimit in ${view.configPath} above ${peak} (or 0 to turn it off), then restart the service.`,
      },
    ])
  },
}

export const listQuery: Cause = {
  id: 'list-query',
  problem: 'problem-slow',
  check: `the list query's plan and time (EXPLAIN ANALYZE ${LIST_QUERY}, 5 s limit) and an index on recordings(id)`,
  beforeStop: false,
  async run(view) {
    if (!view.config) return skipped(NO_CONFIG)
    const db = await view.database()
    if (!('client' in db)) return skipped(`no database connection: ${db.error}`)
    const c = db.client
    const indexed = (
      await c.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
          WHERE i.indrelid = 'public.recordings'::regclass AND a.attname = 'id'`,
      )
    ).rows[0]?.n
    await c.query('BEGIN')
    let plan: string[] = []
    let ms = 0
    try {
      await c.query("SET LOCAL statement_timeout = '5s'")
      const rows = (await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${LIST_QUERY}`)).rows
      plan = rows.map((r) => r['QUERY PLAN'])
      ms = Number(/Execution Time: ([\d.]+) ms/.exec(plan.join('\n'))?.[1] ?? 0)
    } catch (error) {
      plan = [`EXPLAIN ANALYZE did not finish: ${(error as Error).message}`]
      ms = 5000
    } finally {
      await c.query('ROLLBACK')
    }
    const nodes = plan.filter((l) => /Scan|Sort|Execution Time|did not finish/.test(l)).map((l) => l.trim())
    const findings = []
    if (Number(indexed ?? 0) === 0)
      findings.push({
        severity: 'warning' as const,
        summary: 'No index leads with recordings.id: the list query reads and sorts the whole table on every call.',
        evidence: [`EXPLAIN ANALYZE ${LIST_QUERY}:`, ...nodes],
        remedy: 'As the table owner: ALTER TABLE recordings ADD PRIMARY KEY (id); (or CREATE INDEX CONCURRENTLY ON recordings (id);)',
      })
    else if (ms > SLOW_QUERY_MS)
      findings.push({
        severity: 'warning' as const,
        summary: `The list query takes ${ms} ms (over ${SLOW_QUERY_MS} ms).`,
        evidence: [`EXPLAIN ANALYZE ${LIST_QUERY}:`, ...nodes],
        remedy: 'VACUUM ANALYZE recordings; check the database server load and its disk.',
      })
    return fine(`list query ${ms} ms (${nodes.filter((n) => /Scan/.test(n)).join('; ')})`, findings)
  },
}

export const diskIo: Cause = {
  id: 'disk-io',
  problem: 'problem-slow',
  check: 'free space of each storage volume, and the latency of a synchronous 4 KiB write in it',
  beforeStop: true,
  async run(view) {
    if (!view.config?.storage?.path) return skipped(NO_CONFIG)
    const findings = []
    const seen = new Set<string>()
    const checked: string[] = []
    const dirs = locationDirs(view)
    const probes = await view.shEach(
      'd="$1"; [ -d "$d" ] || d="$(dirname "$d")"; df -Pk "$d" | tail -n 1; f="$d/.svcops-doctor-$$"; ' +
        's=$(date +%s%N); if dd if=/dev/zero of="$f" bs=4k count=1 oflag=dsync 2>/dev/null; then e=$(date +%s%N); echo "write $(( (e - s) / 1000000 ))"; else echo "write failed"; fi; rm -f "$f"',
      dirs.map((d) => [view.path(d.path)]),
    )
    for (const [i, d] of dirs.entries()) {
      const [df = '', probe = ''] = (probes[i]?.stdout ?? '').trim().split('\n')
      const writeMs = /^write (\d+)$/.exec(probe)?.[1]
      const write = writeMs !== undefined ? `a synchronous 4 KiB write took ${writeMs} ms` : 'a synchronous 4 KiB write failed'
      const [fs = '?', sizeKib = '0', , availKib = '0', , mount = '?'] = df.split(/\s+/)
      if (seen.has(`${fs} ${mount}`)) continue
      seen.add(`${fs} ${mount}`)
      const size = Number(sizeKib)
      const avail = Number(availKib)
      checked.push(`${d.name}: ${avail} KiB free of ${size} KiB, ${write}`)
      if (avail < FULL_KIB || avail * 100 < size * FULL_PERCENT)
        findings.push({
          severity: 'error' as const,
          summary: `The storage volume of location "${d.name}" (${d.path}) is full: ${avail} KiB free of ${size} KiB.`,
          evidence: [`df ${d.path}: ${df.trim()}`, write],
          remedy: `Free space on the volume mounted at ${mount} (move old recordings to another location) or grow it.`,
        })
      else if (writeMs !== undefined && Number(writeMs) > SLOW_WRITE_MS)
        findings.push({
          severity: 'warning' as const,
          summary: `A synchronous 4 KiB write to location "${d.name}" took ${writeMs} ms.`,
          evidence: [`dd oflag=dsync in ${d.path}: ${writeMs} ms`],
          remedy: `Check the disk behind ${mount} (iostat -x, its health and load).`,
        })
    }
    return fine(checked.join('; ') || 'no storage location', findings)
  },
}
