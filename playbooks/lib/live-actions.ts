/**
 * What the live system's commands do with their flags, over its run system: `svcops upgrade live`
 * and `svcops rollback live`, and playbooks/upgrade-live.ts run as a script, call these with the
 * system the playbook builds (`live`), so this module imports no playbook. The runs themselves
 * start, continue and plan through the engine's one path (src/runs/run-actions.ts):
 * `startSystemRun(live, request)` is `svcops upgrade live`.
 */
import type { Environment } from '../../src/config/schema.ts'
import { BadInputError } from '../../src/core/errors.ts'
import { liveUnitNames } from '../../src/live/live-platforms.ts'
import { hasTypeCanary, refuseSoakWithoutCanary } from '../../src/live/live-soak.ts'
import { findLiveRunToRollBack, type LiveSystem } from '../../src/live/live-system.ts'
import { lockPolicyOf, type LockPolicy } from '../../src/runs/lock-policy.ts'
import type { RunOutcome } from '../../src/runs/playbook.ts'
import { planSystemContinuation, planSystemRun, renderRunPlan, resumeSystemRun, startSystemRun } from '../../src/runs/run-actions.ts'
import type { RunPlan } from '../../src/runs/run-system.ts'
import { confirmChange, printPlanOn, showRunOn } from '../../src/edge/command-io.ts'
import type { RollbackLiveFlags, UpgradeLiveFlags } from './live-commands.ts'
import type { CommandMain } from '../../src/edge/script.ts'

/** `svcops upgrade live`, and playbooks/upgrade-live.ts run as a script: the dry run's plan, or the run once confirmed. */
export function upgradeLiveCommand(live: LiveSystem): CommandMain<UpgradeLiveFlags> {
  return async (flags, io) => {
    refuseFromOutsideDryRun(flags)
    const env = await io.environment()
    refuseCanaryPause(flags, env)
    if (flags.soak) refuseSoakWithoutCanary(env) // no type has a canary to judge (one instance each, or Kubernetes)
    const request = {
      env,
      to: flags.to,
      ...(flags.from ? { from: flags.from } : {}),
      acks: flags.ack ?? [],
      ...(flags.tcpEndpoint ? { tcpEndpoint: flags.tcpEndpoint } : {}),
      batch: flags.batch ?? 1,
      maxFail: flags.maxFail ?? '0',
      autoRollback: flags.autoRollback,
      lockPolicy: lockPolicyOf(flags),
      ...(flags.soak ? { soakMs: flags.soak } : {}),
      ...(flags.pauseAfterCanary ? { pauseAfterCanary: true } : {}),
    }
    if (flags.dryRun) {
      const plan = await planSystemRun(live, request)
      printPlanOn(io, plan, () => renderRunPlan(live, plan), { spread: true })
      return
    }
    const prompts = await io.prompts()
    await confirmChange(
      () => prompts.upgradePrompt('the live production system', env.name, 'live', liveUnitNames(env), flags.to),
      flags.yes,
    )
    await showRunOn(io, () => startSystemRun(live, request), flags.metricsFile ? { metricsFile: flags.metricsFile } : {})
  }
}

/** `--pause-after-canary` waits after a type's canary: refused where no type runs more than one instance (none has a canary). */
function refuseCanaryPause(flags: UpgradeLiveFlags, env: Environment): void {
  if (flags.pauseAfterCanary && !hasTypeCanary(env))
    throw new BadInputError(
      `--pause-after-canary: ${env.file} runs one instance of each live component type, so no type has a canary to wait after; expected svcops:live.hosts with a type on more than one host.`,
      'Check the plan first instead: svcops upgrade live --env ENV --to VERSION --dry-run',
    )
}

/** A run reads the release it upgrades from on the live system itself; `--from` only stands in for it in a plan. */
function refuseFromOutsideDryRun(flags: UpgradeLiveFlags): void {
  if (flags.from !== undefined && !flags.dryRun)
    throw new BadInputError(
      `--from: '${flags.from}' is read by the dry run only (a run reads the release the live system runs); expected it with --dry-run.`,
    )
}

/** `svcops rollback live`: the dry run's plan, or the rollback once confirmed. */
export function rollbackLiveCommand(live: LiveSystem): CommandMain<RollbackLiveFlags> {
  return async (flags, io) => {
    const env = await io.environment()
    const options = { ...(flags.run ? { runId: flags.run } : {}), ...(flags.trustUnsignedRun ? { trustUnsigned: true } : {}) }
    if (flags.dryRun) {
      const plan = await planLiveRollback(live, env, options)
      printPlanOn(io, plan, () => renderRunPlan(live, plan), { spread: false })
      return
    }
    const prompts = await io.prompts()
    await confirmChange(() => prompts.rollbackPrompt('the live production system', env.name, 'live', flags.run), flags.yes)
    await showRunOn(
      io,
      () => rollbackLive(live, env, { ...options, lockPolicy: lockPolicyOf(flags) }),
      flags.metricsFile ? { metricsFile: flags.metricsFile } : {},
    )
  }
}

/** `svcops rollback live`: rolls back run `runId` (default: the environment's newest live upgrade run). */
export async function rollbackLive(
  live: LiveSystem,
  env: Environment,
  options: { runId?: string; lockPolicy?: LockPolicy; trustUnsigned?: boolean } = {},
): Promise<RunOutcome> {
  const journal = await findLiveRunToRollBack(env, options.runId, { trustUnsigned: options.trustUnsigned ?? false })
  return resumeSystemRun(live, journal.run.id, { rollback: true, env, lockPolicy: options.lockPolicy })
}

/** `svcops rollback live --dry-run`. */
export async function planLiveRollback(
  live: LiveSystem,
  env: Environment,
  options: { runId?: string; trustUnsigned?: boolean } = {},
): Promise<RunPlan> {
  // Read into memory: a dry run writes nothing to the local runs folder.
  const journal = await findLiveRunToRollBack(env, options.runId, { dryRun: true, trustUnsigned: options.trustUnsigned ?? false })
  return planSystemContinuation(live, journal.run.id, { rollback: true, env, journal })
}
