/**
 * The backup before anything stops: the database backed up and verified by a test restore (the
 * backup library, through deps.ts), its id and the schema fingerprint recorded in the run; a retry
 * (`svcops resume ID --retry`) reuses the retried run's verified backup while the schema is the same.
 */
import type { z } from 'zod'
import { OperationError } from '../core/errors.ts'
import { defineStep } from '../runs/step.ts'
import type { RecordingContext } from './recording-context.ts'
import { backupDataSchema } from './recording-step-data.ts'

type Ctx = RecordingContext

export const backupAndVerify = defineStep<Ctx, [], z.infer<typeof backupDataSchema>>({
  id: 'backup',
  title: 'back up the database and verify the backup — nothing stops before it exists',
  once: true,
  data: backupDataSchema,
  describe: () => [
    'pg_dump --format=custom of the database, encrypted (OpenPGP) into the backup store, manifest with schema fingerprint and row counts',
    'verify the backup: checksum, decrypt, test restore into a scratch database, compare fingerprint and row counts',
  ],
  async act(ctx) {
    const fingerprintBefore = await ctx.deps.database.fingerprint()
    const reused = ctx.journal.run.params.backupId
    if (reused) {
      // A retry: the backup of the retried run still holds this database only if the schema is the same.
      if (fingerprintBefore !== ctx.journal.run.params.fingerprintBefore)
        throw new OperationError(
          `The schema changed since backup ${reused} was taken (${ctx.journal.run.params.fingerprintBefore?.slice(0, 12) ?? '?'} -> ${fingerprintBefore.slice(0, 12)}); it cannot be reused.`,
          `Start a new upgrade: svcops upgrade recording --env ${ctx.env.name} --to ${ctx.journal.run.targetVersion}`,
        )
      return {
        skipped: `verified backup ${reused} of the retried run is reused (same schema)`,
        data: { backupId: reused, fingerprint: fingerprintBefore },
      }
    }
    const backup = await ctx.deps.backup.createVerified(ctx.journal.run.params.previousVersions)
    if (backup.fingerprint !== fingerprintBefore) {
      throw new OperationError(
        `The schema changed while the backup was taken (${fingerprintBefore.slice(0, 12)} -> ${backup.fingerprint.slice(0, 12)}); another process is migrating the database.`,
      )
    }
    ctx.journal.updateParams({ backupId: backup.id, fingerprintBefore })
    return { changed: [`created and verified backup ${backup.id}`], data: { backupId: backup.id, fingerprint: fingerprintBefore } }
  },
})
