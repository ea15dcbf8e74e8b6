/**
 * The steps of the backup commands that change what runs depend on, declared once for the run and
 * its dry run (playbooks/backup-changes.ts): `backup restore` replaces the database with a checked
 * backup, `backup delete` removes one backup from the store, `backup prune` removes those the
 * retention no longer keeps. Each runs as a journaled, locked run
 * of the system whose database is backed up; what it did is its journal entry's data.
 */
import type { Environment } from '../config/schema.ts'
import type { Journal } from '../runs/journal.ts'
import type { Opened } from '../runs/playbook.ts'
import type { RunParams } from '../runs/run-record.ts'
import { defineStep } from '../runs/step.ts'
import type { SystemDescription } from '../runs/system-description.ts'
import { readHeldBackups } from './held-by-runs.ts'
import {
  deleteBackup,
  openBackupContext,
  planDeleteBackup,
  planRestore,
  pruneBackups,
  readIdentity,
  readManifest,
  restoreBackup,
} from './index.ts'
import type { BackupContext, RestoreReport } from './index.ts'
import type { Manifest } from './manifest.ts'

/** What `backup restore` is asked: the backup, the checks it must pass. */
export interface RestoreAsked {
  id: string
  allowUnsigned: boolean
  fromEnvironment?: string
  expectFingerprint?: string
}

/** What `backup delete` is asked: the backup, and whether one a run holds may go (`--force`). */
export interface DeleteAsked {
  id: string
  force: boolean
}

/** What `backup prune` is asked: the retention. */
export interface PruneAsked {
  keepLast?: number
  keepDays?: number
}

/** What the steps of a backup change share. */
export interface BackupChangeContext<A> {
  env: Environment
  backup: BackupContext
  journal: Journal<RunParams>
  /** The system whose runs hold backups (retention and delete keep those). */
  system: SystemDescription
  asked: A
}

/** Opens the store and the database target for a backup change asked as `asked`. */
export function openBackupChange<A>(env: Environment, system: SystemDescription, asked: A) {
  return async (journal: Journal<RunParams>): Promise<Opened<BackupChangeContext<A>>> => {
    const backup = await openBackupContext(env)
    return { ctx: { env, backup, journal, system, asked }, close: () => backup.store.close() }
  }
}

/** The trust a restore reads the backup's manifest with (signers, the environment it must name). */
function trustOf(ctx: BackupChangeContext<RestoreAsked>) {
  return {
    signers: ctx.backup.signers,
    allowUnsigned: ctx.asked.allowUnsigned,
    environment: ctx.backup.environment,
    ...(ctx.asked.fromEnvironment !== undefined ? { fromEnvironment: ctx.asked.fromEnvironment } : {}),
  }
}

/** The manifest of the backup a restore is asked for, checked (signature, environment). */
export async function restoreManifest(ctx: BackupChangeContext<RestoreAsked>): Promise<Manifest> {
  return (await readManifest(ctx.backup.store, ctx.asked.id, trustOf(ctx))).manifest
}

export const restoreDatabase = defineStep<BackupChangeContext<RestoreAsked>>({
  id: 'restore',
  title: 'check the backup (signature, environment, checksum, key), then replace the database with it in one transaction',
  describe: async (ctx) => planRestore(await restoreManifest(ctx), ctx.backup.database),
  async act(ctx) {
    const { id, expectFingerprint } = ctx.asked
    const d = ctx.backup.database
    const report: RestoreReport = await restoreBackup(ctx.backup.store, id, d, {
      ...trustOf(ctx),
      identity: await readIdentity(ctx.backup.backup),
      confirmed: true,
      ...(expectFingerprint ? { expectFingerprint } : {}),
    })
    const rows = Object.values(report.rowCounts).reduce((a, b) => a + b, 0)
    return {
      changed: [`restored backup ${id} into ${d.name} on ${d.host}:${d.port}: ${rows} rows`],
      // Not `backupId`: that names a backup a run made or holds (metrics, retention); this one was restored.
      data: { restored: id, fingerprint: report.fingerprint, rowCounts: report.rowCounts, durationMs: report.durationMs },
    }
  },
})

/** Which backups runs hold, as retention reads them, in the shape `deleteBackup` takes. */
async function holdingOf(ctx: BackupChangeContext<DeleteAsked>) {
  const { held, unknown } = await readHeldBackups(ctx.env, ctx.system)
  return { environment: ctx.env.name, held, ...(unknown !== undefined ? { heldUnknown: unknown } : {}), force: ctx.asked.force }
}

/** What a delete would remove (its files) and which run holds the backup, with the same checks; removes nothing. */
export async function planDelete(ctx: BackupChangeContext<DeleteAsked>) {
  return planDeleteBackup(ctx.backup.store, ctx.asked.id, await holdingOf(ctx))
}

export const deleteStoredBackup = defineStep<BackupChangeContext<DeleteAsked>>({
  id: 'delete',
  title: 'remove the backup from the store — one a run can still roll back to only with --force',
  async describe(ctx) {
    const plan = await planDelete(ctx)
    return [
      ...plan.files.map((f) => `remove ${f} from ${ctx.backup.store.location}`),
      ...(plan.heldBy ? [`run ${plan.heldBy} can then no longer be rolled back with a restore (--force)`] : []),
    ]
  },
  async act(ctx) {
    const done = await deleteBackup(ctx.backup.store, ctx.asked.id, await holdingOf(ctx))
    return {
      changed: [`deleted backup ${done.id} from ${ctx.backup.store.location}`],
      data: { deleted: done.id, heldBy: done.heldBy ?? null },
    }
  },
})

/** The retention's plan over the store: what it keeps (and why) and removes, or only plans with `dryRun`. */
export async function pruneStore(ctx: BackupChangeContext<PruneAsked>, dryRun: boolean) {
  // Every run of the environment, wherever it was started; unreadable, nothing is removed.
  const { held, unknown } = await readHeldBackups(ctx.env, ctx.system)
  return pruneBackups(ctx.backup.store, {
    environment: ctx.env.name,
    held,
    ...(unknown !== undefined ? { heldUnknown: unknown } : {}),
    ...(ctx.asked.keepLast !== undefined ? { keepLast: ctx.asked.keepLast } : {}),
    ...(ctx.asked.keepDays !== undefined ? { keepDays: ctx.asked.keepDays } : {}),
    dryRun,
  })
}

export const pruneStoredBackups = defineStep<BackupChangeContext<PruneAsked>>({
  id: 'prune',
  title: 'remove backups the retention no longer keeps — never the newest verified one, nor one a run can roll back to',
  async describe(ctx) {
    const plan = await pruneStore(ctx, true)
    if (plan.heldUnknown !== undefined)
      return [`nothing is removed: the runs that may hold backups could not be read (${plan.heldUnknown})`]
    return plan.remove.length ? plan.remove.map((r) => `remove ${r.id} (completed ${r.completedAt})`) : ['nothing to remove']
  },
  async act(ctx) {
    const plan = await pruneStore(ctx, false)
    return {
      changed: plan.remove.map((r) => `removed backup ${r.id}`),
      // The whole plan: what was kept and why is the record a person reads afterwards.
      data: { keep: plan.keep, remove: plan.remove, ...(plan.heldUnknown !== undefined ? { heldUnknown: plan.heldUnknown } : {}) },
    }
  },
})
