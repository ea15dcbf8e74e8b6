/**
 * What reports, notifications and metrics know of the live system's runs (its `SystemDescription`):
 * its name, its params' schema, and its view of a run (its components — across hosts, their
 * instances — in dependency order, each one's release before). Kept apart from the system's run code (live-system.ts), so that showing
 * runs loads none of it.
 */
import { liveHostRunStore } from './hosts/live-host-run-store.ts'
import { liveClusterRunStore } from './kubernetes/live-cluster-run-store.ts'
import { runSealOf } from '../runs/run-mac.ts'
import type { SystemDescription, SystemWords } from '../runs/system-description.ts'
import { liveParamsSchema, type LiveParams } from './live-params.ts'
import { liveRehearsalSection } from './hosts/live-rehearsal-report.ts'

/** On one host the live system upgrades component by component in dependency order: no canary, no batches. */
export const liveWords: SystemWords = { target: 'component', targets: 'components' }

/** Across hosts its units are instances (`live-2/ingest`), each type's after a canary, in batches. */
export const liveInstanceWords: SystemWords = { target: 'instance', targets: 'instances' }

/** What reports, notifications and metrics know of the live system. */
export const liveDescription: SystemDescription<LiveParams> = {
  name: 'live',
  title: 'the live production system',
  params: liveParamsSchema,
  // No batch marks: every instance stops before the first batch starts, so a batch has no stop of its own to begin at.
  view: (run) => ({
    targets: run.params.components,
    batches: [],
    previousVersions: run.params.previousVersions,
    words: run.params.components.some((u) => u.includes('/')) ? liveInstanceWords : liveWords,
  }),
  report: { sections: [liveRehearsalSection] }, // a rehearsal's finding (svcops rehearse live)
  // On hosts, files beside the run lock on the live host; on Kubernetes, ConfigMaps in the stack's namespace.
  // Every record and entry signed and checked with the environment's run key (run-mac.ts).
  runStore: (env) => {
    if (!env.live) return undefined
    return env.live.platform === 'kubernetes' ? liveClusterRunStore(env, runSealOf(env)) : liveHostRunStore(env.live, runSealOf(env))
  },
}
