/**
 * The steps the seed's rollback adds to the host steps, made lossless: decide whether the database
 * is restored (only if the schema changed, or recordings went missing); before a restore, export
 * every recording written after the backup; restore the run's verified backup; re-create the
 * exported recordings and check they are listed. A rollback that was itself interrupted continues
 * with `svcops resume ID`: the decision and the restore are journaled once, the export is made
 * again (adding what was written meanwhile), the others are idempotent.
 */
import { writeFileSync } from 'node:fs'
import { z } from 'zod'
import { BadInputError, OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { TRUST_UNSIGNED_FLAG } from '../runs/run-mac.ts'
import { defineStep, finishedData, Phase, stepName, type StepResult } from '../runs/step.ts'
import { CONTENT_BEFORE_STOP, listFromAny } from './content-steps.ts'
import type { RecordingContext } from './recording-context.ts'
import type { RecordingTarget } from './recording-platform.ts'
import { contentKey, readRecordings, recordingsAfter, type RecordingInput } from './content-snapshot.ts'
import { assertRollbackParams } from './rollback-params.ts'

type Ctx = RecordingContext

/** File in the run folder with the recordings written after the backup (re-created after a restore). */
export const EXPORTED = 'exported-recordings.json'

/** What the rollback decided: restore the database or keep it, why, and which hosts it moves. */
export interface RestoreDecision {
  restore: boolean
  reason: string
  hosts: string[]
}

/** The decision as the decide step journals it (a resume reads it back: src/runs/step.ts's `stepData`). */
const decisionDataSchema = z.object({
  restore: z.boolean(),
  reason: z.string().max(2000),
  hosts: z.array(z.string().max(253)).max(10_000),
  fingerprintNow: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'expected 64 lower-case hex digits')
    .optional(),
  conditional: z.boolean().optional(),
})
type DecisionData = z.infer<typeof decisionDataSchema>

/** The decision recorded by `decideRestore`'s step result. */
export function decisionOf(result: StepResult): RestoreDecision {
  const data = result.data ?? {}
  return {
    restore: data.restore === true,
    reason: typeof data.reason === 'string' ? data.reason : '',
    hosts: Array.isArray(data.hosts) ? data.hosts.filter((h): h is string => typeof h === 'string') : [],
  }
}

/** The targets of a decision. */
export function hostsOf(ctx: Ctx, decision: RestoreDecision): RecordingTarget[] {
  return ctx.allTargets.filter((h) => decision.hosts.includes(h.name))
}

/** The rollback's closing line: the versions the hosts went back to, and whether the database was restored and why. */
export function rollbackSummary(ctx: Ctx, decision: RestoreDecision, recreated: { data?: Record<string, unknown> }): string {
  const run = ctx.journal.run.params
  const count = Array.isArray(recreated.data?.recreated) ? recreated.data.recreated.length : 0
  const versions = Object.entries(run.previousVersions)
    .map(([h, v]) => `${h} ${v}`)
    .join(', ')
  if (!decision.restore) return `rolled back to ${versions}; database kept (${decision.reason})`
  return `rolled back to ${versions}; database restored from backup ${run.backupId ?? '?'} because ${decision.reason}; ${count} recording(s) written after the backup re-created`
}

/** True when the schema changed since the run's backup: a host's previous version cannot run on it. */
export async function schemaChanged(ctx: Ctx): Promise<boolean> {
  return (await ctx.deps.database.fingerprint()) !== ctx.journal.run.params.fingerprintBefore
}

/** A host that failed during the rollout (`--max-fail`) after the schema changed stays stopped: warned, naming it. */
export function leftStopped(failure: Error, h: RecordingTarget): void {
  events.warn(
    `${h.name} failed (${failure.message}) and is left stopped: the schema changed, and its previous version cannot run on it.`,
    h.name,
  )
}

async function decide(ctx: Ctx, dataLoss: boolean): Promise<{ data: DecisionData }> {
  const run = ctx.journal.run.params
  if (!run.fingerprintBefore) {
    // The dry run of an upgrade: nothing has changed yet, so the decision is the rule itself.
    const reason = 'restore only if the schema fingerprint changed (a migration ran) or recordings went missing'
    return { data: { restore: true, reason, hosts: ctx.allTargets.map((h) => h.name), conditional: true } }
  }
  const now = await ctx.deps.database.fingerprint()
  const changed = now !== run.fingerprintBefore
  const restore = changed || dataLoss
  const reason = changed
    ? `the schema fingerprint changed (${run.fingerprintBefore.slice(0, 12)} -> ${now.slice(0, 12)})`
    : dataLoss
      ? 'recordings of the snapshot are missing (data changed)'
      : 'the schema did not change and no recording went missing'
  // A restore changes the database under every host, so all of them stop and start around it.
  const hosts = restore ? ctx.allTargets.map((h) => h.name) : ctx.journal.disruptedHosts(ctx.allTargets.map((h) => h.name))
  return { data: { restore, reason, hosts, fingerprintNow: now } }
}

/**
 * True when this rollback's own journal shows it went past its decision to restore: its export
 * finished or its restore began (the database may be the backup's by now, so the fingerprint can no
 * longer tell whether a restore was needed).
 */
function restoreUnderway(ctx: Ctx): boolean {
  const exported = stepName(exportLaterRecordings, Phase.rollback)
  const restored = stepName(restoreBackup, Phase.rollback)
  return ctx.journal.entries().some((e) => e.step === restored || (e.step === exported && e.status === 'ok'))
}

/**
 * The decision, derived from what svcops can check (the schema fingerprint now against the one
 * before the run, whose backup's signed manifest the preconditions check, and this process's own
 * finding of lost data), never from a journal entry alone: an earlier decision to restore that the
 * fingerprint does not bear out is followed only when this rollback already went past it
 * (`restoreUnderway`); otherwise it is refused with one sentence.
 */
async function decideChecked(ctx: Ctx, dataLoss: boolean): Promise<{ data: DecisionData }> {
  assertRollbackParams(ctx)
  const fresh = await decide(ctx, dataLoss)
  const earlier = finishedData(ctx.journal, decideRestore, { phase: Phase.rollback })
  if (!earlier?.restore || fresh.data.restore || earlier.conditional) return refuseUnsignedRestore(ctx, fresh)
  if (restoreUnderway(ctx)) return refuseUnsignedRestore(ctx, { data: earlier })
  const run = ctx.journal.run
  throw new BadInputError(
    `Run ${run.id}: the journal's entry of step ${stepName(decideRestore, Phase.rollback)} is refused: it says restore the database (${earlier.reason.slice(0, 120)}), but ${fresh.data.reason} and this rollback has not begun a restore; svcops does not follow it.`,
    `Look at the run: svcops runs show ${run.id} (its journal was changed by something other than svcops); nothing was changed.`,
  )
}

/**
 * `decision`, unless it restores the database of a run trusted only on `--trust-unsigned-run`: such
 * a record may say anything its writer likes — the backup, the fingerprint before the run that makes
 * the schema look changed, a snapshot listing every recording so that none is exported — so the
 * backup it points at is named, and restored only by a person who checked it (`backup restore`).
 */
function refuseUnsignedRestore(ctx: Ctx, decision: { data: DecisionData }): { data: DecisionData } {
  const run = ctx.journal.run
  if (!run.trustedUnsigned || !decision.data.restore || decision.data.conditional) return decision
  const backup = run.params.backupId ?? '(none named)'
  const env = ctx.env.name
  throw new BadInputError(
    `Run ${run.id} is unsigned, trusted only on ${TRUST_UNSIGNED_FLAG}, and its rollback would restore the database from backup ${backup}, the one its record points at (${decision.data.reason.slice(0, 120)}); svcops does not restore a database on an unsigned record's word, and nothing was changed.`,
    `Check that ${backup} is the backup taken right before this run (svcops backup list --env ${env}); if it is, stop the service and restore it by hand (svcops backup restore ${backup} --env ${env}; recordings written since are not exported), then run the rollback again: with the schema as before the run it restores nothing.`,
  )
}

export const decideRestore = defineStep<Ctx, [{ dataLoss: boolean }], DecisionData>({
  id: 'decide',
  title: 'decide whether the database is restored',
  report: 'restore-decision',
  data: decisionDataSchema,
  // Not journaled once: a resume decides again from the database, and follows an earlier decision only as decideChecked allows.
  async describe(ctx, options) {
    const result = await decide(ctx, options.dataLoss)
    const d = decisionOf(result)
    if (result.data.conditional) return [d.reason]
    return [`${d.restore ? 'restore the database' : 'keep the database'}: ${d.reason}`]
  },
  preview: (ctx, options) => decideChecked(ctx, options.dataLoss),
  async act(ctx, options) {
    const result = await decideChecked(ctx, options.dataLoss)
    const d = decisionOf(result)
    events.info(
      `Rollback: ${d.restore ? 'restoring the database' : 'no database restore'} because ${d.reason}; hosts: ${d.hosts.join(', ') || 'none'}.`,
    )
    return result
  },
})

// Not journaled once: a rollback interrupted after it may be resumed hours later, while hosts that
// still run take new recordings; the resume exports again, keeping what it exported before.
export const exportLaterRecordings = defineStep<Ctx>({
  id: 'export',
  title: 'export every recording written after the backup',
  describe: (ctx) => [
    `list the recordings and keep every one not in the run's snapshot (${ctx.journal.run.params.snapshotIds?.length ?? 'all'} recordings then) in ${ctx.journal.file(EXPORTED)}`,
  ],
  async act(ctx) {
    if (!ctx.journal.run.params.backupId)
      throw new OperationError(`Run ${ctx.journal.run.id} has no verified backup to restore; the database was left as it is.`)
    const now = (await listFromAny(ctx, ctx.allTargets)) ?? []
    const candidates = [...readRecordings(ctx.journal.file(EXPORTED)), ...readRecordings(ctx.journal.file(CONTENT_BEFORE_STOP)), ...now]
    const after = recordingsAfter(ctx.journal.run.params.snapshotIds ?? [], candidates)
    writeFileSync(ctx.journal.file(EXPORTED), JSON.stringify(after, null, 2) + '\n', { mode: 0o600 })
    events.info(`Rollback: ${after.length} recording(s) were written after the backup and will be re-created.`)
    return {
      data: { count: after.length, file: EXPORTED },
      ...(after.length
        ? { changed: [`exported ${after.length} recording(s) written after the backup to ${ctx.journal.file(EXPORTED)}`] }
        : {}),
    }
  },
})

export const restoreBackup = defineStep<Ctx>({
  id: 'restore',
  title: 'restore the run’s verified backup (every host stopped)',
  once: true,
  describe: (ctx) => {
    const run = ctx.journal.run.params
    return [
      `restore backup ${run.backupId ?? '(the one this run takes)'} into ${ctx.rec.database.name} in one transaction; ` +
        `check the fingerprint is ${run.fingerprintBefore?.slice(0, 12) ?? 'the one before the run'} again`,
    ]
  },
  async act(ctx) {
    const run = ctx.journal.run.params
    const id = run.backupId
    if (!id) throw new OperationError(`Run ${ctx.journal.run.id} has no verified backup to restore; the database was left as it is.`)
    await ctx.deps.backup.restore(id, run.fingerprintBefore)
    const now = await ctx.deps.database.fingerprint()
    if (run.fingerprintBefore && now !== run.fingerprintBefore) {
      throw new OperationError(
        `After restoring backup ${id}, the schema fingerprint is ${now.slice(0, 12)}, not ${run.fingerprintBefore.slice(0, 12)} as before the upgrade.`,
      )
    }
    return { changed: [`restored the database from backup ${id}`] }
  },
})

function exported(ctx: Ctx): RecordingInput[] {
  return readRecordings(ctx.journal.file(EXPORTED)).map((r) => ({
    channelName: r.channelName,
    title: r.title,
    startTime: r.startTime,
    stopTime: r.stopTime,
  }))
}

export const recreateLaterRecordings = defineStep<Ctx, [RecordingTarget]>({
  id: 'recreate',
  title: 're-create the exported recordings through the API',
  report: 'recreated',
  describe: (_ctx, h) => [`POST ${h.url}/api/v1/content for every exported recording not listed after the restore`],
  async act(ctx, target) {
    const wanted = exported(ctx)
    if (!wanted.length) return { skipped: 'no recording was written after the backup' }
    const present = new Set((await ctx.deps.content.list(target.url, ctx.settings.contentLimit)).map(contentKey))
    const made: RecordingInput[] = []
    for (const input of wanted) {
      if (present.has(contentKey(input))) continue
      await ctx.deps.content.create(target.url, input)
      made.push(input)
    }
    return {
      data: { recreated: wanted, newlyCreated: made.length },
      changed: made.length ? [`re-created ${made.length} recording(s) written after the backup`] : [],
    }
  },
})

export const verifyRecreated = defineStep<Ctx, [RecordingTarget]>({
  id: 'verify-recreated',
  title: 'check every re-created recording is listed',
  describe: (_ctx, h) => [`GET ${h.url}/api/v1/content: every exported recording listed`],
  async act(ctx, target) {
    const wanted = exported(ctx)
    if (!wanted.length) return { skipped: 'nothing was re-created' }
    const present = new Set((await ctx.deps.content.list(target.url, ctx.settings.contentLimit)).map(contentKey))
    const missing = wanted.filter((r) => !present.has(contentKey(r)))
    if (missing.length)
      throw new OperationError(
        `${missing.length} re-created recording(s) are not listed after the rollback, first: ${missing[0]?.title ?? '?'}.`,
      )
    return { data: { present: wanted.length } }
  },
})
