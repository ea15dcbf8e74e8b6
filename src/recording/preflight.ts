/**
 * The steps before anything changes: the preflight (manager scopes, the database role may change
 * the schema, room for the backup, the platform's own checks, the version every target runs) and
 * the staging of the target and the previous version on every target, so that downtime never
 * includes a download and a rollback never needs the network.
 */
import type { z } from 'zod'
import { BadInputError, OperationError, errorMessage } from '../core/errors.ts'
import { describeStoreRoom } from '../backup/store-room.ts'
import { events } from '../core/events.ts'
import { formatBytes } from '../core/units.ts'
import { compareVersions } from '../releases/versions.ts'
import type { Run } from '../runs/engine.ts'
import { readEnvironmentLock } from '../runs/lock.ts'
import { defineStep } from '../runs/step.ts'
import { describePromotionGate } from './promotion-gate.ts'
import type { RecordingContext } from './recording-context.ts'
import type { RecordingTarget } from './recording-platform.ts'
import { preflightDataSchema } from './recording-step-data.ts'

type Ctx = RecordingContext

async function lockState(ctx: Ctx): Promise<string> {
  try {
    const holder = await readEnvironmentLock(ctx.rec.database, ctx.env.name)
    if (!holder) return 'free now'
    return `held now by run ${holder.runId} (${holder.holder}, pid ${holder.pid}) since ${holder.since}${holder.alive ? '' : ' — that holder died'}`
  } catch (error) {
    return `could not be read: ${errorMessage(error)}`
  }
}

export const preflight = defineStep<Ctx, [], z.infer<typeof preflightDataSchema>>({
  id: 'preflight',
  title: 'check scopes, database privileges, room for the backup, installed versions',
  once: true,
  data: preflightDataSchema,
  async describe(ctx) {
    const db = ctx.rec.database
    const run = ctx.journal.run
    // A new upgrade meets the stack's promotion gate before its lock: the dry run shows it as read now.
    const gate =
      run.kind === 'upgrade' && !run.params.downgrade
        ? await describePromotionGate(ctx.env, run.targetVersion, run.params.skipPromotionGate ?? false)
        : undefined
    return [
      ...(gate ? [gate] : []),
      `the run lock of environment '${ctx.env.name}' in ${db.host}:${db.port}/${db.name} (advisory lock + row in svcops.run_lock), ` +
        `${await lockState(ctx)}${ctx.platform.describeLocks()}`,
      ...ctx.platform.describePreflight(),
      `log in to the manager and check the scopes ${ctx.rec.scopes.read} ${ctx.rec.scopes.write}`,
      'check the database role may change the schema (CREATE on database and schema public, ownership of every table a migration alters)',
      `check the backup store has room for the database plus 20% (${ctx.env.backup ? describeStoreRoom(ctx.env.backup.store) : 'no backup section'})`,
      ...ctx.platform.describeVersionRead(ctx.targets[0] ?? ctx.allTargets[0]),
    ]
  },
  async preview(ctx) {
    const versions = await ctx.platform.versions().catch((error: unknown) => {
      // The dry run goes on without the API (a workstation without the cluster's credentials): the version stays unknown.
      events.warn(`The installed version could not be read: ${errorMessage(error)}`)
      return {}
    })
    refuseDowngrade(ctx, versions)
    ctx.journal.updateParams({ previousVersions: versions })
    // The run would take the lock first: a database the dry run cannot read (its password, the
    // host) stops the real run there, so the dry run ends as it would (exit 1), after its plan.
    try {
      await readEnvironmentLock(ctx.rec.database, ctx.env.name)
    } catch (error) {
      throw new OperationError(`The run lock of environment '${ctx.env.name}' could not be read: ${errorMessage(error)}`)
    }
    return { data: { versions } }
  },
  async act(ctx) {
    // The platform's own checks first (on Kubernetes: the CLI, the stack, the API, the rights, a preview without anybody else's change).
    const platform = await ctx.platform.checkPreflight()
    const granted = await ctx.deps.content.checkAuth()
    events.emit({ kind: 'check', check: 'manager auth with the needed scopes', ok: true, detail: granted.join(' ') })
    const may = await ctx.deps.database.mayChangeSchema()
    events.emit({ kind: 'check', check: 'database reachable and the role may change the schema', ok: may.ok, detail: may.detail })
    if (!may.ok) {
      throw new OperationError(
        `The database role cannot change the schema, so migrations would fail: ${may.detail}.`,
        'Grant the role CREATE on the database and its schema and make it the owner of the tables (ALTER TABLE ... OWNER TO role), then run again.',
      )
    }
    const size = await ctx.deps.database.sizeBytes()
    const free = await ctx.deps.backup.freeBytes()
    const roomy = free > size * 1.2
    events.emit({
      kind: 'check',
      check: 'room for the backup',
      ok: roomy,
      detail: `${formatBytes(free)} free, database ${formatBytes(size)}`,
    })
    if (!roomy) {
      throw new OperationError(
        `The backup store${storeWhere(ctx)} has ${formatBytes(free)} free, less than the database's ${formatBytes(size)} plus 20%; nothing was stopped.`,
        'Free space in the backup store (svcops backup prune) and run again.',
      )
    }
    const versions = await ctx.platform.versions()
    for (const h of ctx.targets) {
      if (!versions[h.name]) {
        throw new OperationError(
          `${ctx.settings.package} is not installed on ${h.name}; an upgrade needs a current version to roll back to.`,
        )
      }
    }
    refuseDowngrade(ctx, versions)
    ctx.journal.updateParams({ previousVersions: versions })
    return { data: { versions, granted, ...platform } }
  },
})

/** ` at user@host:port:path` or ` at path`, for the room check's refusal. */
function storeWhere(ctx: Ctx): string {
  const store = ctx.env.backup?.store
  if (!store) return ''
  return store.ssh ? ` at ${store.ssh.user}@${store.ssh.host}:${store.ssh.port}:${store.path}` : ` at ${store.path}`
}

/**
 * An upgrade to a version older than a target runs is refused before anything changes: going down
 * is a rollback (the schema may be newer than the old version can read), asked for by its own command.
 */
function refuseDowngrade(ctx: Ctx, versions: Record<string, string>): void {
  const run = ctx.journal.run
  if (run.params.downgrade) return
  const newer = ctx.targets.filter((h) => {
    const v = versions[h.name]
    return v !== undefined && compareVersions(v, run.targetVersion) > 0
  })
  if (!newer.length) return
  throw new BadInputError(
    `--to: ${run.targetVersion} is older than what ${newer.map((h) => `${h.name} runs (${versions[h.name] ?? '?'})`).join(', ')}; an upgrade never goes down, nothing was changed.`,
    `To go back to ${run.targetVersion}: svcops rollback recording --env ${ctx.env.name} --to ${run.targetVersion}`,
  )
}

/**
 * True when every target already runs the target version (read by the preflight) and its service is
 * running: the run changes nothing — no backup, no stop, no restart — and ends as `no-op` ("already
 * on V"). Scheduled upgrades with a fixed version rely on it. A target on V that is stopped (left so
 * by a run within --max-fail) is not "already on V": the upgrade goes on and starts it.
 */
export async function alreadyOnTarget(run: Run<Ctx>): Promise<boolean> {
  const { ctx } = run
  const record = ctx.journal.run
  const versions = record.params.previousVersions
  if (run.resumed || !ctx.targets.length || !ctx.targets.every((h) => versions[h.name] === record.targetVersion)) return false
  for (const h of ctx.targets) if (!(await ctx.platform.status(h)).running) return false
  events.info(`Already on ${record.targetVersion}: ${ctx.targets.map((h) => h.name).join(', ')}; nothing to do, nothing was changed.`)
  if (!run.planning) ctx.journal.update({ phase: 'no-op', finishedAt: new Date().toISOString() })
  return true
}

/** The versions a target needs at hand: the target version and the one a rollback returns to. */
function versionsToStage(ctx: Ctx, h: RecordingTarget): string[] {
  const previous = ctx.journal.run.params.previousVersions[h.name]
  return [...new Set([ctx.journal.run.targetVersion, ...(previous ? [previous] : [])])]
}

export const stagePackages = defineStep<Ctx, [RecordingTarget]>({
  id: 'stage',
  title: 'copy the target and the previous package into the host’s package cache',
  once: true,
  describe: (ctx, h) => ctx.platform.describeStage(h, versionsToStage(ctx, h)),
  act: (ctx, h) => ctx.platform.stage(h, versionsToStage(ctx, h)),
})
