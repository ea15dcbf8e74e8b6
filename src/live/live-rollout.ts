/**
 * How the live upgrade (playbooks/upgrade-live.ts) rolls out the instances of one component type,
 * and its end when --max-fail tolerated failed instances.
 */
import { ToleratedFailures, type HostFailure, type Run } from '../runs/engine.ts'
import { parseMaxFail, planBatches } from '../runs/rollout.ts'
import type { ComponentHandle, LiveContext } from './live-context.ts'
import { liveCanaryAnalysis } from './live-soak.ts'
import { stopComponent } from './live-steps.ts'

/**
 * One instance of a type is upgraded alone; several in the engine's rollout: a canary, then batches
 * of --batch at once, the failures of all types together within --max-fail (a tolerated instance is
 * stopped: it cannot go back alone to a release the controller no longer speaks). Returns those.
 */
export async function rollOutType(
  run: Run<LiveContext>,
  instances: ComponentHandle[],
  failedBefore: number,
  upgradeOne: (u: ComponentHandle) => Promise<void>,
): Promise<HostFailure[]> {
  const [only] = instances
  if (only && instances.length === 1) {
    await upgradeOne(only)
    return []
  }
  const params = run.ctx.journal.run.params
  const connecting = run.ctx.units.filter((u) => u.component !== 'system-controller').length
  return run.rollout(
    {
      batches: planBatches(instances, params.batchSize),
      maxFail: parseMaxFail(params.maxFail, connecting) - failedBefore,
      onTolerated: async (_failure, u) => {
        await run.onHost(u, stopComponent)
      },
      ...(params.pauseAfterCanary ? { pauseAfterCanary: true } : {}), // once, after the first type's canary
      ...liveCanaryAnalysis(run), // the type's soak (--soak, svcops:upgrade.analysis), judged against its other instances
    },
    upgradeOne,
  )
}

/** The run's end when instances failed within --max-fail: it failed, those are stopped, the others run the target. */
export function toleratedFailures(run: Run<LiveContext>, failures: HostFailure[]): ToleratedFailures {
  const record = run.ctx.journal.run
  const total = run.ctx.units.length
  return new ToleratedFailures(
    `Upgraded ${total - failures.length} of ${total} instances to ${record.targetVersion}; ${failures.map((f) => f.host).join(', ')} failed ` +
      `and stopped (within --max-fail ${record.params.maxFail}): ${failures[0]?.message ?? ''}`,
    `See the report: ${run.journal.file('report.md')}; roll every host back with: svcops rollback live --env ${record.environment} --run ${record.id}`,
  )
}
