/**
 * Recording labs shared per worker (docs/testing.md, "Labs shared per worker"). vitest runs the e2e
 * files in forks that do not keep module state between files, but a lab's processes are detached
 * and outlive the file that started them: the first file on a worker brings a lab up (`labUp`) into a
 * slot of the run's pool (test/support/lab-pool.ts), keyed by the worker (`VITEST_POOL_ID`) and the
 * number of hosts, and the next file of that shape takes it back, reset to the state `lab up` leaves:
 *
 * - the recording database copied from a template made once per release after the first start
 *   (`CREATE DATABASE ... TEMPLATE`: the schema that release migrated to, svcops' lock table), every
 *   other database a test made dropped;
 * - the shared recordings storage empty again (a full-volume fault's mount taken off first);
 * - each host's tree compared with what it held right after its install (package, config, password
 *   file, dpkg database, staged packages): a host a test changed, or on another release than the
 *   file asks for, is installed afresh; the others keep their install;
 * - every host's service started (the database under it was swapped) and answering;
 * - the manager's fault switch off; then the recordings the file asks for, created through the API.
 *
 * Under another config (no pool provided), or with SVCOPS_TEST_LAB_POOL=off, a file brings up a lab
 * of its own and brings it down at the end.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import pg from 'pg'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import type { Environment } from '../../src/config/schema.ts'
import { isAlive } from '../../src/core/process.ts'
import { createLabRecordings } from '../../src/lab/hosts-lab.ts'
import { labDown, labPaths, labStatus, labUp } from '../../src/lab/lab.ts'
import { LAB_USERS, type LabManager } from '../../src/lab/manager/lab-users.ts'
import { readLabState } from '../../src/lab/state.ts'
import { acquireEnvironmentLock } from '../../src/runs/lock.ts'
import { slotLabPaths } from '../support/lab-pool.ts'
import { reinstallHost, resetSharedStorage, startAgain, stopServices, takeMountsOff, treeDigest, type LabFacts } from './lab-reset-hosts.ts'

/** The shape a file asks for. */
export interface LabShape {
  hosts: number
  version: string
  recordings: number
}

/** A lab held by one test file: pooled (returned at the end) or its own (brought down at the end). */
export interface HeldLab {
  /** The lab's dir (`secrets/`, `logs/`, `state.json`). */
  labDir: string
  /** Where `lab up` wrote `Pulumi.lab.yaml`. */
  stacksDir: string
  /** The file is done with it: back to the pool, or down when it is the file's own. */
  release(): Promise<void>
  /** The file broke it beyond a reset: down for good; the next file of this worker gets a fresh one. */
  discard(): Promise<void>
}

/** What the pool keeps about a slot's lab between files (the file that holds it has no other memory of it). */
interface SlotState {
  /** Release every host was installed with at the last reset. */
  version: string
  /** Digest of each host's tree right after that reset (`treeDigest`). */
  trees: Record<string, string>
}

/**
 * The worker's lab of this shape, reset for the file, or a lab of the file's own under `ownDir`
 * when there is no pool (another config, SVCOPS_TEST_LAB_POOL=off) or the slot is held already.
 */
export async function takeRecordingLab(shape: LabShape, ownDir: string): Promise<HeldLab> {
  const slot = await poolSlot(shape)
  if (!slot || !claimSlot(slot)) return bringOwnLabUp(shape, ownDir)
  const { dir, stacksDir } = slotLabPaths(slot)
  const discard = async (): Promise<void> => {
    try {
      await labDown({ dir, stacksDir })
    } finally {
      rmSync(slot, { recursive: true, force: true })
    }
  }
  const started = Date.now()
  let how = 'brought up (lab up)'
  try {
    if (existsSync(slotStateFile(slot))) {
      try {
        const reinstalled = await resetLab(slot, shape)
        how = `reset${reinstalled.length > 0 ? ` (installed afresh: ${reinstalled.join(', ')})` : ''}`
      } catch (error) {
        // Told, not hidden: a reset that fails every time would make every file pay a lab up.
        console.warn(
          `The pooled lab ${slot} could not be reset (${error instanceof Error ? error.message : String(error)}); starting a fresh one.`,
        )
        await discard()
        claimSlot(slot)
        await bringSlotLabUp(slot, shape)
      }
    } else {
      await bringSlotLabUp(slot, shape)
    }
    await createRecordings(readLabFacts(slot), shape.recordings)
    // One line a file, so that a run shows how many labs it brought up and what a reset cost.
    console.info(`lab pool: ${basename(slot)} ${how} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  } catch (error) {
    await discard().catch(() => undefined)
    throw error
  }
  return {
    labDir: dir,
    stacksDir,
    release: () => {
      rmSync(claimFile(slot), { force: true })
      return Promise.resolve()
    },
    discard,
  }
}

/**
 * The slot of this worker and shape, or undefined when labs are not pooled in this run. Outside a
 * vitest worker (bench/upgrade starts its labs with this fixture) there is no pool, and vitest's
 * `inject` cannot even be loaded there: it is imported only inside a worker.
 */
async function poolSlot(shape: LabShape): Promise<string | undefined> {
  const worker = process.env.VITEST_POOL_ID
  if (!worker || process.env.SVCOPS_TEST_LAB_POOL === 'off') return undefined
  const pool = await providedLabPool()
  if (!pool) return undefined
  return join(pool, `worker-${worker}-hosts-${shape.hosts}`)
}

/**
 * The pool's directory as the e2e tier's global setup provides it; undefined under another config,
 * or in a process a test started (it inherits VITEST_POOL_ID), where vitest refuses to load.
 */
async function providedLabPool(): Promise<string | undefined> {
  try {
    const { inject } = await import('vitest')
    return inject('labPool')
  } catch (error) {
    if (error instanceof Error && error.message.includes('Vitest failed to access its internal state')) return undefined
    throw error
  }
}

const slotStateFile = (slot: string): string => join(slot, 'pool.json')
const claimFile = (slot: string): string => join(slot, 'held-by')

/** Marks the slot as held by this process; false when a live process holds it (a second lab in one file). */
function claimSlot(slot: string): boolean {
  mkdirSync(slot, { recursive: true })
  const file = claimFile(slot)
  if (existsSync(file)) {
    const holder = Number(readFileSync(file, 'utf8'))
    if (holder > 0 && isAlive(holder)) return false
  }
  writeFileSync(file, String(process.pid))
  return true
}

/** A lab for this file only, as every file had before the pool: down at the end. */
async function bringOwnLabUp(shape: LabShape, ownDir: string): Promise<HeldLab> {
  const dir = join(ownDir, 'lab')
  const stacksDir = join(ownDir, 'stacks')
  await labUp({ dir, stacksDir, hosts: shape.hosts, version: shape.version, recordings: shape.recordings })
  try {
    const env = loadEnvironmentFile(join(stacksDir, 'Pulumi.lab.yaml'), 'lab')
    await tuneLabDatabase(dir, env)
    await takeLockOnce(env)
  } catch (error) {
    await labDown({ dir, stacksDir })
    throw error
  }
  const down = () => labDown({ dir, stacksDir }).then(() => undefined)
  return { labDir: dir, stacksDir, release: down, discard: down }
}

/** `lab up` into the slot (no recordings yet: each file gets its own count), then the template. */
async function bringSlotLabUp(slot: string, shape: LabShape): Promise<void> {
  // A lab a crashed file left half made in this slot goes first (lab up refuses to start over one).
  await labDown(slotLabPaths(slot))
  await labUp({ ...slotLabPaths(slot), hosts: shape.hosts, version: shape.version, recordings: 0 })
  await settleLab(slot, readLabFacts(slot), shape.version, false)
}

/** The slot's lab, or an error when a part a reset cannot restart (PostgreSQL, the manager, sshd) is gone. */
function readLabFacts(slot: string): LabFacts {
  const paths = labPaths(slotLabPaths(slot))
  const status = labStatus(slotLabPaths(slot))
  if (!status.complete) throw new Error('its lab up did not finish')
  const gone = status.entries.filter((e) => ['postgres', 'process', 'sshd'].includes(e.kind) && !e.running)
  if (gone.length > 0) throw new Error(`${gone.map((e) => e.name).join(', ')} no longer running`)
  const hostEntry = readLabState(paths)?.entries.find((e) => e.kind === 'lab-host')
  if (!hostEntry) throw new Error('its state lists no host')
  const env = loadEnvironmentFile(paths.envFile, 'lab')
  const rec = env.recording
  if (!rec) throw new Error('its environment has no recording section')
  return {
    labDir: paths.dir,
    env,
    database: { host: rec.database.host, port: rec.database.port, name: rec.database.name, user: rec.database.user },
    service: rec.service,
    hosts: rec.hosts.map((h) => ({ name: h.name, url: h.url, root: h.root ?? '', canary: false, port: Number(new URL(h.url).port) })),
    hostsDir: String(hostEntry.info.hostsDir),
    user: String(hostEntry.info.user),
  }
}

/** Puts the slot's lab back to the state `lab up` leaves, on the release the file asks for; returns the hosts installed afresh. */
async function resetLab(slot: string, shape: LabShape): Promise<string[]> {
  const facts = readLabFacts(slot)
  const kept = JSON.parse(readFileSync(slotStateFile(slot), 'utf8')) as SlotState
  await switchManagerFaultOff(facts)
  const stopped = await stopServices(facts)
  takeMountsOff(facts.hostsDir)
  resetSharedStorage(facts)
  const templated = await resetDatabase(facts, shape.version)
  const reinstalled: string[] = []
  await Promise.all(
    facts.hosts.map(async (host) => {
      const unchanged = kept.version === shape.version && stopped.get(host.name) === true && kept.trees[host.name] === treeDigest(host.root)
      if (unchanged && (await startAgain(facts, host))) return
      reinstalled.push(host.name)
      await reinstallHost(slot, facts, host, shape.version)
    }),
  )
  await settleLab(slot, facts, shape.version, templated)
  return reinstalled.sort()
}

/** Test speed and backups, the template when the release has none yet, and what the next reset compares with. */
async function settleLab(slot: string, facts: LabFacts, version: string, templated: boolean): Promise<void> {
  await tuneLabDatabase(facts.labDir, facts.env)
  if (!templated) await makeTemplate(facts, version)
  const state: SlotState = { version, trees: Object.fromEntries(facts.hosts.map((h) => [h.name, treeDigest(h.root)])) }
  writeFileSync(slotStateFile(slot), JSON.stringify(state, null, 2))
}

/** The template database of a release's schema (a version is not an identifier). */
function templateName(version: string): string {
  return `svcops_pool_${version.replace(/[^a-z0-9]/gi, '_')}`
}

/** Runs `fn` as PostgreSQL's superuser on the `postgres` database. */
async function asSuperuser<T>(facts: Pick<LabFacts, 'labDir' | 'database'>, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const password = readFileSync(join(facts.labDir, 'secrets', 'postgres-password'), 'utf8').trim()
  const client = new pg.Client({ host: facts.database.host, port: facts.database.port, user: 'postgres', password, database: 'postgres' })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/**
 * Drops every database a lab up did not make (scratch restores a killed run left too) and the
 * recording database, and makes the latter again: from the release's template when there is one
 * (true), else empty as `lab up` creates it, for the service to migrate (false).
 */
async function resetDatabase(facts: LabFacts, version: string): Promise<boolean> {
  return asSuperuser(facts, async (c) => {
    const databases = await c.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE NOT datistemplate AND datname <> 'postgres' AND datname NOT LIKE 'svcops\\_pool\\_%'`,
    )
    // FORCE ends the sessions still on it (a killed run's lock connection).
    for (const { datname } of databases.rows) await c.query(`DROP DATABASE ${pg.escapeIdentifier(datname)} WITH (FORCE)`)
    const template = templateName(version)
    const found = (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [template])).rowCount === 1
    const name = pg.escapeIdentifier(facts.database.name)
    const owner = pg.escapeIdentifier(facts.database.user)
    await c.query(`CREATE DATABASE ${name}${found ? ` TEMPLATE ${pg.escapeIdentifier(template)}` : ''} OWNER ${owner}`)
    return found
  })
}

/** The release's template: the database as its service migrated it, with svcops' lock table; copied with the services stopped. */
async function makeTemplate(facts: LabFacts, version: string): Promise<void> {
  await takeLockOnce(facts.env)
  const stopped = await stopServices(facts)
  if ([...stopped.values()].some((ok) => !ok)) throw new Error('a host service did not stop for the template copy')
  await asSuperuser(facts, async (c) => {
    await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [
      facts.database.name,
    ])
    await c.query(`CREATE DATABASE ${pg.escapeIdentifier(templateName(version))} TEMPLATE ${pg.escapeIdentifier(facts.database.name)}`)
  })
  for (const host of facts.hosts) if (!(await startAgain(facts, host))) throw new Error(`the service of ${host.name} did not start again`)
}

/**
 * The first lock creates svcops' own table (part of the schema fingerprint from then on); taken once
 * at lab up so that tests compare like with like.
 */
async function takeLockOnce(env: Environment): Promise<void> {
  const lock = await acquireEnvironmentLock(env.recording!.database, {
    environment: 'lab',
    holder: { runId: '19700101T000000Z-000000', holder: 'fixture', pid: process.pid, since: new Date().toISOString() },
  })
  await lock.release()
}

/**
 * Test speed and the full backup check: fsync off (reloadable), and CREATEDB for the service role so
 * that the backup's test restore into a scratch database runs (without it svcops falls back to a
 * decrypt-only verification).
 */
export async function tuneLabDatabase(labDir: string, env: Environment): Promise<void> {
  const db = env.recording!.database
  await asSuperuser({ labDir, database: db }, async (c) => {
    await c.query('ALTER SYSTEM SET fsync = off')
    await c.query('ALTER SYSTEM SET synchronous_commit = off')
    await c.query('SELECT pg_reload_conf()')
    await c.query(`ALTER ROLE ${pg.escapeIdentifier(db.user)} CREATEDB`)
  })
}

/** Switches the manager's fault off (a test may have left it on); fails when the manager does not answer. */
async function switchManagerFaultOff(facts: LabFacts): Promise<void> {
  const token = readFileSync(join(facts.labDir, 'secrets', 'manager-admin-token'), 'utf8').trim()
  const answer = await fetch(`${facts.env.manager?.url ?? ''}/lab/fault`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ enabled: false }),
    signal: AbortSignal.timeout(10_000),
  })
  if (!answer.ok) throw new Error(`the manager's fault switch answered ${answer.status}`)
}

/** The recordings a file asks for, created through the recording API as `lab up` creates them. */
async function createRecordings(facts: LabFacts, count: number): Promise<void> {
  if (count === 0) return
  const secrets = join(facts.labDir, 'secrets')
  const users = Object.fromEntries(
    LAB_USERS.map((u) => [u.key, { email: u.email, scopes: [...u.scopes], passwordFile: join(secrets, `manager-${u.key}-password`) }]),
  ) as LabManager['users']
  const manager: LabManager = { url: facts.env.manager?.url ?? '', apiRevision: facts.env.manager?.apiRevision ?? '1.6.2', users }
  await createLabRecordings(manager, facts.hosts, count)
}
