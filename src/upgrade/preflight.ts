/**
 * Everything an upgrade checks and prepares before the first service stops: manager auth with the
 * needed scopes; the database reachable and the role allowed to change the schema; room for the
 * backup; the target (and the previous) package on every host's package cache — so downtime never
 * includes a download and a rollback never needs the network; the current version per host; a
 * snapshot of the content; then a backup that is verified by a test restore. Nothing stops before
 * that backup exists.
 */
import { BadInputError, OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { runConcurrently } from '../runs/rollout.ts'
import { acquireHostLock } from '../runs/lock.ts'
import { readInstalledVersion, stagePackage } from '../drivers/packages.ts'
import { snapshotContent } from './snapshot.ts'
import { formatBytes } from '../core/units.ts'
import { runStep, type HostHandle, type RunContext } from '../runs/steps.ts'

/** Takes the host lock of every host of the run (the dead run we take over may hold them). */
export async function lockHosts(ctx: RunContext, takeOver: string[], breakLock: boolean): Promise<void> {
  const run = ctx.journal.run
  const holder = { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt }
  const results = await runConcurrently(ctx.allHosts, ctx.allHosts.length, (h) =>
    acquireHostLock(h.transport, hostLockFile(ctx, h), holder, { takeOver, breakLock }),
  )
  const failed = results.find((r) => r.status === 'rejected')
  if (failed && failed.status === 'rejected') throw failed.reason
}

/** Path of the host lock file on `h`. */
export function hostLockFile(ctx: RunContext, h: HostHandle): string {
  return h.config.root ? `${h.config.root}${ctx.settings.hostLockPath}` : ctx.settings.hostLockPath
}

/** Versions installed on every host of the environment. */
export async function readVersions(ctx: RunContext): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  await runConcurrently(ctx.allHosts, ctx.allHosts.length, async (h) => {
    const v = await readInstalledVersion(ctx.pkg, h.transport, h.config, ctx.settings.package)
    if (v) out[h.name] = v
  })
  return out
}

/** The preflight steps. Resumable: each records its result and is not repeated on resume. */
export async function preflight(ctx: RunContext, target: string): Promise<void> {
  const run = ctx.journal.run
  await runStep(
    ctx,
    'preflight',
    undefined,
    async () => {
      const granted = await ctx.deps.content.checkAuth()
      events.emit({ kind: 'check', check: 'manager auth with the needed scopes', ok: true, detail: granted.join(' ') })
      const may = await ctx.deps.database.mayChangeSchema()
      events.emit({ kind: 'check', check: 'database reachable and the role may change the schema', ok: may.ok, detail: may.detail })
      if (!may.ok)
        throw new OperationError(
          `The database role cannot change the schema, so migrations would fail: ${may.detail}.`,
          'Grant the role CREATE on the database and its schema, or run as its owner.',
        )
      const size = await ctx.deps.database.sizeBytes()
      const free = await ctx.deps.backup.freeBytes()
      const ok = free > size * 1.2
      events.emit({ kind: 'check', check: 'room for the backup', ok, detail: `${formatBytes(free)} free, database ${formatBytes(size)}` })
      if (!ok)
        throw new OperationError(
          `The backup store has ${formatBytes(free)} free, less than the database's ${formatBytes(size)} plus 20%.`,
          'Free space in the backup store (svcops backup prune) and run again.',
        )
      const versions = await readVersions(ctx)
      for (const h of ctx.hosts) {
        if (!versions[h.name])
          throw new OperationError(
            `${ctx.settings.package} is not installed on ${h.name}; an upgrade needs a current version to roll back to.`,
          )
      }
      ctx.journal.update({ previousVersions: versions })
      return { data: { versions, granted } }
    },
    { once: true },
  )
  const previous = ctx.journal.run.previousVersions
  await runConcurrently(ctx.hosts, ctx.hosts.length, async (h) => {
    await runStep(
      ctx,
      'stage',
      h.name,
      async () => {
        const changed: string[] = []
        for (const version of new Set([target, previous[h.name] as string])) {
          changed.push(...(await stagePackage(ctx.pkg, h.transport, h.config, ctx.settings.package, version, ctx.packageFile(version))))
        }
        return changed.length ? { changed } : { skipped: `${target} and ${previous[h.name] ?? '?'} already in the package cache` }
      },
      { once: true },
    )
  }).then((results) => {
    const failed = results.find((r) => r.status === 'rejected')
    if (failed && failed.status === 'rejected') throw failed.reason
  })
  await runStep(
    ctx,
    'snapshot',
    undefined,
    async () => {
      const source = await firstHealthy(ctx, [...ctx.hosts, ...ctx.allHosts])
      const rowCounts = await ctx.deps.database.rowCounts()
      const snapshot = await snapshotContent(ctx.deps.content, source.url, ctx.settings.contentLimit, rowCounts)
      ctx.journal.update({ snapshotIds: snapshot.keys })
      return { data: { count: snapshot.count, rowCounts, takenAt: snapshot.takenAt } }
    },
    { once: true },
  )
  if (!run.snapshotIds && !ctx.journal.run.snapshotIds) throw new OperationError('The content snapshot was not recorded.')
}

/** The first host that answers `GET /` (the snapshot needs one; a host being repaired may be down). */
async function firstHealthy(ctx: RunContext, hosts: HostHandle[]): Promise<HostHandle> {
  for (const h of hosts) {
    try {
      await ctx.deps.content.health(h.url)
      return h
    } catch (error) {
      events.emit({
        kind: 'check',
        check: 'host answers for the content snapshot',
        ok: false,
        host: h.name,
        detail: (error as Error).message,
      })
    }
  }
  throw new OperationError(
    `No host of ${ctx.env.name} answers GET /, so the content cannot be listed before the upgrade.`,
    `Check the service: svcops verify recording --env ${ctx.env.name}`,
  )
}

/** Backup and its verification: the gate before anything stops. */
export async function backupStep(ctx: RunContext): Promise<void> {
  await runStep(
    ctx,
    'backup',
    undefined,
    async () => {
      const fingerprintBefore = await ctx.deps.database.fingerprint()
      const backup = await ctx.deps.backup.createVerified(ctx.journal.run.previousVersions)
      if (backup.fingerprint !== fingerprintBefore)
        throw new OperationError(
          `The schema changed while the backup was taken (${fingerprintBefore.slice(0, 12)} -> ${backup.fingerprint.slice(0, 12)}); another process is migrating the database.`,
        )
      ctx.journal.update({ backupId: backup.id, fingerprintBefore })
      return { changed: [`created and verified backup ${backup.id}`], data: { backupId: backup.id, fingerprint: fingerprintBefore } }
    },
    { once: true },
  )
}

/** Host names given with --hosts, checked against the environment. */
export function selectHosts<T extends { name: string }>(all: T[], names: string[] | undefined, file: string): T[] {
  if (!names?.length) return all
  const unknown = names.filter((n) => !all.some((h) => h.name === n))
  if (unknown.length)
    throw new BadInputError(
      `--hosts: ${unknown.map((n) => `'${n}'`).join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not a host of ${file}; expected one of ${all.map((h) => h.name).join(', ')}.`,
    )
  return all.filter((h) => names.includes(h.name))
}
