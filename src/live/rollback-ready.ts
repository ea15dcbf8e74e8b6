/**
 * What a rollback of the live production system needs, checked before its first stop: the host or
 * the cluster reachable, each component's previous release at hand (its package in the host's cache
 * or the package directory; on Kubernetes the Deployments readable, the image being the kubelet's to
 * pull), and the run's copy of the settings it restores. A missing part refuses a rollback asked for
 * with nothing changed (exit 5) and the command to run once it is back; the dry run reads the same
 * and fails where the real run would. The recording service's counterpart is
 * src/recording/rollback-preconditions.ts.
 */
import { BlockedError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { defineStep, stepName, type StepResult } from '../runs/step.ts'
import type { LiveContext } from './live-context.ts'
import { backupFiles } from './live-steps.ts'

type Ctx = LiveContext

/** What the backup step journaled in this run (undefined before it ran: then nothing was stopped either). */
function backedUp(ctx: Ctx): Record<string, unknown> | undefined {
  return ctx.journal.finished(stepName(backupFiles))?.data
}

/**
 * The units the rollback installs (those not on their release before the run), each with that
 * release; what cannot be read (an unknown release, the host or the API unreachable) as missing.
 */
async function readNeeds(ctx: Ctx): Promise<{ previous: Record<string, string>; missing: string[]; reached: boolean }> {
  const previous: Record<string, string> = {}
  const missing: string[] = []
  for (const u of ctx.units) {
    const v = ctx.journal.run.params.previousVersions[u.name]
    if (!v) {
      missing.push(`the release ${u.name} ran before run ${ctx.journal.run.id} is not known`)
      continue
    }
    try {
      if ((await ctx.platform.installedVersion(u)) !== v) previous[u.name] = v
    } catch (error) {
      return { previous, missing: [`${ctx.platform.where} cannot be reached: ${errorMessage(error).replace(/\.$/, '')}`], reached: false }
    }
  }
  return { previous, missing, reached: true }
}

/** Everything the rollback would miss, for the refusal (empty: it can run). */
async function findMissing(ctx: Ctx): Promise<string[]> {
  const needs = await readNeeds(ctx)
  if (!needs.reached) return needs.missing
  return [...needs.missing, ...(await ctx.platform.findRollbackMissing(needs.previous, backedUp(ctx)))]
}

function refusal(ctx: Ctx, missing: string[]): BlockedError {
  const run = ctx.journal.run
  return new BlockedError(
    `Nothing changed: the rollback of run ${run.id} would not get through — ${missing.join('; ')}.`,
    `Bring back what is missing, then run: svcops rollback live --env ${ctx.env.name} --run ${run.id}`,
  )
}

export const checkRollbackReady = defineStep<Ctx>({
  id: 'rollback-ready',
  title: 'check what the rollback needs before anything stops (previous packages, the saved settings, the host)',
  describe: (ctx) => ctx.platform.describeRollbackNeeds(ctx.journal.run.params.previousVersions),
  async preview(ctx) {
    // The dry run of an upgrade has no backup yet: the rollback it plans is checked by the run itself.
    if (!backedUp(ctx)) return { skipped: 'checked by the rollback once the run has backed up its files' }
    const missing = await findMissing(ctx)
    if (missing.length) throw refusal(ctx, missing)
    return { data: { ready: true } }
  },
  async act(ctx): Promise<StepResult> {
    // An automatic rollback meets components already stopped: it goes on and says what fails where.
    if (!ctx.journal.run.rollbackRequested) return { skipped: 'an automatic rollback: the components are already stopped' }
    const missing = await findMissing(ctx)
    events.emit({ kind: 'check', check: 'what the rollback needs', ok: missing.length === 0, detail: missing.join('; ') || 'all there' })
    if (missing.length) throw refusal(ctx, missing)
    return { data: { ready: true } }
  },
})
