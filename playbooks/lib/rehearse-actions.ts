/**
 * What the rehearsal commands do with their flags, over their run systems: `svcops rehearse
 * recording` and `svcops rehearse live` (and playbooks/rehearse.ts and rehearse-live.ts run as
 * scripts) call these with the system their playbook builds, so this module imports no playbook.
 * The runs start and plan through the engine's one path (src/runs/run-actions.ts):
 * `startSystemRun(rehearsal, request)` is `svcops rehearse recording` or `svcops rehearse live`.
 */
import { lockPolicyOf } from '../../src/runs/lock-policy.ts'
import { planSystemRun, renderRunPlan, startSystemRun } from '../../src/runs/run-actions.ts'
import { printPlanOn, showRunOn } from '../../src/edge/command-io.ts'
import type { CommandMain } from '../../src/edge/script.ts'
import type { LiveRehearsalRequest, LiveRehearsalSystem } from '../../src/live/hosts/live-rehearsal-system.ts'
import type { RehearsalSystem, RehearseRequest } from '../../src/recording/rehearse/rehearsal-system.ts'
import type { RehearseLiveFlags, RehearseRecordingFlags } from './rehearse-commands.ts'

/** `svcops rehearse recording`: the dry run's plan, or the rehearsal run; its prediction under the run's line. */
export function rehearseRecordingCommand(rehearsal: RehearsalSystem): CommandMain<RehearseRecordingFlags> {
  return async (flags, io) => {
    const request: RehearseRequest = {
      env: await io.environment(),
      to: flags.to,
      batch: flags.batch,
      ...(flags.window ? { windowMs: flags.window } : {}),
      lockPolicy: lockPolicyOf(flags),
    }
    if (flags.dryRun) {
      const plan = await planSystemRun(rehearsal, request)
      printPlanOn(io, plan, () => renderRunPlan(rehearsal, plan), { spread: true })
      return
    }
    const [{ Journal }, { predictionOfRun }, { describePrediction }] = await Promise.all([
      import('../../src/runs/journal.ts'),
      import('../../src/recording/rehearse/rehearsal-measures.ts'),
      import('../../src/recording/rehearse/prediction.ts'),
    ])
    await showRunOn(io, () => startSystemRun(rehearsal, request), {
      ...(flags.metricsFile ? { metricsFile: flags.metricsFile } : {}),
      human: (outcome) => {
        const p = predictionOfRun(Journal.open(outcome.runId))
        return [`Run ${outcome.runId}: ${outcome.phase}.`, ...(p ? describePrediction(p) : [])].join('\n')
      },
    })
  }
}

/** `svcops rehearse live`: the dry run's plan, or the rehearsal run; its finding under the run's line. */
export function rehearseLiveCommand(rehearsal: LiveRehearsalSystem): CommandMain<RehearseLiveFlags> {
  return async (flags, io) => {
    const request: LiveRehearsalRequest = {
      env: await io.environment(),
      to: flags.to,
      ...(flags.from !== undefined ? { from: flags.from } : {}),
      ...(flags.tcpEndpoint !== undefined ? { tcpEndpoint: flags.tcpEndpoint } : {}),
      lockPolicy: lockPolicyOf(flags),
    }
    if (flags.dryRun) {
      const plan = await planSystemRun(rehearsal, request)
      printPlanOn(io, plan, () => renderRunPlan(rehearsal, plan), { spread: true })
      return
    }
    const [{ Journal }, { describeLiveRehearsal, liveRehearsalIn }] = await Promise.all([
      import('../../src/runs/journal.ts'),
      import('../../src/live/hosts/live-rehearsal-report.ts'),
    ])
    await showRunOn(io, () => startSystemRun(rehearsal, request), {
      ...(flags.metricsFile ? { metricsFile: flags.metricsFile } : {}),
      human: (outcome) => {
        const found = liveRehearsalIn(Journal.open(outcome.runId).entries())
        return [`Run ${outcome.runId}: ${outcome.phase}.`, ...(found ? describeLiveRehearsal(found) : [])].join('\n')
      },
    })
  }
}
