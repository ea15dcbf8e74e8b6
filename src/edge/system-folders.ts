/**
 * The object each system's folder exports (src/recording/index.ts, src/live/index.ts), listed once:
 * the registry of systems (playbooks/lib/systems.ts) builds its entries on these, and the wiring of the run
 * observers (run-systems.ts) reads their descriptions from here, without the playbooks that the
 * registry loads (which import the output of commands, which wires the observers).
 */
import { liveProductionSystem } from '../live/index.ts'
import { recordingService } from '../recording/index.ts'
import type { SystemDescription } from '../runs/system-description.ts'

/** Every system's folder object, in the order the registry lists the systems. */
export const SYSTEM_FOLDERS = [recordingService, liveProductionSystem] as const

/** What reports, notifications and metrics know of every system. */
export function systemDescriptions(): Promise<SystemDescription[]> {
  return Promise.all(SYSTEM_FOLDERS.map((s) => s.description()))
}
