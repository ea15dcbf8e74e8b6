/**
 * The seed's rollback, made lossless: stop the service; install the previous version; restore the
 * database backup only if the schema changed (fingerprint differs) or recordings went missing —
 * and before restoring, export every recording written after the backup, re-create it after the
 * restore, and name it in the report; start; verify. Every step is journaled and idempotent, so a
 * rollback that was itself interrupted continues with `svcops resume ID`.
 */
import { writeFileSync, existsSync, readFileSync } from 'node:fs'
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { runConcurrently } from '../runs/rollout.ts'
import { withLockRowKept } from '../runs/lock.ts'
import { contentKey, recordingsAfter, type Recording, type RecordingInput } from './snapshot.ts'
import { installStep, startAndCheckSteps, stopStep, verifyHostStep } from './host-steps.ts'
import { runStep, type HostHandle, type RunContext } from '../runs/steps.ts'

/** What a rollback decided and did. */
export interface RollbackOutcome {
  restored: boolean
  reason: string
  hosts: string[]
  recreated: RecordingInput[]
}

const BEFORE_STOP = 'content-before-stop.json'
const EXPORTED = 'exported-recordings.json'

function readJsonList(path: string): Recording[] {
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Recording[]) : []
}

/**
 * Saves what the service lists right before hosts stop (from any host that answers). If every
 * host later goes down, this is still a record of what was written after the backup.
 */
export async function saveContentBeforeStop(ctx: RunContext): Promise<void> {
  const list = await listFromAny(ctx, ctx.allHosts)
  if (!list) return
  const path = ctx.journal.file(BEFORE_STOP)
  const merged = new Map(readJsonList(path).map((r) => [contentKey(r), r]))
  for (const r of list) merged.set(contentKey(r), r)
  writeFileSync(path, JSON.stringify([...merged.values()]) + '\n', { mode: 0o600 })
}

/** The content list of the first host that answers, or undefined when none does. */
async function listFromAny(ctx: RunContext, hosts: HostHandle[]): Promise<Recording[] | undefined> {
  for (const h of hosts) {
    try {
      await ctx.deps.content.health(h.url)
      return await ctx.deps.content.list(h.url, ctx.settings.contentLimit)
    } catch (error) {
      events.emit({ kind: 'check', check: 'content list for the rollback', ok: false, host: h.name, detail: (error as Error).message })
    }
  }
  return undefined
}

/** Hosts this run touched: every host with a journaled stop (of the upgrade or of a rollback). */
export function touchedHosts(ctx: RunContext): string[] {
  const names = new Set(
    ctx.journal
      .entries()
      .filter((e) => e.host && (e.step === 'stop' || e.step === 'rollback:stop'))
      .map((e) => e.host as string),
  )
  return ctx.allHosts.map((h) => h.name).filter((n) => names.has(n))
}

/**
 * Rolls the run back. `dataLoss` says verification found snapshot recordings missing, which needs
 * the database restored even when the schema looks unchanged.
 */
export async function rollBack(ctx: RunContext, options: { dataLoss?: boolean } = {}): Promise<RollbackOutcome> {
  const run = ctx.journal.run
  const decision = await runStep(
    ctx,
    'rollback:decide',
    undefined,
    async () => {
      const now = await ctx.deps.database.fingerprint()
      const changed = run.fingerprintBefore !== undefined && now !== run.fingerprintBefore
      const restore = changed || (options.dataLoss ?? false)
      const reason = changed
        ? `the schema fingerprint changed (${run.fingerprintBefore?.slice(0, 12) ?? '?'} -> ${now.slice(0, 12)})`
        : options.dataLoss
          ? 'recordings of the snapshot are missing (data changed)'
          : 'the schema did not change: the database is kept'
      // A restore changes the database under every host, so all of them stop and start around it.
      const hosts = restore ? ctx.allHosts.map((h) => h.name) : touchedHosts(ctx)
      return { data: { restore, reason, hosts, fingerprintNow: now } }
    },
    { once: true },
  )
  const restore = decision.data?.restore === true
  const reason = typeof decision.data?.reason === 'string' ? decision.data.reason : ''
  const hosts = ctx.allHosts.filter((h) => ((decision.data?.hosts as string[] | undefined) ?? []).includes(h.name))
  events.info(
    `Rollback: ${restore ? 'restoring the database' : 'no database restore'} because ${reason}; hosts: ${hosts.map((h) => h.name).join(', ') || 'none'}.`,
  )

  let exported: Recording[] = []
  if (restore) {
    if (!run.backupId) throw new OperationError(`Run ${run.id} has no verified backup to restore; the database was left as it is.`)
    const result = await runStep(
      ctx,
      'rollback:export',
      undefined,
      async () => {
        const now = (await listFromAny(ctx, ctx.allHosts)) ?? []
        const candidates = [...readJsonList(ctx.journal.file(BEFORE_STOP)), ...now]
        const after = recordingsAfter(run.snapshotIds ?? [], candidates)
        writeFileSync(ctx.journal.file(EXPORTED), JSON.stringify(after, null, 2) + '\n', { mode: 0o600 })
        return {
          data: { count: after.length, file: EXPORTED },
          ...(after.length
            ? { changed: [`exported ${after.length} recording(s) written after the backup to ${ctx.journal.file(EXPORTED)}`] }
            : {}),
        }
      },
      { once: true },
    )
    exported = readJsonList(ctx.journal.file(EXPORTED))
    events.info(
      `Rollback: ${typeof result.data?.count === 'number' ? result.data.count : exported.length} recording(s) were written after the backup and will be re-created.`,
    )
  }

  await everyHost(hosts, (h) => stopStep(ctx, h, 'rollback:'))
  await everyHost(hosts, async (h) => {
    const previous = run.previousVersions[h.name]
    if (previous) await installStep(ctx, h, previous, 'rollback:')
  })
  if (restore) {
    await runStep(
      ctx,
      'rollback:restore',
      undefined,
      async () => {
        await withLockRowKept(ctx.rec.database, ctx.env.name, () => ctx.deps.backup.restore(run.backupId as string, run.fingerprintBefore))
        const now = await ctx.deps.database.fingerprint()
        if (run.fingerprintBefore && now !== run.fingerprintBefore)
          throw new OperationError(
            `After restoring backup ${run.backupId as string}, the schema fingerprint is ${now.slice(0, 12)}, not ${run.fingerprintBefore.slice(0, 12)} as before the upgrade.`,
          )
        return { changed: [`restored the database from backup ${run.backupId as string}`] }
      },
      { once: true },
    )
  }
  await everyHost(hosts, (h) => startAndCheckSteps(ctx, h, 'rollback:'))

  let recreated: RecordingInput[] = []
  if (restore && exported.length) {
    const step = await runStep(ctx, 'rollback:recreate', undefined, async () => {
      const target = hosts[0]
      if (!target) throw new OperationError('No host is left to re-create the exported recordings on.')
      const present = new Set((await ctx.deps.content.list(target.url, ctx.settings.contentLimit)).map(contentKey))
      const made: RecordingInput[] = []
      for (const r of exported) {
        if (present.has(contentKey(r))) continue
        const input = { channelName: r.channelName, title: r.title, startTime: r.startTime, stopTime: r.stopTime }
        await ctx.deps.content.create(target.url, input)
        made.push(input)
      }
      return {
        data: {
          recreated: exported.map((r) => ({ channelName: r.channelName, title: r.title, startTime: r.startTime, stopTime: r.stopTime })),
          newlyCreated: made.length,
        },
        changed: made.length ? [`re-created ${made.length} recording(s) written after the backup`] : [],
      }
    })
    recreated = (step.data?.recreated as RecordingInput[] | undefined) ?? []
  }
  await everyHost(hosts, (h) => verifyHostStep(ctx, h, 'rollback:verify'))
  if (recreated.length) {
    await runStep(ctx, 'rollback:verify-recreated', undefined, async () => {
      const target = hosts[0] as HostHandle
      const present = new Set((await ctx.deps.content.list(target.url, ctx.settings.contentLimit)).map(contentKey))
      const missing = recreated.filter((r) => !present.has(contentKey(r)))
      if (missing.length)
        throw new OperationError(
          `${missing.length} re-created recording(s) are not listed after the rollback, first: ${missing[0]?.title ?? '?'}.`,
        )
      return { data: { present: recreated.length } }
    })
  }
  return { restored: restore, reason, hosts: hosts.map((h) => h.name), recreated }
}

/** Runs `fn` on every host at once and throws the first failure after all have finished. */
async function everyHost(hosts: HostHandle[], fn: (h: HostHandle) => Promise<void>): Promise<void> {
  const results = await runConcurrently(hosts, hosts.length, fn)
  const failed = results.find((r) => r.status === 'rejected')
  if (failed && failed.status === 'rejected') throw failed.reason
}
