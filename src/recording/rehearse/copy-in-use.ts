/**
 * Proof that the rehearsal host's service works on the copy. Its configuration is the site's (the
 * stack names the host and the scratch database, the host's config file names the database the
 * service opens), so the rehearsal checks it from the database side: right after the service
 * answered a content list (a read that makes it use its database), PostgreSQL must show a session
 * of it on the scratch database; after the target's first start, production's schema fingerprint
 * must be the one read at the start (a migration that reached production instead of the copy stops
 * the rehearsal before any content check). The first check runs on the current release, before the
 * target is installed, so a host pointed at production is refused before any migration can run.
 */
import { z } from 'zod'
import { OperationError, errorMessage } from '../../core/errors.ts'
import { schemaFingerprint } from '../../drivers/fingerprint.ts'
import { withDatabase } from '../../drivers/postgres.ts'
import { defineStep } from '../../runs/step.ts'
import type { RecordingTarget } from '../recording-platform.ts'
import type { RehearsalContext } from './rehearsal-context.ts'
import { copyFingerprint } from './rehearsal-steps.ts'

type Ctx = RehearsalContext

/** Client sessions on the scratch database other than the one asking (svcops holds none there at this point; autovacuum is not a client). */
async function sessionsOnCopy(ctx: Ctx): Promise<number> {
  return withDatabase(ctx.databases.scratch, async (c) => {
    const found = await c.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
    )
    return found.rows[0]?.n ?? 0
  })
}

const usesCopySchema = z.object({
  sessions: z.number(),
  copyFingerprint: z.string(),
  copyMigrated: z.boolean(),
  productionFingerprint: z.string().optional(),
})

/**
 * The service on the rehearsal host uses the scratch database: a session of it there after it listed
 * content; with `afterTarget`, production's schema also unchanged by the target's first start.
 */
export const checkServiceUsesCopy = defineStep<Ctx, [RecordingTarget, 'current' | 'target'], z.infer<typeof usesCopySchema>>({
  id: 'uses-copy',
  title: "check the rehearsal host's service works on the scratch copy, not on production's database",
  data: usesCopySchema,
  describe: (ctx, h, phase) => [
    `GET ${h.url}/api/v1/content?limit=1 (the service reads its database)`,
    `a session on ${ctx.databases.scratch.name} in pg_stat_activity of ${ctx.databases.scratch.host}:${ctx.databases.scratch.port}, else the rehearsal stops`,
    ...(phase === 'target'
      ? [
          `${ctx.databases.production.name}'s schema fingerprint as read at the start, and the copy's compared with it (the migration ran there)`,
        ]
      : []),
  ],
  async act(ctx, h, phase) {
    const scratch = ctx.databases.scratch
    await ctx.deps.content.list(h.url, 1).catch((error: unknown) => {
      // Where the platform keeps the rehearsal from being production's (ctx.limits), the failure says so.
      if (!ctx.limits.length) throw error
      throw new OperationError(`${errorMessage(error).replace(/\.$/, '')}; not like production: ${ctx.limits.join('; ')}.`)
    })
    const sessions = await sessionsOnCopy(ctx)
    if (sessions === 0)
      throw new OperationError(
        `The service on the rehearsal host ${h.name} answered a content list but holds no session on the scratch database ${scratch.name} at ${scratch.host}:${scratch.port}, so it works on another database (production's, if its configuration names it) and the rehearsal stops before anything runs on it.`,
        `Point the rehearsal host's service configuration at ${scratch.name} on ${scratch.host}:${scratch.port} and rehearse again.`,
      )
    const before = ctx.journal.run.params.fingerprintBefore ?? ''
    const copy = await copyFingerprint(ctx)
    if (phase === 'current') return { data: { sessions, copyFingerprint: copy, copyMigrated: copy !== before } }
    const production = await withDatabase(ctx.databases.production, (c) => schemaFingerprint(c))
    if (production !== before)
      throw new OperationError(
        `Production's schema fingerprint changed while ${ctx.journal.run.targetVersion} started on the rehearsal host ${h.name} (${before.slice(0, 12)} -> ${production.slice(0, 12)}), so its migration reached ${ctx.databases.production.name}, not the copy.`,
        `Run: svcops doctor recording --env ${ctx.production.name}, and restore production from the rehearsal's backup if the service there fails.`,
      )
    return { data: { sessions, copyFingerprint: copy, copyMigrated: copy !== before, productionFingerprint: production } }
  },
})
