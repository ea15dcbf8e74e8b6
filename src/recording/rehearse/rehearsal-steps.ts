/**
 * The rehearsal's own steps (the rest are the upgrade's, target-steps.ts and content-steps.ts, run
 * on the rehearsal host against the copy): read production (versions, schema fingerprint, size, the
 * role's right to migrate) without changing it; the backup to rehearse on; the copy restored into
 * the scratch database; the service stopped on the rehearsal host (not disruptive: production never
 * stops); the rollback's restore when the schema changed; production checked unchanged at the end;
 * the prediction journaled.
 */
import { z } from 'zod'
import { OperationError, withFacts } from '../../core/errors.ts'
import { schemaFingerprint } from '../../drivers/fingerprint.ts'
import { withDatabase } from '../../drivers/postgres.ts'
import { defineStep } from '../../runs/step.ts'
import { SCHEMA_CHANGE_PERMISSION } from '../deps.ts'
import { openUpgradeDeps } from '../deps-wiring.ts'
import type { RecordingTarget } from '../recording-platform.ts'
import { openRecordingPlatform } from '../recording-platforms.ts'
import type { RehearsalContext } from './rehearsal-context.ts'
import { predictionSchema, withLimits, type Prediction } from './prediction.ts'
import { REHEARSAL_REPORT } from './rehearsal-report.ts'
import { DEFAULT_BACKUP_MAX_AGE_HOURS, rehearsalBackup, restoreCopy } from './scratch-copy.ts'

type Ctx = RehearsalContext

const productionSchema = z.object({
  from: z.string(),
  versions: z.record(z.string(), z.string()),
  fingerprint: z.string(),
  databaseBytes: z.number(),
})
export type ProductionFacts = z.infer<typeof productionSchema>

/** Production as it is now: versions, schema, size (read only: a rehearsal changes none of it). */
async function readProductionFacts(ctx: Ctx): Promise<ProductionFacts> {
  const platform = openRecordingPlatform(ctx.production)
  try {
    const versions = await platform.versions()
    const deps = await openUpgradeDeps(ctx.production)
    const [fingerprint, databaseBytes] = await Promise.all([deps.database.fingerprint(), deps.database.sizeBytes()])
    const counted = new Map<string, number>()
    for (const v of Object.values(versions)) counted.set(v, (counted.get(v) ?? 0) + 1)
    const from = [...counted.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? ctx.production.recording?.version ?? ''
    return { from, versions, fingerprint, databaseBytes }
  } finally {
    await platform.close()
  }
}

export const readProduction = defineStep<Ctx, [], ProductionFacts>({
  id: 'read-production',
  title: "read production: the hosts' versions, the schema fingerprint, the database size, the role's right to migrate",
  once: true,
  data: productionSchema,
  describe: (ctx) => [
    `read the installed version on ${ctx.production.recording?.hosts.map((h) => h.name).join(', ') ?? '?'} (nothing is stopped)`,
    `schema fingerprint and size of ${ctx.databases.production.name} on ${ctx.databases.production.host}:${ctx.databases.production.port}`,
    `the doctor's ${SCHEMA_CHANGE_PERMISSION.id}: ${SCHEMA_CHANGE_PERMISSION.check}`,
  ],
  async preview(ctx) {
    // The dry run reads production too (read only): the version it would install first comes from it.
    const facts = await readProductionFacts(ctx)
    ctx.journal.updateParams({ previousVersions: { [ctx.host.name]: facts.from }, fingerprintBefore: facts.fingerprint })
    return { data: facts }
  },
  async act(ctx) {
    const facts = await readProductionFacts(ctx)
    const to = ctx.journal.run.targetVersion
    if (facts.from === to)
      throw new OperationError(`Production already runs ${to}; there is nothing to rehearse.`, 'Name another version with --to.')
    // A copy restored by svcops is owned by svcops' role, so a missing right of the service's role on
    // production would pass on the copy: it is checked on production, as the doctor does.
    const right = await (await openUpgradeDeps(ctx.production)).database.mayChangeSchema()
    if (!right.ok)
      throw withFacts(
        new OperationError(
          `Cause ${SCHEMA_CHANGE_PERMISSION.id}: the service's role may not change the schema of ${ctx.databases.production.name}, so ${to}'s migrations would fail in production (${right.detail}).`,
          `Run: svcops doctor recording --env ${ctx.production.name}`,
        ),
        { cause: SCHEMA_CHANGE_PERMISSION.id },
      )
    ctx.journal.updateParams({ previousVersions: { [ctx.host.name]: facts.from }, fingerprintBefore: facts.fingerprint })
    return { data: facts }
  },
})

const backupSchema = z.object({ backupId: z.string(), reused: z.boolean(), takenAt: z.string() })

export const takeRehearsalBackup = defineStep<Ctx, [], z.infer<typeof backupSchema>>({
  id: 'rehearsal-backup',
  title: 'the copy to rehearse on: a recent backup verified by a test restore, or a new one taken and verified',
  once: true,
  data: backupSchema,
  describe: (ctx) => [
    `reuse the newest trusted backup of ${ctx.production.name} with today's schema, verified by a test restore, at most ${ctx.production.recording?.rehearsal?.backupMaxAgeHours ?? DEFAULT_BACKUP_MAX_AGE_HOURS} h old`,
    'otherwise pg_dump the database into the backup store and verify it (test restore): it only reads production',
  ],
  async act(ctx) {
    const fingerprint = ctx.journal.run.params.fingerprintBefore ?? ''
    const maxAge = ctx.production.recording?.rehearsal?.backupMaxAgeHours ?? DEFAULT_BACKUP_MAX_AGE_HOURS
    // What read-production journaled: the production hosts are not reached again (nor left connected).
    const versions = (ctx.journal.finished('read-production', undefined)?.data as ProductionFacts | undefined)?.versions ?? {}
    const backup = await rehearsalBackup(ctx.production, fingerprint, maxAge, versions)
    ctx.journal.updateParams({ backupId: backup.id })
    return {
      ...(backup.reused
        ? { skipped: `backup ${backup.id} of ${backup.takenAt} is reused` }
        : { changed: [`created and verified backup ${backup.id}`] }),
      data: { backupId: backup.id, reused: backup.reused, takenAt: backup.takenAt },
    }
  },
})

export const restoreRehearsalCopy = defineStep<Ctx, []>({
  id: 'restore-copy',
  title: "restore the backup into the rehearsal's scratch database (never the service's own)",
  describe: (ctx) => [
    `DROP DATABASE IF EXISTS ${ctx.databases.scratch.name} (a copy an interrupted rehearsal left), CREATE DATABASE ${ctx.databases.scratch.name}`,
    `restore backup ${ctx.journal.run.params.backupId ?? '(the one above)'} into ${ctx.databases.scratch.name}; row counts and fingerprint compared with its manifest`,
  ],
  async act(ctx) {
    const id = ctx.journal.run.params.backupId
    if (!id) throw new OperationError('The rehearsal has no backup to restore; its backup step did not finish.')
    const { restoreMs } = await restoreCopy(ctx.production, id, ctx.journal.run.params.fingerprintBefore ?? '')
    return { changed: [`restored backup ${id} into ${ctx.databases.scratch.name}`], data: { restoreMs } }
  },
})

export const stopRehearsalService = defineStep<Ctx, [RecordingTarget]>({
  id: 'stop-rehearsal',
  title: 'stop the service on the rehearsal host (production keeps running)',
  describe: (ctx, t) => ctx.platform.describe('stop', t),
  act: (ctx, t) => ctx.platform.stop(t),
})

/** The copy's fingerprint now: changed from production's means the real rollback restores the database. */
export async function copyFingerprint(ctx: Ctx): Promise<string> {
  return withDatabase(ctx.databases.scratch, (c) => schemaFingerprint(c))
}

export const restoreForRollback = defineStep<Ctx, []>({
  id: 'rollback-restore',
  title: "the rollback's restore: the copy restored from the backup when the schema changed (as the real rollback does)",
  describe: () => [
    'if the copy\u2019s schema fingerprint differs from the backup\u2019s: restore the backup into the scratch database again',
  ],
  async act(ctx) {
    const before = ctx.journal.run.params.fingerprintBefore
    const now = await copyFingerprint(ctx)
    ctx.journal.updateParams({ fingerprintAfter: now })
    if (now === before)
      return { skipped: 'the schema did not change: the rollback installs the previous package only', data: { restoreMs: 0 } }
    const id = ctx.journal.run.params.backupId ?? ''
    const { restoreMs } = await restoreCopy(ctx.production, id, before ?? '')
    return { changed: [`restored backup ${id} into ${ctx.databases.scratch.name} again`], data: { restoreMs } }
  },
})

export const checkProductionUnchanged = defineStep<Ctx, []>({
  id: 'production-unchanged',
  title: "check production is as it was: the hosts' versions and the schema fingerprint",
  describe: () => ["read production's versions and schema fingerprint again and compare them with the first read"],
  async act(ctx) {
    const first = ctx.journal.finished('read-production', undefined)?.data as ProductionFacts | undefined
    const now = await readProductionFacts(ctx)
    const same = (a: Record<string, string>, b: Record<string, string>): boolean =>
      Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v)
    if (first && (now.fingerprint !== first.fingerprint || !same(now.versions, first.versions)))
      throw new OperationError(
        `Production changed during the rehearsal (versions ${JSON.stringify(first.versions)} -> ${JSON.stringify(now.versions)}, schema ${first.fingerprint.slice(0, 12)} -> ${now.fingerprint.slice(0, 12)}): another run acted on it; the rehearsal's prediction may not hold.`,
      )
    return { data: { versions: now.versions, fingerprint: now.fingerprint } }
  },
})

export const recordPrediction = defineStep<Ctx, [Prediction], Prediction>({
  id: 'predict',
  title: 'predict the real upgrade: downtime per host and for the rollout, rollback time, beside the window',
  report: REHEARSAL_REPORT,
  data: predictionSchema,
  describe: () => [
    'migration time, start to healthy, rollback time, database size; downtime per host and for the rollout with the stack\u2019s batches',
  ],
  // The platform's limits turn a prediction into none (prediction.ts, withLimits): no number it cannot stand for.
  act: (ctx, prediction) => Promise.resolve({ data: withLimits(prediction, ctx.limits) }),
})
