/**
 * What a rollback of the live production system needs, checked before its first stop: the host or
 * the cluster reachable, each component's previous release at hand (its package in the host's cache
 * or the package directory; on Kubernetes the Deployments readable, the image being the kubelet's to
 * pull), and the run's copy of the settings it restores. The upgrade checks the same before its own
 * first stop, for every component (its automatic rollback would put each back), so a failed upgrade
 * never meets a rollback that cannot run. A missing part refuses with nothing changed (exit 5) and
 * the command to run once it is back; the dry run reads the same and fails where the real run would.
 * The recording service's counterpart is src/recording/rollback-preconditions.ts.
 */
import type { z } from 'zod'
import { BlockedError, InterruptedError, OperationError, SvcopsError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { assertVersion } from '../releases/versions.ts'
import type { Run } from '../runs/engine.ts'
import { defineStep, finishedData, type StepResult } from '../runs/step.ts'
import type { ComponentHandle, LiveContext } from './live-context.ts'
import type { RollbackReading } from './live-platform.ts'
import { readyDataSchema, type LiveBackupData } from './live-step-data.ts'
import { backupFiles } from './live-steps.ts'

type Ctx = LiveContext

/**
 * What the backup step journaled in this run, its shape checked (undefined before it ran: then
 * nothing was stopped either); what it names is checked against the stack by the platform's
 * `findRollbackMissing`, so a forged entry refuses the rollback here, before its first stop.
 */
function backedUp(ctx: Ctx): LiveBackupData | undefined {
  return finishedData(ctx.journal, backupFiles)
}

/**
 * Who checks: the upgrade before its first stop (for the rollback a failure would start), or the
 * rollback before its own.
 */
export type ReadyCheck = 'upgrade' | 'rollback'

/**
 * The units the rollback installs, each with its release before the run: during the upgrade every
 * unit (each would be on the target when a failure rolls it back), in the rollback those not on it;
 * what cannot be read (an unknown release, the host or the API unreachable) as missing.
 */
async function readNeeds(ctx: Ctx, by: ReadyCheck): Promise<{ previous: Record<string, string>; missing: string[]; reached: boolean }> {
  const previous: Record<string, string> = {}
  const missing: string[] = []
  for (const u of ctx.units) {
    const v = ctx.journal.run.params.previousVersions[u.name]
    if (!v) {
      missing.push(`the release ${u.name} ran before run ${ctx.journal.run.id} is not known`)
      continue
    }
    // The record is kept on the live host: a version names a package file, so it is one or it is refused.
    assertVersion(v, `Run ${ctx.journal.run.id}: params.previousVersions.${u.name}`)
    try {
      // Read even when upgrading: it is what proves the host or the API answers.
      if ((await ctx.platform.installedVersion(u)) !== v || by === 'upgrade') previous[u.name] = v
    } catch (error) {
      return { previous, missing: [`${ctx.platform.where} cannot be reached: ${errorMessage(error).replace(/\.$/, '')}`], reached: false }
    }
  }
  return { previous, missing, reached: true }
}

/** Everything the rollback would miss, for the refusal (`missing` empty: it can run), and what the platform proved. */
async function findMissing(ctx: Ctx, by: ReadyCheck): Promise<RollbackReading> {
  const needs = await readNeeds(ctx, by)
  if (!needs.reached) return { missing: needs.missing }
  // What the upgrade's own check proved before its first stop (on Kubernetes: the images pods ran then).
  const earlier = by === 'rollback' ? finishedData(ctx.journal, checkRollbackReady) : undefined
  const read = await ctx.platform.findRollbackMissing(needs.previous, backedUp(ctx), earlier)
  return { ...read, missing: [...needs.missing, ...read.missing] }
}

function refusal(ctx: Ctx, by: ReadyCheck, missing: string[]): BlockedError {
  const run = ctx.journal.run
  if (by === 'upgrade')
    return new BlockedError(
      `Nothing changed: the upgrade to ${run.targetVersion} was refused before anything stopped, because its rollback would not get through — ${missing.join('; ')}.`,
      `Bring back what is missing, then run the upgrade again: svcops upgrade live --env ${ctx.env.name} --to ${run.targetVersion}`,
    )
  return new BlockedError(
    `Nothing changed: the rollback of run ${run.id} would not get through — ${missing.join('; ')}.`,
    `Bring back what is missing, then run: svcops rollback live --env ${ctx.env.name} --run ${run.id}`,
  )
}

export const checkRollbackReady = defineStep<Ctx, [ReadyCheck], z.infer<typeof readyDataSchema>>({
  id: 'rollback-ready',
  data: readyDataSchema,
  title: 'check what the rollback needs before anything stops (previous packages, the saved settings, the host)',
  describe: (ctx) => ctx.platform.describeRollbackNeeds(ctx.journal.run.params.previousVersions),
  async preview(ctx, by) {
    // The dry run of an upgrade has neither its backup nor its staged packages: the run checks after both.
    if (!backedUp(ctx)) return { skipped: 'checked by the run once it has staged the packages and backed up its files' }
    // A preflight that could not read the running releases already ends the dry run, saying why (a
    // run that has read them always records them).
    if (!Object.keys(ctx.journal.run.params.previousVersions).length)
      return { skipped: 'checked by the run once the preflight has read the running release' }
    const read = await findMissing(ctx, by)
    if (read.missing.length) throw refusal(ctx, by, read.missing)
    return { data: { ready: true } }
  },
  async act(ctx, by): Promise<StepResult> {
    // An automatic rollback meets components already stopped (the upgrade checked before stopping them):
    // it goes on, and what it meets missing leaves each component started on what it has (startOnWhatTheyHave).
    if (by === 'rollback' && !ctx.journal.run.rollbackRequested)
      return { skipped: 'an automatic rollback: the components are already stopped' }
    const read = await findMissing(ctx, by)
    const { missing } = read
    events.emit({ kind: 'check', check: 'what the rollback needs', ok: missing.length === 0, detail: missing.join('; ') || 'all there' })
    if (missing.length) throw refusal(ctx, by, missing)
    if (read.unproven?.length) events.warn(`Not proven runnable, left to the rollback to find out: ${read.unproven.join('; ')}.`)
    return { data: { ready: true, ...read.facts } }
  },
})

export const startAsInstalled = defineStep<Ctx, [ComponentHandle]>({
  id: 'start-as-installed',
  title: 'start the component on the release it has (the rollback could not go on)',
  describe: (ctx, u) => ctx.platform.describe('start', u),
  async act(ctx, u) {
    await ctx.platform.start(u)
    const status = await ctx.platform.status(u)
    if (!status.running) throw new OperationError(`${u.name} did not start on the release it has: ${status.status}.`)
    const version = (await ctx.platform.installedVersion(u)) ?? 'an unknown release'
    return { changed: [`started ${u.name} on ${version}`], data: { version } }
  },
})

/**
 * A rollback that cannot go on after its check passed (a package gone between the check and the
 * install, a host that failed half-way) never leaves a unit stopped that could run: each stopped
 * unit is started on the release it has, in dependency order, and the error says which release each
 * unit is on. A signal and the dry run stop as they are.
 */
export async function startOnWhatTheyHave(run: Run<Ctx>, failure: unknown): Promise<never> {
  const { ctx } = run
  if (run.planning || failure instanceof InterruptedError) throw failure
  const started: string[] = []
  for (const u of ctx.units) {
    const status = await ctx.platform.status(u).catch(() => undefined)
    if (!status || status.running) continue
    try {
      await run.onHost(u, startAsInstalled)
      started.push(u.name)
    } catch (error) {
      if (error instanceof InterruptedError) throw error
      events.warn(`${u.name} could not be started on the release it has: ${errorMessage(error)}`, u.name)
    }
  }
  const on: string[] = []
  for (const u of ctx.units) {
    const version = await ctx.platform.installedVersion(u).catch(() => undefined)
    const status = await ctx.platform.status(u).catch(() => undefined)
    on.push(`${u.name} on ${version ?? 'an unknown release'} (${status?.running ? 'running' : 'not running'})`)
  }
  const now = `Now: ${on.join(', ')}.`
  const what = started.length ? ` ${started.join(', ')} started again on the release each has.` : ''
  events.warn(`The rollback could not go on.${what} ${now}`)
  throw new OperationError(
    `${errorMessage(failure).replace(/\.$/, '')}.${what} ${now}`,
    failure instanceof SvcopsError ? failure.hint : undefined,
  )
}
