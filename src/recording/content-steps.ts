/**
 * The recording service's content around the rollout: the snapshot before anything stops (every
 * recording and the row counts, to prove nothing is lost), and what the service lists right before
 * each batch stops (kept in the run folder: if every target later goes down, it still records what
 * was written after the backup).
 */
import { writeFileSync } from 'node:fs'
import type { z } from 'zod'
import { OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { defineStep } from '../runs/step.ts'
import { contentKey, readRecordings, snapshotContent as takeSnapshot, type Recording } from './content-snapshot.ts'
import type { RecordingContext } from './recording-context.ts'
import type { RecordingTarget } from './recording-platform.ts'
import { snapshotDataSchema } from './recording-step-data.ts'

type Ctx = RecordingContext

/** File in the run folder with what the service listed right before hosts stopped. */
export const CONTENT_BEFORE_STOP = 'content-before-stop.json'

export const snapshotContent = defineStep<Ctx, [], z.infer<typeof snapshotDataSchema>>({
  id: 'snapshot',
  title: 'list every recording and count the rows of every table',
  once: true,
  data: snapshotDataSchema,
  describe: (ctx) => [
    `GET ${ctx.targets[0]?.url ?? '?'}/api/v1/content?limit=${ctx.settings.contentLimit} (every recording's id)`,
    'count the rows of every table of the database',
  ],
  async act(ctx) {
    const run = ctx.journal.run.params
    // A retry (`resume ID --retry`) keeps the snapshot of the backup it reuses.
    if (run.backupId && run.snapshotIds)
      return { skipped: `the snapshot of backup ${run.backupId} (${run.snapshotIds.length} recordings) is reused` }
    const source = await firstHealthy(ctx, [...ctx.targets, ...ctx.allTargets])
    const rowCounts = await ctx.deps.database.rowCounts()
    const snapshot = await takeSnapshot(ctx.deps.content, source.url, ctx.settings.contentLimit, rowCounts)
    ctx.journal.updateParams({ snapshotIds: snapshot.keys })
    return { data: { count: snapshot.count, rowCounts, takenAt: snapshot.takenAt } }
  },
})

/** The first host that answers `GET /` (the snapshot needs one; a host being repaired may be down). */
async function firstHealthy(ctx: Ctx, hosts: RecordingTarget[]): Promise<RecordingTarget> {
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

export const recordContentBeforeStop = defineStep<Ctx, [RecordingTarget[]]>({
  id: 'content-before-stop',
  title: 'record what the service lists right before these hosts stop',
  describe: (ctx) => [
    `GET /api/v1/content?limit=${ctx.settings.contentLimit} from the first host that answers, kept in ${CONTENT_BEFORE_STOP}`,
  ],
  async act(ctx) {
    // If every host later goes down, this is still a record of what was written after the backup.
    const list = await listFromAny(ctx, ctx.allTargets)
    if (!list) return { skipped: 'no host answered' }
    const path = ctx.journal.file(CONTENT_BEFORE_STOP)
    const merged = new Map(readRecordings(path).map((r) => [contentKey(r), r]))
    for (const r of list) merged.set(contentKey(r), r)
    writeFileSync(path, JSON.stringify([...merged.values()]) + '\n', { mode: 0o600 })
    return { data: { listed: list.length } }
  },
})

/** The content list of the first host that answers, or undefined when none does. */
export async function listFromAny(ctx: Ctx, hosts: RecordingTarget[]): Promise<Recording[] | undefined> {
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
