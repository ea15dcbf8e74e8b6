/**
 * The backup playbook's steps (playbooks/backup.ts), declared once for the run and the dry run:
 * create an encrypted backup, verify it with a test restore, prune the store by retention. A run of
 * them is journaled like an upgrade (`.svcops/runs/<id>/`, a report), so a scheduler's nightly job
 * leaves a record a person can read and `svcops resume ID` can finish.
 */
import { requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { formatBytes } from '../core/units.ts'
import type { Journal } from '../runs/journal.ts'
import type { RunParams } from '../runs/run-record.ts'
import type { SystemDescription } from '../runs/system-description.ts'
import type { Opened } from '../runs/playbook.ts'
import { defineStep } from '../runs/step.ts'
import {
  assertVerified,
  createBackup,
  openBackupContext,
  planBackup,
  pruneBackups,
  readIdentity,
  verifyBackup,
  type BackupContext,
} from './index.ts'
import { readHeldBackups } from './held-by-runs.ts'

/** What a backup run records in its record's params: the backup it made, and the schema it was taken on. */
export interface BackupParams extends RunParams {
  backupId?: string
  fingerprintBefore?: string
}

/** What the backup steps share. */
export interface BackupRunContext {
  /** The environment: retention reads the backups its runs hold from its run stores. */
  env: Environment
  backup: BackupContext
  journal: Journal<BackupParams>
  retention: { keepLast?: number; keepDays?: number }
  /** The system whose database is backed up: its runs hold backups (retention keeps those). */
  system: SystemDescription
}

/** Opens the store and the database target for a backup run. */
export function openBackupRun(env: Environment, retention: BackupRunContext['retention'], system: SystemDescription) {
  return async (journal: Journal<BackupParams>): Promise<Opened<BackupRunContext>> => {
    requireSection(env, 'recording')
    const backup = await openBackupContext(env)
    return { ctx: { env, backup, journal, retention, system }, close: () => backup.store.close() }
  }
}

/** The id of the backup this run made (from the create step's record). */
function backupIdOf(ctx: BackupRunContext): string {
  const id = ctx.journal.run.params.backupId
  if (!id) throw new BadInputError(`Run ${ctx.journal.run.id} has made no backup yet.`)
  return id
}

export const createEncryptedBackup = defineStep<BackupRunContext>({
  id: 'create',
  title: 'dump the database, encrypt it on the way into the store, write the manifest last',
  once: true,
  describe: (ctx) => planBackup({ ...ctx.backup.createOptions, storeLocation: ctx.backup.store.location }),
  async act(ctx) {
    const m = await createBackup({ ...ctx.backup.createOptions, signer: await ctx.backup.signingKey() })
    ctx.journal.updateParams({ backupId: m.id, fingerprintBefore: m.fingerprint })
    return { changed: [`created backup ${m.id} (${formatBytes(m.sizes.encrypted)})`], data: { backupId: m.id, bytes: m.sizes.encrypted } }
  },
})

export const verifyWithTestRestore = defineStep<BackupRunContext>({
  id: 'verify',
  title: 'verify the backup: checksum, decrypt, test restore, fingerprint and row counts',
  once: true,
  describe: (ctx) => [
    `check the manifest's signature against backup.signers, then the SHA-256 of the encrypted file in ${ctx.backup.store.location} (one read, into a private copy)`,
    `decrypt with backup.identity and restore into a scratch database on ${ctx.backup.database.host}:${ctx.backup.database.port}; compare fingerprint and row counts; drop it`,
  ],
  async act(ctx) {
    const id = backupIdOf(ctx)
    const report = await verifyBackup(ctx.backup.store, id, {
      identity: await readIdentity(ctx.backup.backup),
      signers: ctx.backup.signers,
      environment: ctx.backup.environment,
      restoreTest: { server: ctx.backup.database },
    })
    assertVerified(report)
    return { data: { backupId: id, restoreTest: true, checks: report.checks.length } }
  },
})

export const pruneByRetention = defineStep<BackupRunContext>({
  id: 'prune',
  title: 'remove backups the retention no longer keeps — never the newest verified one, nor one a run can roll back to',
  describe: async (ctx) => {
    if (ctx.retention.keepLast === undefined && ctx.retention.keepDays === undefined)
      return ['no retention given (--keep-last, --keep-days): nothing is removed']
    const { held, unknown } = await readHeldBackups(ctx.env, ctx.system)
    const plan = await pruneBackups(ctx.backup.store, {
      ...ctx.retention,
      environment: ctx.backup.environment,
      held,
      ...(unknown !== undefined ? { heldUnknown: unknown } : {}),
      dryRun: true,
    })
    if (unknown !== undefined) return [`nothing is removed: the runs that may hold backups could not be read (${unknown})`]
    return plan.remove.length ? plan.remove.map((r) => `remove ${r.id} (completed ${r.completedAt})`) : ['nothing to remove']
  },
  async act(ctx) {
    if (ctx.retention.keepLast === undefined && ctx.retention.keepDays === undefined) return { skipped: 'no retention given' }
    // Every run of the environment, wherever it was started: a run paused on another machine keeps its backup.
    const { held, unknown } = await readHeldBackups(ctx.env, ctx.system)
    const plan = await pruneBackups(ctx.backup.store, {
      ...ctx.retention,
      environment: ctx.backup.environment,
      held,
      ...(unknown !== undefined ? { heldUnknown: unknown } : {}),
    })
    if (plan.remove.length) events.info(`Removed ${plan.remove.length} backup(s): ${plan.remove.map((r) => r.id).join(', ')}`)
    return {
      changed: plan.remove.map((r) => `removed backup ${r.id}`),
      // Why nothing was removed, in the journal and the report too (the warning says it on the console).
      data: { kept: plan.keep.length, removed: plan.remove.length, ...(unknown !== undefined ? { heldUnknown: unknown } : {}) },
    }
  },
})
