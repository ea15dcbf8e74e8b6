/**
 * "Recordings inaccessible (storage paths, file permissions, storage location names in the
 * configuration, media API configuration)": the storage path exists, every location is a directory
 * the service's user can write (or can be created in it), every location name the recordings in
 * the database reference is configured, and the media API's host resolves from the service's host.
 */
import { posix } from 'node:path'
import { fine, skipped } from '../../doctor/outcome.ts'
import { NO_CONFIG, type Cause, type HostView } from './cause-types.ts'

/** Each location's directory on the host (`path` relative to `storage.path`). */
export function locationDirs(view: HostView): { name: string; path: string }[] {
  const storage = view.config?.storage
  if (!storage?.path) return []
  const base = storage.path
  return (storage.locations ?? []).map((l) => ({ name: l.name, path: posix.resolve(base, l.path) }))
}

export const storagePaths: Cause = {
  id: 'storage-paths',
  problem: 'problem-recordings',
  check: "storage.path exists; every location is a directory the service's user can read and write",
  beforeStop: true,
  async run(view) {
    const base = view.config?.storage?.path
    if (!view.config || !base) return skipped(NO_CONFIG)
    const script =
      'p="$1"; shift; if [ ! -d "$p" ]; then echo "base missing"; ls -ld -- "$p" 2>&1; exit 0; fi; echo "base ok"; ' +
      'for d in "$@"; do if [ ! -e "$d" ]; then if [ -w "$p" ]; then echo "ok"; else echo "uncreatable"; fi; ' +
      'elif [ -d "$d" ] && [ -r "$d" ] && [ -w "$d" ] && [ -x "$d" ]; then echo ok; else echo "denied $(ls -ld -- "$d" 2>&1)"; fi; done'
    const dirs = locationDirs(view)
    const r = await view.sh(script, view.path(base), ...dirs.map((d) => view.path(d.path)))
    const [head, ...rest] = r.stdout.split('\n')
    if (head !== 'base ok')
      return fine(`storage path ${base}`, [
        {
          severity: 'error',
          summary: `The storage path ${base} of ${view.configPath} is not a directory on ${view.host.name}.`,
          evidence: [`${view.configPath}: storage.path = ${base}`, rest[0] ?? ''].filter(Boolean),
          remedy: `Mount the recordings volume at ${base}, or set storage.path in ${view.configPath} to where it is mounted.`,
        },
      ])
    const findings = dirs.flatMap((d, i) => {
      const state = rest[i] ?? ''
      if (state === 'ok') return []
      return [
        {
          severity: 'error' as const,
          summary: `Storage location "${d.name}" at ${d.path} is not readable and writable by the service's user.`,
          evidence: [state.startsWith('denied ') ? state.slice(7) : `${d.path} does not exist and ${base} is not writable`],
          remedy: `chown -R the service's user ${d.path} and chmod u+rwx ${d.path}.`,
        },
      ]
    })
    return fine(`storage path ${base} and ${dirs.length} location(s)`, findings)
  },
}

export const storageLocationNames: Cause = {
  id: 'storage-location-names',
  problem: 'problem-recordings',
  check: 'every storage location name the recordings reference in the database is configured',
  beforeStop: true,
  async run(view) {
    if (!view.config) return skipped(NO_CONFIG)
    const db = await view.database()
    if (!('client' in db)) return skipped(`no database connection: ${db.error}`)
    const used = (
      await db.client
        .query<{ location: string; n: string }>('SELECT location, count(*) AS n FROM recordings GROUP BY location ORDER BY location')
        .catch(() => ({ rows: [] }))
    ).rows
    const names = (view.config.storage?.locations ?? []).map((l) => l.name)
    const missing = used.filter((u) => !names.includes(u.location))
    const findings = missing.map((m) => ({
      severity: 'error' as const,
      summary: `${m.n} recording(s) reference storage location "${m.location}", which ${view.configPath} does not configure.`,
      evidence: [
        `database: ${m.n} recording(s) with location "${m.location}"`,
        `${view.configPath}: storage.locations = ${names.join(', ') || 'none'}`,
      ],
      remedy: `Add { "name": "${m.location}", "path": ... } to storage.locations in ${view.configPath} (or restore the old name), then restart the service.`,
    }))
    return fine(
      `location names in the database (${used.map((u) => u.location).join(', ') || 'none'}) against the config (${names.join(', ')})`,
      findings,
    )
  },
}

export const mediaApi: Cause = {
  id: 'media-api',
  problem: 'problem-recordings',
  check: "mediaApi.baseUrl is an http(s) URL whose host resolves on the service's host",
  beforeStop: true,
  async run(view) {
    const base = view.config?.mediaApi?.baseUrl
    if (!view.config) return skipped(NO_CONFIG)
    let url: URL | undefined
    try {
      url = base ? new URL(base) : undefined
    } catch {
      url = undefined
    }
    if (!url || !/^https?:$/.test(url.protocol))
      return fine('mediaApi.baseUrl', [
        {
          severity: 'error',
          summary: `mediaApi.baseUrl of ${view.configPath} is not an http(s) URL.`,
          evidence: [`${view.configPath}: mediaApi.baseUrl = ${String(base)}`],
          remedy: `Set mediaApi.baseUrl in ${view.configPath} to the media API's http(s) address.`,
        },
      ])
    const host = url.hostname.replace(/^\[|\]$/g, '')
    const r = await view.sh('getent hosts "$1"', host)
    if (r.code === 0) return fine(`${host} resolves (${r.stdout.trim().split(/\s+/)[0] ?? ''})`)
    return fine(`resolve ${host}`, [
      {
        severity: 'error',
        summary: `The media API host ${host} of mediaApi.baseUrl does not resolve on ${view.host.name}: media URLs of recordings lead nowhere.`,
        evidence: [`${view.configPath}: mediaApi.baseUrl = ${base ?? ''}`, `getent hosts ${host}: exit ${r.code ?? 'none'}`],
        remedy: `Set mediaApi.baseUrl in ${view.configPath} to the media API's address (or fix DNS for ${host}), then restart the service.`,
      },
    ])
  },
}
