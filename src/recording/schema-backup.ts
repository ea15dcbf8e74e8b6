/**
 * `rollback recording --to V` across a schema change. Schema changes are not backward-compatible,
 * so V can only run on V's schema: the newest verified backup taken while every host ran V (its
 * manifest's service versions) is what a downgrade restores. Its schema fingerprint against the
 * database's tells whether the schema changed since; without such a backup the way back is refused,
 * naming what is missing.
 */
import { writeFileSync } from 'node:fs'
import { z } from 'zod'
import { listBackups, openBackupContext, type BackupEntry } from '../backup/index.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError, OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { defineStep, type StepResult } from '../runs/step.ts'
import type { RecordingContext } from './recording-context.ts'
import { listFromAny } from './content-steps.ts'
import { EXPORTED } from './rollback-steps.ts'
import { isTestRecording } from './content-snapshot.ts'
import { backupIdSchema, exportDataSchema } from './recording-step-data.ts'

type Ctx = RecordingContext

/** What going back to `version` needs: nothing but the package (same schema), or a restore of `backup`. */
export type SchemaPath = { restore: false; reason: string } | { restore: true; backup: BackupEntry; reason: string }

/** Verified backups taken while every host ran `version`, newest first. */
export async function backupsTakenOn(env: Environment, version: string): Promise<BackupEntry[]> {
  const ctx = await openBackupContext(env)
  try {
    const all = await listBackups(ctx.store, { environment: ctx.environment })
    return all.filter((b) => {
      const versions = Object.values(b.manifest.serviceVersions)
      return versions.length > 0 && versions.every((v) => v === version) && b.verified?.ok === true
    })
  } finally {
    await ctx.store.close()
  }
}

/** Decides how to reach `version` from the schema now (`fingerprint`), or refuses. */
export async function schemaPathTo(env: Environment, version: string, fingerprint: string): Promise<SchemaPath> {
  const taken = await backupsTakenOn(env, version)
  const newest = taken[0]
  if (!newest)
    throw new BadInputError(
      `There is no verified backup taken on ${version}, so svcops cannot tell whether ${version} can run on the schema now (${fingerprint.slice(0, 12)}), nor restore its schema.`,
      `Restore a backup taken on ${version} by hand (svcops backup list --env ${env.name}), or try the package alone: svcops rollback recording --env ${env.name} --to ${version} --package-only (its start refuses a newer schema, and the run is then rolled back).`,
    )
  if (taken.some((b) => b.manifest.fingerprint === fingerprint))
    return { restore: false, reason: `the schema now is the one ${version} ran on (backup ${newest.id})` }
  return {
    restore: true,
    backup: newest,
    reason: `the schema changed since ${version} (${newest.manifest.fingerprint.slice(0, 12)} -> ${fingerprint.slice(0, 12)}): restore backup ${newest.id}, the newest verified one taken on ${version}`,
  }
}

/** What the choice journals (a resume reuses it: src/runs/step.ts's `stepData`): a backup of the store, or no restore. */
const choiceDataSchema = z.object({
  restore: z.literal(false).optional(),
  reason: z.string().max(2000),
  backupId: backupIdSchema.optional(),
  fingerprint: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'expected 64 lower-case hex digits')
    .optional(),
})

/** The backup chosen by `chooseSchemaBackup`'s result. */
export function chosenBackup(result: StepResult): { id: string; fingerprint: string } {
  const id = result.data?.backupId
  const fingerprint = result.data?.fingerprint
  if (typeof id !== 'string' || typeof fingerprint !== 'string')
    throw new OperationError('No backup taken on the target version was chosen.')
  return { id, fingerprint }
}

export const chooseSchemaBackup = defineStep<Ctx, [], z.infer<typeof choiceDataSchema>>({
  id: 'choose-backup',
  title: 'choose the newest verified backup taken on the target version (its schema)',
  once: true,
  data: choiceDataSchema,
  describe: (ctx) => [`list the backups whose service versions are all ${ctx.journal.run.targetVersion}, verified; take the newest`],
  preview: (ctx) => choose(ctx),
  act: (ctx) => choose(ctx),
})

async function choose(ctx: Ctx): Promise<StepResult> {
  const version = ctx.journal.run.targetVersion
  const path = await schemaPathTo(ctx.env, version, await ctx.deps.database.fingerprint())
  if (!path.restore) return { data: { restore: false, reason: path.reason } }
  events.info(`Rollback to ${version}: ${path.reason}.`)
  return { data: { backupId: path.backup.id, fingerprint: path.backup.manifest.fingerprint, reason: path.reason } }
}

export const exportAllRecordings = defineStep<Ctx, [], z.infer<typeof exportDataSchema>>({
  id: 'export',
  title: 'export every recording (the restore of an older backup would lose the later ones)',
  once: true,
  data: exportDataSchema,
  describe: (ctx) => [`list every recording and keep it in ${ctx.journal.file(EXPORTED)}, to re-create those the restore loses`],
  async act(ctx) {
    const list = await listFromAny(ctx, ctx.allTargets)
    if (!list) throw new OperationError('No host answers the content list, so the recordings cannot be exported before the restore.')
    const kept = list.filter((r) => !isTestRecording(r))
    writeFileSync(ctx.journal.file(EXPORTED), JSON.stringify(kept, null, 2) + '\n', { mode: 0o600 })
    // Ids change when recordings are re-created: they are checked by content (verify-recreated), not by id.
    ctx.journal.updateParams({ snapshotIds: [] })
    return { changed: [`exported ${kept.length} recording(s) to ${ctx.journal.file(EXPORTED)}`], data: { count: kept.length } }
  },
})

export const restoreTargetBackup = defineStep<Ctx, [{ id: string; fingerprint: string }]>({
  id: 'restore-target',
  title: 'restore the backup taken on the target version (every host stopped)',
  once: true,
  describe: (ctx, backup) => [
    `restore backup ${backup.id} into ${ctx.rec.database.name} in one transaction; check the fingerprint is ${backup.fingerprint.slice(0, 12)}`,
  ],
  async act(ctx, backup) {
    await ctx.deps.backup.restore(backup.id, backup.fingerprint)
    const now = await ctx.deps.database.fingerprint()
    if (now !== backup.fingerprint)
      throw new OperationError(
        `After restoring backup ${backup.id}, the schema fingerprint is ${now.slice(0, 12)}, not ${backup.fingerprint.slice(0, 12)}.`,
      )
    return { changed: [`restored the database from backup ${backup.id}`] }
  },
})
