/**
 * The steps before anything stops, and the last check: preflight (manager scopes, the database role
 * may change the schema, room for the backup, the version installed on every host); the target and
 * the previous package staged on every host, so downtime never includes a download and a rollback
 * never needs the network; the content snapshot; the backup, verified by a test restore — nothing
 * stops before it exists; what the service lists right before each batch stops; and the final
 * verification of the fleet.
 */
import { writeFileSync } from 'node:fs'
import { OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { formatBytes } from '../core/units.ts'
import { readInstalledVersion, showCommand, stagePackage } from '../drivers/packages.ts'
import { HostFailure } from '../runs/engine.ts'
import { readEnvironmentLock } from '../runs/lock.ts'
import { runConcurrently } from '../runs/rollout.ts'
import { defineStep } from '../runs/step.ts'
import type { HostHandle, RecordingContext } from './recording-context.ts'
import { contentKey, readRecordings, snapshotContent as takeSnapshot, type Recording } from './content-snapshot.ts'
import { readStackVersion } from '../drivers/pulumi.ts'
import { clusterOf, clusterPreflight, clusterVersions, describeClusterPreflight } from './kubernetes/recording-kubernetes-steps.ts'

type Ctx = RecordingContext

/** File in the run folder with what the service listed right before hosts stopped. */
export const CONTENT_BEFORE_STOP = 'content-before-stop.json'

/** Versions installed on every host of the environment. */
export async function readVersions(ctx: Ctx): Promise<Record<string, string>> {
  const k = clusterOf(ctx)
  if (k) return clusterVersions(k)
  const out: Record<string, string> = {}
  await runConcurrently(ctx.allHosts, ctx.allHosts.length, async (h) => {
    const v = await readInstalledVersion(ctx.pkg, h.transport, h.config, ctx.settings.package)
    if (v) out[h.name] = v
  })
  return out
}

async function lockState(ctx: Ctx): Promise<string> {
  try {
    const holder = await readEnvironmentLock(ctx.rec.database, ctx.env.name)
    if (!holder) return 'free now'
    return `held now by run ${holder.runId} (${holder.holder}, pid ${holder.pid}) since ${holder.since}${holder.alive ? '' : ' — that holder died'}`
  } catch (error) {
    return `could not be read: ${errorMessage(error)}`
  }
}

export const preflight = defineStep<Ctx>({
  id: 'preflight',
  title: 'check scopes, database privileges, room for the backup, installed versions',
  once: true,
  async describe(ctx) {
    const db = ctx.rec.database
    const first = ctx.hosts[0] ?? ctx.allHosts[0]
    const k = clusterOf(ctx)
    if (k)
      return [
        `the run lock of environment '${ctx.env.name}' in ${db.host}:${db.port}/${db.name} (advisory lock + row in svcops.run_lock), ${await lockState(ctx)}`,
        ...describeClusterPreflight(k),
        `log in to the manager and check the scopes ${ctx.rec.scopes.read} ${ctx.rec.scopes.write}`,
        'check the database role may change the schema (CREATE on database and schema public, ownership of every table a migration alters)',
        'check the backup store has room for the database plus 20%',
      ]
    return [
      `the run lock of environment '${ctx.env.name}' in ${db.host}:${db.port}/${db.name} (advisory lock + row in svcops.run_lock), ` +
        `${await lockState(ctx)}; the host lock ${ctx.settings.hostLockPath} on ${ctx.allHosts.map((h) => h.name).join(', ')}`,
      `log in to the manager and check the scopes ${ctx.rec.scopes.read} ${ctx.rec.scopes.write}`,
      'check the database role may change the schema (CREATE on database and schema public, ownership of every table a migration alters)',
      'check the backup store has room for the database plus 20%',
      `read the installed version on every host${first ? `: ${showCommand(ctx.pkg.queryVersionCommand(first.config, ctx.settings.package))}` : ''}`,
    ]
  },
  async preview(ctx) {
    const versions = await readVersions(ctx).catch((error: unknown) => {
      // The dry run goes on without the API (a workstation without the cluster's credentials): the version stays unknown.
      events.warn(`The installed version could not be read: ${errorMessage(error)}`)
      return {}
    })
    ctx.journal.update({ previousVersions: versions })
    return { data: { versions } }
  },
  async act(ctx) {
    const k = clusterOf(ctx)
    const cluster = k ? await clusterPreflight(k) : {}
    const granted = await ctx.deps.content.checkAuth()
    events.emit({ kind: 'check', check: 'manager auth with the needed scopes', ok: true, detail: granted.join(' ') })
    const may = await ctx.deps.database.mayChangeSchema()
    events.emit({ kind: 'check', check: 'database reachable and the role may change the schema', ok: may.ok, detail: may.detail })
    if (!may.ok) {
      throw new OperationError(
        `The database role cannot change the schema, so migrations would fail: ${may.detail}.`,
        'Grant the role CREATE on the database and its schema and make it the owner of the tables (ALTER TABLE ... OWNER TO role), then run again.',
      )
    }
    const size = await ctx.deps.database.sizeBytes()
    const free = await ctx.deps.backup.freeBytes()
    const roomy = free > size * 1.2
    events.emit({
      kind: 'check',
      check: 'room for the backup',
      ok: roomy,
      detail: `${formatBytes(free)} free, database ${formatBytes(size)}`,
    })
    if (!roomy) {
      throw new OperationError(
        `The backup store has ${formatBytes(free)} free, less than the database's ${formatBytes(size)} plus 20%.`,
        'Free space in the backup store (svcops backup prune) and run again.',
      )
    }
    const versions = await readVersions(ctx)
    for (const h of ctx.hosts) {
      if (!versions[h.name]) {
        throw new OperationError(
          `${ctx.settings.package} is not installed on ${h.name}; an upgrade needs a current version to roll back to.`,
        )
      }
    }
    ctx.journal.update({ previousVersions: versions })
    return { data: { versions, granted, ...cluster } }
  },
})

/** The versions a host needs in its package cache: the target and the one a rollback returns to. */
function versionsToStage(ctx: Ctx, h: HostHandle): string[] {
  const previous = ctx.journal.run.previousVersions[h.name]
  return [...new Set([ctx.journal.run.targetVersion, ...(previous ? [previous] : [])])]
}

export const stagePackages = defineStep<Ctx, [HostHandle]>({
  id: 'stage',
  title: 'copy the target and the previous package into the host’s package cache',
  once: true,
  describe: (ctx, h) =>
    clusterOf(ctx)
      ? ['nothing to stage: the kubelet pulls the image when the new pod starts (imagePullPolicy IfNotPresent)']
      : [
          ...new Set(
            versionsToStage(ctx, h).flatMap((v) =>
              ctx.pkg.stageCommands(h.config, ctx.settings.package, v, ctx.packageFile(v)).map(showCommand),
            ),
          ),
        ],
  async act(ctx, h) {
    if (clusterOf(ctx)) return { skipped: 'the kubelet pulls the image when the new pod starts' }
    const changed: string[] = []
    for (const version of versionsToStage(ctx, h)) {
      changed.push(...(await stagePackage(ctx.pkg, h.transport, h.config, ctx.settings.package, version, ctx.packageFile(version))))
    }
    return changed.length ? { changed } : { skipped: `${versionsToStage(ctx, h).join(' and ')} already in the package cache` }
  },
})

export const snapshotContent = defineStep<Ctx>({
  id: 'snapshot',
  title: 'list every recording and count the rows of every table',
  once: true,
  describe: (ctx) => [
    `GET ${ctx.hosts[0]?.url ?? '?'}/api/v1/content?limit=${ctx.settings.contentLimit} (every recording's id)`,
    'count the rows of every table of the database',
  ],
  async act(ctx) {
    const run = ctx.journal.run
    // A retry (`resume ID --retry`) keeps the snapshot of the backup it reuses.
    if (run.backupId && run.snapshotIds)
      return { skipped: `the snapshot of backup ${run.backupId} (${run.snapshotIds.length} recordings) is reused` }
    const source = await firstHealthy(ctx, [...ctx.hosts, ...ctx.allHosts])
    const rowCounts = await ctx.deps.database.rowCounts()
    const snapshot = await takeSnapshot(ctx.deps.content, source.url, ctx.settings.contentLimit, rowCounts)
    ctx.journal.update({ snapshotIds: snapshot.keys })
    return { data: { count: snapshot.count, rowCounts, takenAt: snapshot.takenAt } }
  },
})

/** The first host that answers `GET /` (the snapshot needs one; a host being repaired may be down). */
async function firstHealthy(ctx: Ctx, hosts: HostHandle[]): Promise<HostHandle> {
  for (const h of hosts) {
    try {
      await ctx.deps.content.health(h.url)
      return h
    } catch (error) {
      events.emit({ kind: 'check', check: 'host answers for the content snapshot', ok: false, host: h.name, detail: errorMessage(error) })
    }
  }
  throw new OperationError(
    `No host of ${ctx.env.name} answers GET /, so the content cannot be listed before the upgrade.`,
    `Check the service: svcops verify recording --env ${ctx.env.name}`,
  )
}

export const backupAndVerify = defineStep<Ctx>({
  id: 'backup',
  title: 'back up the database and verify the backup — nothing stops before it exists',
  once: true,
  describe: () => [
    'pg_dump --format=custom of the database, encrypted (OpenPGP) into the backup store, manifest with schema fingerprint and row counts',
    'verify the backup: checksum, decrypt, test restore into a scratch database, compare fingerprint and row counts',
  ],
  async act(ctx) {
    const fingerprintBefore = await ctx.deps.database.fingerprint()
    const reused = ctx.journal.run.backupId
    if (reused) {
      // A retry: the backup of the retried run still holds this database only if the schema is the same.
      if (fingerprintBefore !== ctx.journal.run.fingerprintBefore)
        throw new OperationError(
          `The schema changed since backup ${reused} was taken (${ctx.journal.run.fingerprintBefore?.slice(0, 12) ?? '?'} -> ${fingerprintBefore.slice(0, 12)}); it cannot be reused.`,
          `Start a new upgrade: svcops upgrade recording --env ${ctx.env.name} --to ${ctx.journal.run.targetVersion}`,
        )
      return {
        skipped: `verified backup ${reused} of the retried run is reused (same schema)`,
        data: { backupId: reused, fingerprint: fingerprintBefore },
      }
    }
    const backup = await ctx.deps.backup.createVerified(ctx.journal.run.previousVersions)
    if (backup.fingerprint !== fingerprintBefore) {
      throw new OperationError(
        `The schema changed while the backup was taken (${fingerprintBefore.slice(0, 12)} -> ${backup.fingerprint.slice(0, 12)}); another process is migrating the database.`,
      )
    }
    ctx.journal.update({ backupId: backup.id, fingerprintBefore })
    return { changed: [`created and verified backup ${backup.id}`], data: { backupId: backup.id, fingerprint: fingerprintBefore } }
  },
})

export const recordContentBeforeStop = defineStep<Ctx, [HostHandle[]]>({
  id: 'content-before-stop',
  title: 'record what the service lists right before these hosts stop',
  describe: (ctx) => [
    `GET /api/v1/content?limit=${ctx.settings.contentLimit} from the first host that answers, kept in ${CONTENT_BEFORE_STOP}`,
  ],
  async act(ctx) {
    // If every host later goes down, this is still a record of what was written after the backup.
    const list = await listFromAny(ctx, ctx.allHosts)
    if (!list) return { skipped: 'no host answered' }
    const path = ctx.journal.file(CONTENT_BEFORE_STOP)
    const merged = new Map(readRecordings(path).map((r) => [contentKey(r), r]))
    for (const r of list) merged.set(contentKey(r), r)
    writeFileSync(path, JSON.stringify([...merged.values()]) + '\n', { mode: 0o600 })
    return { data: { listed: list.length } }
  },
})

/** The content list of the first host that answers, or undefined when none does. */
export async function listFromAny(ctx: Ctx, hosts: HostHandle[]): Promise<Recording[] | undefined> {
  for (const h of hosts) {
    try {
      await ctx.deps.content.health(h.url)
      return await ctx.deps.content.list(h.url, ctx.settings.contentLimit)
    } catch (error) {
      events.emit({ kind: 'check', check: 'content list for the rollback', ok: false, host: h.name, detail: errorMessage(error) })
    }
  }
  return undefined
}

export const verifyFleet = defineStep<Ctx, [HostFailure[]]>({
  id: 'verify',
  title: 'record the schema fingerprint; check every host runs the target version',
  describe: (ctx) => [
    'record the schema fingerprint after the upgrade; read the installed version on every host',
    ...(ctx.cluster ? [`the stack file's ${ctx.cluster.versionKey} holds the target version (the stack file is the record)`] : []),
  ],
  async act(ctx, tolerated) {
    const run = ctx.journal.run
    const fingerprintAfter = await ctx.deps.database.fingerprint()
    const versions = await readVersions(ctx)
    const wrong = ctx.hosts.filter((h) => versions[h.name] !== run.targetVersion && !tolerated.some((f) => f.host === h.name))
    if (wrong.length) {
      const first = wrong[0]?.name ?? '?'
      throw new HostFailure(
        first,
        'verify',
        `${wrong.map((h) => `${h.name} runs ${versions[h.name] ?? 'nothing'}`).join(', ')}; expected ${run.targetVersion}.`,
      )
    }
    const recorded = ctx.cluster ? readStackVersion(ctx.cluster.stack().stackFile, ctx.cluster.versionKey) : undefined
    if (ctx.cluster && recorded !== run.targetVersion)
      throw new HostFailure(
        ctx.cluster.target.deployment,
        'verify',
        `The stack file ${ctx.cluster.stack().stackFile} holds ${ctx.cluster.versionKey} = ${recorded ?? 'nothing'}, not ${run.targetVersion}.`,
      )
    ctx.journal.update({ fingerprintAfter })
    return {
      data: {
        fingerprintAfter,
        versions,
        schemaChanged: fingerprintAfter !== run.fingerprintBefore,
        ...(ctx.cluster
          ? {
              stackFile: {
                file: ctx.cluster.stack().stackFile,
                key: ctx.cluster.versionKey,
                version: recorded ?? null,
                deployment: versions[ctx.cluster.target.deployment] ?? null,
              },
            }
          : {}),
      },
    }
  },
})
