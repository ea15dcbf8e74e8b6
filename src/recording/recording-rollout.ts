/**
 * How the recording upgrade (playbooks/upgrade.ts) rolls out over its hosts, from what the run
 * recorded: the canary alone, then batches of --batch, within --max-fail and the maintenance window
 * (a resumed run has none), the content served recorded before each batch stops, and the pause after
 * the canary when asked. And the run's end when --max-fail tolerated failed hosts.
 */
import { ToleratedFailures, type HostFailure, type Run, type RolloutPolicy } from '../runs/engine.ts'
import { parseMaxFail, planBatches } from '../runs/rollout.ts'
import { recordContentBeforeStop } from './content-steps.ts'
import type { RecordingContext } from './recording-context.ts'
import type { RecordingTarget } from './recording-platform.ts'
import { recordingCanaryAnalysis } from './recording-soak.ts'

/** The rollout of `run`; `onTolerated`: how one host whose failure --max-fail tolerates is put back. */
export function recordingRollout(
  run: Run<RecordingContext>,
  onTolerated: (run: Run<RecordingContext>, failure: HostFailure, h: RecordingTarget) => Promise<void>,
): RolloutPolicy<RecordingTarget> {
  const record = run.ctx.journal.run.params
  return {
    batches: planBatches(run.ctx.targets, record.batchSize),
    maxFail: parseMaxFail(record.maxFail, run.ctx.targets.length),
    ...(record.deadline && !run.resumed ? { deadline: Date.parse(record.deadline) } : {}),
    beforeBatch: (batch) => run.step(recordContentBeforeStop, batch),
    onTolerated: (failure, h) => onTolerated(run, failure, h),
    ...(record.pauseAfterCanary ? { pauseAfterCanary: true } : {}), // wait for svcops runs promote|abort ID
    ...recordingCanaryAnalysis(run), // the soak after the canary (--soak, svcops:upgrade.analysis), judged against the others
  }
}

/** The run's end when hosts failed within --max-fail: it failed, and the other hosts stay upgraded. */
export function toleratedFailures(run: Run<RecordingContext>, failures: HostFailure[]): ToleratedFailures {
  const record = { ...run.ctx.journal.run, ...run.ctx.journal.run.params }
  const upgraded = run.ctx.targets.length - failures.length
  return new ToleratedFailures(
    `Upgraded ${upgraded} of ${run.ctx.targets.length} hosts to ${record.targetVersion}; ${failures.map((f) => f.host).join(', ')} failed ` +
      `(within --max-fail ${record.maxFail}): ${failures[0]?.message ?? ''}`,
    `See the report: ${run.journal.file('report.md')}`,
  )
}
