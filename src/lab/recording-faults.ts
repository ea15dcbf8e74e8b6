/**
 * The lab's fault switches: each breaks exactly one thing of a running lab, the way the seed's
 * "common upgrade problems" happen on real hosts, and switching it off puts that thing back. They
 * are the lab's own (the service does only what the seed says); docs/lab.md lists them.
 *
 *   await switchLabFault(lab, 'tables-not-owned', true)   // ... svcops doctor recording --env lab
 *   await switchLabFault(lab, 'tables-not-owned', false)
 */
import { execFileSync } from 'node:child_process'
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { Environment } from '../config/schema.ts'

export const LAB_FAULTS = [
  'config-syntax',
  'password-unreadable',
  'storage-unwritable',
  'location-renamed',
  'media-api-wrong',
  'tables-not-owned',
  'rate-limit',
  'tiny-cache',
  'missing-index',
  'storage-full',
] as const
export type LabFault = (typeof LAB_FAULTS)[number]

/** What a switch needs: the environment `lab up` wrote, and PostgreSQL's superuser password (the lab's secret). */
export interface FaultTarget {
  env: Environment
  superuserPassword: string
}

const ORIGINAL = '.lab-fault-original'

/** Switches `fault` on or off on every recording host of the lab. */
export async function switchLabFault(target: FaultTarget, fault: LabFault, on: boolean): Promise<void> {
  const rec = target.env.recording
  if (!rec) throw new Error('The environment has no svcops:recording section.')
  const dir = target.env.product.dir
  const roots = rec.hosts.map((h) => h.root ?? '/')
  const configs = roots.map((r) => join(r, rec.configPath ?? `/etc/opt/${dir}/recording.json`))
  const edit = (change: (c: Record<string, unknown>) => void) =>
    on ? configs.forEach((f) => editConfig(f, change)) : configs.forEach(restoreConfig)
  const mainDir = () => realpathSync(join(roots[0] ?? '/', `/srv/${dir}/recordings/main`))
  switch (fault) {
    case 'config-syntax':
      if (on) for (const f of configs) saveOriginal(f, readFileSync(f, 'utf8').replace(/("contentInfoCacheSize": \d+),/, '$1'))
      else configs.forEach(restoreConfig)
      return
    case 'password-unreadable':
      for (const r of roots) chmodSync(join(r, `/etc/opt/${dir}/recording.dbpass`), on ? 0o000 : 0o600)
      return
    case 'storage-unwritable':
      chmodSync(mainDir(), on ? 0o555 : 0o755)
      return
    case 'location-renamed':
      return edit((c) => {
        const storage = c.storage as { locations: { name: string; path: string }[]; defaultLocation?: string }
        storage.locations = storage.locations.map((l) => (l.name === 'main' ? { ...l, name: 'archive' } : l))
        storage.defaultLocation = 'archive'
      })
    case 'media-api-wrong':
      return edit((c) => (c.mediaApi = { ...(c.mediaApi as object), baseUrl: 'http://media.invalid:8091/media' }))
    case 'rate-limit':
      return edit((c) => (c.writeRateLimit = 1))
    case 'tiny-cache':
      return edit((c) => (c.contentInfoCacheSize = 1))
    case 'tables-not-owned':
      return asSuperuser(target, async (c) => {
        const owner = on ? 'postgres' : pg.escapeIdentifier(rec.database.user)
        for (const t of ['recordings', 'schema_migrations']) await c.query(`ALTER TABLE public.${t} OWNER TO ${owner}`)
        if (on) {
          const role = pg.escapeIdentifier(rec.database.user)
          await c.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON public.recordings, public.schema_migrations TO ${role}`)
          await c.query(`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${role}`)
        }
      })
    case 'missing-index':
      return asSuperuser(target, async (c) => {
        await c.query(
          on ? 'ALTER TABLE public.recordings DROP CONSTRAINT recordings_pkey' : 'ALTER TABLE public.recordings ADD PRIMARY KEY (id)',
        )
      })
    case 'storage-full':
      return on ? fillStorage(mainDir()) : emptyStorage(mainDir())
  }
}

function editConfig(file: string, change: (config: Record<string, unknown>) => void): void {
  const config = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
  change(config)
  saveOriginal(file, `${JSON.stringify(config, null, 2)}\n`)
}

/** Keeps the file as it was (once) and writes `text` in its place; the owner and mode stay. */
function saveOriginal(file: string, text: string): void {
  if (!existsSync(file + ORIGINAL)) copyFileSync(file, file + ORIGINAL)
  writeFileSync(file, text)
}

function restoreConfig(file: string): void {
  if (!existsSync(file + ORIGINAL)) return
  writeFileSync(file, readFileSync(file + ORIGINAL))
  rmSync(file + ORIGINAL)
}

async function asSuperuser(target: FaultTarget, fn: (c: pg.Client) => Promise<void>): Promise<void> {
  const db = target.env.recording?.database
  if (!db) throw new Error('The environment has no recording database.')
  const client = new pg.Client({ host: db.host, port: db.port, database: db.name, user: 'postgres', password: target.superuserPassword })
  await client.connect()
  try {
    await fn(client)
  } finally {
    await client.end()
  }
}

/**
 * A full volume under the location: a 1 MiB tmpfs mounted over it (root only), holding the
 * location's files and a filler that takes the rest. Files written while it is on are lost when it is off.
 */
function fillStorage(dir: string): void {
  const owner = statSync(dir)
  const keep = mkdtempSync(join(tmpdir(), 'svcops-lab-full-'))
  cpSync(dir, keep, { recursive: true })
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=1m,uid=${owner.uid},gid=${owner.gid},mode=0755`, 'svcops-lab-full', dir])
  cpSync(keep, dir, { recursive: true })
  rmSync(keep, { recursive: true, force: true })
  execFileSync('sh', ['-c', 'dd if=/dev/zero of="$1/.filler" bs=4k 2>/dev/null; true', 'sh', dir])
}

function emptyStorage(dir: string): void {
  execFileSync('umount', [dir])
}
