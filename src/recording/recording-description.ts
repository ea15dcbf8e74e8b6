/**
 * What reports, notifications and metrics know of the recording service's runs (its
 * `SystemDescription`): its name, its params' schema, its view of a run (the hosts in rollout
 * order, the batches, the window, the versions before) and its report's facts and sections. Kept
 * apart from the system's run code (recording-system.ts), so that showing runs loads none of it.
 */
import { postgresRunStore } from '../runs/pg-run-store.ts'
import { planBatches } from '../runs/rollout.ts'
import { runSealOf } from '../runs/run-mac.ts'
import type { SystemDescription, SystemWords } from '../runs/system-description.ts'
import { recordingParamsSchema, type RecordingParams } from './recording-params.ts'
import { recordingReport } from './recording-report.ts'

/** The rollout's batches of a run: `[[canary], [batch 1...], ...]`. */
export function batchesOf(params: RecordingParams): string[][] {
  return planBatches(
    params.hosts.map((name) => ({ name })),
    Math.max(1, params.batchSize || 1),
  ).map((b) => b.map((h) => h.name))
}

/** The recording service rolls out host by host: a canary first, then batches. */
export const recordingWords: SystemWords = { target: 'host', targets: 'hosts' }

/** The label of the rollout's batch `index`: "canary", then "batch 1", "batch 2"... */
export function recordingBatchLabel(index: number): string {
  return index === 0 ? 'canary' : `batch ${index}`
}

/** What reports, notifications and metrics know of the recording service. */
export const recordingDescription: SystemDescription<RecordingParams> = {
  name: 'recording',
  title: 'the recording service',
  params: recordingParamsSchema,
  view: (run) => ({
    targets: run.params.hosts,
    batches: batchesOf(run.params),
    batchLabels: batchesOf(run.params).map((_, i) => recordingBatchLabel(i)),
    ...(run.params.deadline ? { windowEnd: run.params.deadline } : {}),
    previousVersions: run.params.previousVersions,
    words: recordingWords,
  }),
  report: recordingReport,
  // Beside the run lock, in the svcops schema of the service's database (hosts and Kubernetes alike).
  // Every record and entry signed and checked with the environment's run key (run-mac.ts).
  runStore: (env) => (env.recording ? postgresRunStore(env.recording.database, env.name, runSealOf(env)) : undefined),
}
