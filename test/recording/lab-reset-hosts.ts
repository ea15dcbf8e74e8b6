/**
 * The hosts' part of a pooled lab's reset (test/recording/lab-pool.ts): their services stopped and
 * started again, a host a test changed installed afresh as `lab up` installs it, the digest of a
 * host's tree that tells whether a test changed it, and the shared recordings storage emptied.
 */
import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, truncateSync } from 'node:fs'
import { join } from 'node:path'
import type { Environment, RecordingHostConfig } from '../../src/config/schema.ts'
import { startService, stopService, supervisorDriver } from '../../src/drivers/services.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { installHost, startHost } from '../../src/lab/hosts-fleet.ts'
import { LAB_RECORDING_PRODUCT, labPackagesDir } from '../../src/lab/hosts-lab.ts'
import { stopLabHost, supervisordPid } from '../../src/lab/hosts.ts'
import { waitForHealth } from '../../src/lab/lab-processes.ts'
import { labPaths } from '../../src/lab/lab.ts'
import { buildRecordingPackages, recordingPackagePaths } from '../../src/lab/recording/index.ts'
import { lookupUser } from '../../src/lab/sshd.ts'
import { readLabState, writeLabState } from '../../src/lab/state.ts'
import { slotLabPaths } from '../support/lab-pool.ts'

/** What a reset needs to know of the slot's lab, read from its state and environment files. */
export interface LabFacts {
  labDir: string
  env: Environment
  database: { host: string; port: number; name: string; user: string }
  service: string
  hosts: (RecordingHostConfig & { root: string; port: number })[]
  hostsDir: string
  user: string
}

/** A transport that runs on this machine as the host tree's owner (what the lab itself uses). */
function localTransport(host: LabFacts['hosts'][number]): ReturnType<typeof transportFor> {
  return transportFor({ name: host.name, url: host.url, root: host.root, canary: false })
}

/** Stops every host's service; per host, whether it is stopped (false: its supervisord is gone or did not answer). */
export async function stopServices(facts: LabFacts): Promise<Map<string, boolean>> {
  const outcomes = await Promise.all(
    facts.hosts.map(async (host): Promise<[string, boolean]> => {
      if (supervisordPid({ root: host.root }) === undefined) return [host.name, false]
      const t = localTransport(host)
      try {
        await stopService(supervisorDriver, t, host, facts.service)
        return [host.name, true]
      } catch {
        // The host is installed afresh instead.
        return [host.name, false]
      } finally {
        await t.close()
      }
    }),
  )
  return new Map(outcomes)
}

/** Starts a host's service again with an empty log (as after its install); false when it did not come up. */
export async function startAgain(facts: LabFacts, host: LabFacts['hosts'][number]): Promise<boolean> {
  const log = join(host.root, recordingPackagePaths(LAB_RECORDING_PRODUCT).log)
  if (existsSync(log)) truncateSync(log)
  const t = localTransport(host)
  try {
    if (!(await startService(supervisorDriver, t, host, facts.service)).ok) return false
  } finally {
    await t.close()
  }
  // As lab up waits for a host: GET / answers success, while the host's supervisord lives.
  const supervisord = supervisordPid({ root: host.root })
  return supervisord !== undefined && waitForHealth(`${host.url}/`, supervisord, 30_000)
}

/** A host installed afresh with `version`: its tree removed, the release installed and configured as `lab up` does, on its port. */
export async function reinstallHost(slot: string, facts: LabFacts, host: LabFacts['hosts'][number], version: string): Promise<void> {
  await stopLabHost({ root: host.root }, { removeFiles: true })
  const packages = await buildRecordingPackages(labPackagesDir(facts.labDir), LAB_RECORDING_PRODUCT)
  const options = {
    dir: facts.hostsDir,
    sharedStorage: join(facts.hostsDir, 'shared-recordings'),
    count: facts.hosts.length,
    version,
    packages,
    product: LAB_RECORDING_PRODUCT,
    user: facts.user,
  }
  const installed = await installHost(host.name, options)
  const password = readFileSync(join(facts.labDir, 'secrets', 'recording-db-password'), 'utf8').trim()
  const managerUrl = facts.env.manager?.url ?? ''
  const started = await startHost(installed, { ...options, database: { ...facts.database, password }, managerUrl }, host.port)
  // lab down finds the new supervisord by its pid too, as for a host lab up started.
  const paths = labPaths(slotLabPaths(slot))
  const state = readLabState(paths)
  const entry = state?.entries.find((e) => e.kind === 'lab-host' && e.info.name === host.name)
  if (state && entry) {
    entry.pid = started.supervisordPid
    entry.info = { ...entry.info, version }
    writeLabState(paths, state)
  }
}

/** Files of a host's tree that a running service or supervisord rewrites: not compared. */
const UNCOMPARED = new Set(['var/log', 'run'])

/** One digest of a host's tree: every path's name, mode, owner and contents (a symlink's target), logs and pid files aside. */
export function treeDigest(root: string): string {
  const hash = createHash('sha256')
  const walk = (rel: string): void => {
    const path = rel ? join(root, rel) : root
    const st = lstatSync(path)
    hash.update(`${rel}\0${st.mode}\0${st.uid}\0${st.gid}\0`)
    if (st.isSymbolicLink()) hash.update(readlinkSync(path))
    else if (st.isFile()) hash.update(readFileSync(path))
    else if (st.isDirectory())
      for (const name of readdirSync(path).sort()) {
        const child = rel ? `${rel}/${name}` : name
        if (!UNCOMPARED.has(child)) walk(child)
      }
    hash.update('\n')
  }
  if (!existsSync(root)) return 'missing'
  walk('')
  return hash.digest('hex')
}

/** Unmounts what a fault mounted under the lab's hosts dir (a full volume over the storage), deepest first. */
export function takeMountsOff(hostsDir: string): void {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1]?.replace(/\\040/g, ' ') ?? '')
    .filter((point) => point.startsWith(`${hostsDir}/`))
    .sort((a, b) => b.length - a.length)
  for (const point of mounts) execFileSync('umount', [point])
}

/** The shared recordings directory as `lab up` makes it: empty but for the default location, owned by the hosts' user. */
export function resetSharedStorage(facts: LabFacts): void {
  const dir = join(facts.hostsDir, 'shared-recordings')
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(join(dir, 'main'), { recursive: true })
  const owner = lookupUser(facts.user)
  if (owner && process.getuid?.() === 0) {
    chownSync(dir, owner.uid, owner.gid)
    chownSync(join(dir, 'main'), owner.uid, owner.gid)
  }
}
