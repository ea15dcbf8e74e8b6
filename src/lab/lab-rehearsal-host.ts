/**
 * The lab's rehearsal host (`lab up --rehearsal-host`): one more sandbox host, `rehearsal-1`, set up
 * once as a site sets one up for `svcops rehearse recording`: the lab's release installed with real
 * dpkg, its configuration pointed at the scratch database `recordings_rehearsal` on the lab's
 * PostgreSQL (created for its first start and dropped again: each rehearsal makes its own marked
 * copy), its own copy of the recordings storage (never the production hosts' shared one), its
 * service stopped until a rehearsal starts it, and the stack's `recording.rehearsal` naming it. It
 * has no SSH entry: the lab's hosts share one sshd, and the loader refuses a rehearsal host that
 * production's hosts could alias; svcops reaches it in its tree on this machine.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { stopService, supervisorDriver } from '../drivers/services.ts'
import { transportFor } from '../drivers/transports.ts'
import { installHost, startHost } from './hosts-fleet.ts'
import type { LabHostInfo } from './hosts.ts'
import { LAB_RECORDING_PRODUCT, labPackagesDir, type LabRecordingPart, type PreparedLabRecording } from './hosts-lab.ts'
import type { LabManager } from './manager/lab-users.ts'
import { freePortNotIn } from './ports.ts'
import { buildRecordingPackages, recordingPackageName, recordingPackagePaths } from './recording/index.ts'
import type { LabEntry, LabSteps } from './state.ts'

/** The rehearsal host's name and the scratch database its configuration names. */
export const LAB_REHEARSAL_HOST = 'rehearsal-1'
export const LAB_REHEARSAL_DATABASE = 'recordings_rehearsal'

/** `lab up --dry-run`'s lines for it. */
export function labRehearsalHostPlan(): string[] {
  return [
    `create host ${LAB_REHEARSAL_HOST} beside the recording hosts (sandbox, its own storage copy), its configuration on database ${LAB_REHEARSAL_DATABASE}; name both in recording.rehearsal`,
  ]
}

/** Installs the rehearsal host's tree beside the recording hosts (nothing runs yet). */
export async function prepareLabRehearsalHost(lab: LabSteps, prepared: PreparedLabRecording): Promise<LabHostInfo> {
  const packages = await buildRecordingPackages(labPackagesDir(lab.paths.dir), LAB_RECORDING_PRODUCT)
  return installHost(LAB_REHEARSAL_HOST, {
    dir: prepared.hostsDir,
    count: 1,
    version: prepared.options.version,
    packages,
    product: LAB_RECORDING_PRODUCT,
    user: prepared.sshd.user,
  })
}

/** Copies the recordings' files from `shared` into the rehearsal host's own storage (the service reads a recording's file to list it). */
function copyRecordingsStorage(shared: string, rehearsalRoot: string): void {
  const own = join(rehearsalRoot, recordingPackagePaths(LAB_RECORDING_PRODUCT).storage)
  execFileSync('sh', ['-c', 'cp -a "$2"/. "$1"/', 'copy-storage', own, shared])
}

/**
 * Refreshes the lab's rehearsal host's copy of the recordings storage from the production hosts'
 * shared one, as a site's rsync does before a rehearsal: recordings made since `lab up` are listed
 * by the copy's database, and their files must be there. Production's storage is only read.
 */
export function refreshLabRehearsalStorage(env: Environment): string {
  const rec = env.recording
  const root = rec?.rehearsal?.host?.root
  const production = rec?.hosts[0]?.root
  if (!root || !production)
    throw new BadInputError(
      `${env.file}: recording.rehearsal.host.root: missing; expected the lab's rehearsal host (svcops lab up --rehearsal-host).`,
    )
  const shared = join(production, `/srv/${LAB_RECORDING_PRODUCT.dir}/recordings`)
  copyRecordingsStorage(shared, root)
  return `${shared} -> ${join(root, recordingPackagePaths(LAB_RECORDING_PRODUCT).storage)}`
}

/** Runs `sql` as the service's role on the lab's server (the role may create databases, as in lab up). */
async function asServiceRole(part: LabRecordingPart, password: string, sql: string): Promise<void> {
  const { host, port, user, name } = part.database
  const client = new pg.Client({ host, port, user, password, database: name })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

/**
 * Configures and starts the rehearsal host once (its first start needs its database), copies the
 * recordings storage to it, stops its service and drops the database again; returns the stack's
 * `recording.rehearsal` section.
 */
export async function finishLabRehearsalHost(
  lab: LabSteps,
  host: LabHostInfo,
  prepared: PreparedLabRecording,
  part: LabRecordingPart,
  manager: LabManager,
): Promise<Record<string, unknown>> {
  const entry: LabEntry = {
    kind: 'lab-host',
    name: `host ${host.name}`,
    info: { name: host.name, root: host.root, user: host.user, hostsDir: prepared.hostsDir },
    paths: [],
    stop: `SIGTERM to the supervisord of ${host.root} and its programs`,
  }
  lab.record(entry)
  const password = readFileSync(part.database.passwordFile, 'utf8').trim()
  const database = pg.escapeIdentifier(LAB_REHEARSAL_DATABASE)
  await asServiceRole(part, password, `CREATE DATABASE ${database}`)
  const started = await startHost(
    host,
    {
      dir: prepared.hostsDir,
      count: 1,
      version: part.version,
      packages: {},
      product: LAB_RECORDING_PRODUCT,
      user: prepared.sshd.user,
      database: { host: part.database.host, port: part.database.port, user: part.database.user, name: LAB_REHEARSAL_DATABASE, password },
      managerUrl: manager.url,
    },
    await freePortNotIn(new Set(part.hosts.map((h) => h.port))),
  )
  Object.assign(entry, { url: started.url, port: started.port, pid: started.supervisordPid })
  copyRecordingsStorage(join(prepared.hostsDir, 'shared-recordings'), host.root)
  const t = transportFor({ name: host.name, url: started.url, root: host.root, canary: false })
  try {
    await stopService(supervisorDriver, t, host, recordingPackageName(LAB_RECORDING_PRODUCT.prefix))
  } finally {
    await t.close()
  }
  await asServiceRole(part, password, `DROP DATABASE ${database} WITH (FORCE)`)
  return { host: { name: host.name, url: started.url, root: host.root }, database: LAB_REHEARSAL_DATABASE }
}
