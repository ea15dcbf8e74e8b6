/**
 * What reports, notifications and metrics know of the live system's runs (its `SystemDescription`):
 * its name, its params' schema, and its view of a run (its components in dependency order, each
 * one's release before). Kept apart from the system's run code (live-system.ts), so that showing
 * runs loads none of it.
 */
import { liveHostRunStore } from './hosts/live-host-run-store.ts'
import { liveClusterRunStore } from './kubernetes/live-cluster-run-store.ts'
import type { SystemDescription, SystemWords } from '../runs/system-description.ts'
import { liveParamsSchema, type LiveParams } from './live-params.ts'

/** The live system upgrades component by component in dependency order: no canary, no batches. */
export const liveWords: SystemWords = { target: 'component', targets: 'components' }

/** What reports, notifications and metrics know of the live system. */
export const liveDescription: SystemDescription<LiveParams> = {
  name: 'live',
  title: 'the live production system',
  params: liveParamsSchema,
  view: (run) => ({ targets: run.params.components, batches: [], previousVersions: run.params.previousVersions, words: liveWords }),
  report: { sections: [] },
  // On hosts, files beside the run lock on the live host; on Kubernetes, ConfigMaps in the stack's namespace.
  runStore: (env) => (env.liveCluster ? liveClusterRunStore(env) : env.live ? liveHostRunStore(env.live) : undefined),
}
