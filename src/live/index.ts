/**
 * The live production system as one system of svcops: its name, its title in sentences and, loaded
 * only when one of its verbs runs, what reports know of it. The edge (playbooks/lib/systems.ts)
 * adds its playbooks and option tables to this object to make the entry the CLI and the scripts look
 * up by name; nothing here fills a registry when imported.
 */
import type { SystemDescription } from '../runs/system-description.ts'

/** What the live system's folder gives the registry of systems. */
export const liveProductionSystem = {
  name: 'live',
  title: 'the live production system',
  /** What reports, notifications and metrics know of it (run view, params, report, run store). */
  description: async (): Promise<SystemDescription> => (await import('./live-description.ts')).liveDescription,
} as const
