/**
 * What a rollback needs, checked before anything stops: when a restore may be needed, the run's
 * backup present, signed by a trusted signer, made for this environment and of the schema the run
 * recorded; on every host the rollback moves, the host reachable, the rights to act on it and its
 * previous version's package (hosts), or the cluster, the stack, the rights and the previous image
 * proven pulled by a pod (Kubernetes). A missing part refuses the rollback with nothing changed
 * (exit 5); the upgrade checks the same before its first stop, so a failed upgrade never meets a
 * rollback that cannot run. The dry run reads the same and fails where the real run would (Ansible's
 * `--check`).
 */
import { z } from 'zod'
import { BlockedError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { Run } from '../runs/engine.ts'
import { runConcurrently } from '../runs/rollout.ts'
import { defineStep, finishedData, type StepResult } from '../runs/step.ts'
import type { RecordingContext } from './recording-context.ts'
import type { RecordingTarget } from './recording-platform.ts'
import { assertRollbackParams } from './rollback-params.ts'
import { waitHealthy } from './target-steps.ts'

type Ctx = RecordingContext

/** What the check covers: who checks, whether a restore may be needed, and the hosts that would move. */
export interface RollbackNeeds {
  /** The upgrade before its first stop (for the rollback a failure would start), or the rollback before its own. */
  by: 'upgrade' | 'rollback'
  restore: boolean
  hosts: RecordingTarget[]
}

/** What the check read: the missing parts, what each target proved (journaled), and what nothing proved. */
interface RollbackReading {
  missing: string[]
  proven: Record<string, Record<string, unknown>>
  unproven: string[]
}

/** What the check journals (a resumed run's check reads `proven` back: src/runs/step.ts's `stepData`). */
const readyDataSchema = z.looseObject({
  ready: z.boolean().optional(),
  hosts: z.array(z.string()).optional(),
  restore: z.boolean().optional(),
  /** Per target, what its platform proved (on Kubernetes: the image a pod ran). */
  proven: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
})

/** What the upgrade's own check proved on each target before its first stop (its journaled `proven`; {} before it ran). */
function earlierProofs(ctx: Ctx): Record<string, Record<string, unknown>> {
  return finishedData(ctx.journal, checkRollbackReady)?.proven ?? {}
}

/**
 * Hosts checked at once. Each host is a few round trips (reach it, its package, its rights); one
 * after the other, a 50-host upgrade waited ~5 s here before its first stop.
 */
const HOSTS_AT_ONCE = 10

async function findMissing(ctx: Ctx, needs: RollbackNeeds): Promise<RollbackReading> {
  // What the record names (backup, versions, hosts, snapshot) is checked before any of it is read.
  assertRollbackParams(ctx)
  const run = ctx.journal.run
  const read: RollbackReading = { missing: [], proven: {}, unproven: [] }
  const backup = async (): Promise<string[]> => {
    if (!needs.restore) return []
    if (!run.params.backupId) return [`run ${run.id} has no verified backup to restore`]
    const problem = await ctx.deps.backup.findRestoreProblem(run.params.backupId, run.params.fingerprintBefore)
    return problem ? [`the run's backup cannot be restored: ${problem}`] : []
  }
  // What the run's first check proved: the rollback's, and a resumed upgrade's (its pods may be stopped by now).
  const earlier = earlierProofs(ctx)
  const before = beforeFirstStop(ctx, needs)
  const onHost = async (h: RecordingTarget): Promise<{ missing: string[]; proven?: Record<string, unknown>; unproven?: string[] }> => {
    const previous = run.params.previousVersions[h.name]
    if (!previous) return { missing: [`the version ${h.name} ran before run ${run.id} is not known`] }
    const target = await ctx.platform.findMissing(h, previous, earlier[h.name])
    return {
      ...target,
      missing: target.missing.map((m) => `${h.name}: ${m}`),
      unproven: (target.unproven ?? []).map((u) => `${h.name}: ${u}`),
    }
  }
  // The backup and the hosts at once; what is missing is said in the same order as one after the other.
  const [fromBackup, fromHosts] = await Promise.all([backup(), runConcurrently(needs.hosts, HOSTS_AT_ONCE, onHost)])
  read.missing.push(...fromBackup)
  for (const [i, result] of fromHosts.entries()) {
    if (result.status === 'rejected') throw result.reason
    const target = result.value
    read.missing.push(...target.missing)
    if (target.proven) read.proven[(needs.hosts[i] as RecordingTarget).name] = target.proven
    // Before the upgrade's first stop the target runs `previous`: what its own pods cannot prove is refused.
    // A rollback goes on without proof (its start waits for the pods and stops on a failed pull).
    ;(before ? read.missing : read.unproven).push(...(target.unproven ?? []))
  }
  return read
}

/** The upgrade's check before anything stopped (not a resumed upgrade that already stopped a target). */
function beforeFirstStop(ctx: Ctx, needs: RollbackNeeds): boolean {
  return needs.by === 'upgrade' && !ctx.journal.disrupted()
}

function refusal(ctx: Ctx, needs: RollbackNeeds, missing: string[]): BlockedError {
  const run = ctx.journal.run
  const env = ctx.env.name
  if (beforeFirstStop(ctx, needs))
    return new BlockedError(
      `Nothing changed: the ${run.params.downgrade ? 'move' : 'upgrade'} to ${run.targetVersion} was refused before anything stopped, because its rollback would not get through — ${missing.join('; ')}.`,
      `Bring back what is missing, then run it again: svcops ${run.params.downgrade ? 'rollback' : 'upgrade'} recording --env ${env} --to ${run.targetVersion}`,
    )
  return new BlockedError(
    `Nothing changed: the rollback of run ${run.id} would not get through — ${missing.join('; ')}.`,
    `Bring back what is missing, then run: svcops rollback recording --env ${env} --run ${run.id}` +
      ` (or move every host to a version you have: svcops upgrade recording --env ${env} --to VERSION)`,
  )
}

export const checkRollbackReady = defineStep<Ctx, [RollbackNeeds], z.infer<typeof readyDataSchema>>({
  id: 'rollback-ready',
  data: readyDataSchema,
  title: 'check what the rollback needs before anything stops (backup, packages or images, hosts, rights)',
  describe: (ctx, needs) => {
    const run = ctx.journal.run.params
    return [
      ...(needs.restore
        ? [
            `backup ${run.backupId ?? '(the one this run takes)'}: manifest present, signed by a trusted signer, of environment '${ctx.env.name}' and schema ${run.fingerprintBefore?.slice(0, 12) ?? 'before the run'}, its dump in the store`,
          ]
        : []),
      ...needs.hosts.flatMap((h) => {
        const previous = run.previousVersions[h.name]
        return previous ? ctx.platform.describeFindMissing(h, previous).map((d) => `${h.name} back to ${previous}: ${d}`) : []
      }),
    ]
  },
  async preview(ctx, needs) {
    // The dry run of an upgrade has neither its backup nor its staged packages yet: the real run checks them after both.
    if (!ctx.journal.run.params.backupId) return { skipped: 'checked by the run once its backup is taken and the packages are staged' }
    const read = await findMissing(ctx, needs)
    if (read.missing.length) throw refusal(ctx, needs, read.missing)
    return { data: { ready: true } }
  },
  async act(ctx, needs): Promise<StepResult> {
    const { missing, proven, unproven } = await findMissing(ctx, needs)
    events.emit({ kind: 'check', check: 'what the rollback needs', ok: missing.length === 0, detail: missing.join('; ') || 'all there' })
    if (missing.length) throw refusal(ctx, needs, missing)
    if (unproven.length) events.warn(`Not proven runnable, left to the rollback to find out: ${unproven.join('; ')}.`)
    return { data: { ready: true, hosts: needs.hosts.map((h) => h.name), restore: needs.restore, proven } }
  },
})

/**
 * A rollback that cannot go on (a missing part) never leaves a host stopped that could run: each
 * stopped host is started on the version it has, and the refusal says which version each host is
 * on. A rollback asked for on a fleet that stopped nothing changes nothing and refuses as it is.
 */
export async function startOnWhatTheyHave(run: Run<Ctx>, refused: unknown): Promise<never> {
  const { ctx } = run
  // Only an automatic rollback meets a stopped fleet; a dry run and a rollback asked for change nothing.
  if (run.planning || ctx.journal.run.rollbackRequested) throw refused
  const started: string[] = []
  for (const h of ctx.allTargets) {
    const status = await ctx.platform.status(h).catch(() => undefined)
    if (!status || status.running) continue
    try {
      await ctx.platform.start(h)
      await run.onHost(h, waitHealthy)
      started.push(h.name)
    } catch (error) {
      events.warn(`${h.name} could not be started on the version it has: ${errorMessage(error)}`, h.name)
    }
  }
  if (!started.length) throw refused
  const versions = await ctx.platform.versions().catch((): Record<string, string> => ({}))
  const on = ctx.allTargets.map((h) => `${h.name} on ${versions[h.name] ?? 'an unknown version'}`).join(', ')
  events.warn(`The rollback could not run; ${started.join(', ')} started again on the version it has. Now: ${on}.`)
  throw new BlockedError(
    `${errorMessage(refused).replace(/^Nothing changed: /, '')} Instead, ${started.join(', ')} started again on the version each has: ${on}.`,
    refused instanceof BlockedError ? refused.hint : undefined,
  )
}
