/**
 * The environment's metrics after every run: once a run's report is written, the exposition of
 * the environment's whole run history is written to the textfile collector's file (`--metrics-file`,
 * or `svcops:notify.metrics.textfileDir`) and pushed to the Pushgateway (`svcops:notify.metrics.
 * pushgateway`). An observer of run events (src/runs/run-events.ts), registered at the edge
 * (src/commands/run-systems.ts). A failure is a warning: metrics never fail a run.
 */
import { dirname } from 'node:path'
import { errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { notifyConfigOf } from '../notify/run-hooks.ts'
import { listRuns } from '../runs/journal.ts'
import type { RunEvent } from '../runs/run-events.ts'
import { environmentMetrics } from './exposition.ts'
import type { Systems } from '../runs/system-description.ts'
import { pushMetrics, textfilePath, writeTextfile } from './publish.ts'

/** Options of the command line that started the run (`--metrics-file`). */
export interface RunOutputOptions {
  metricsFile?: string
}

let commandLine: RunOutputOptions = {}

/** Set by the CLI before a run: where `--metrics-file` writes. */
export function setRunOutputOptions(options: RunOutputOptions): void {
  commandLine = options
}

/** The metrics' observer of runs: the environment's exposition published after each run's report (`systems`: how each run is read). */
export async function publishRunMetrics(event: RunEvent, systems: Systems): Promise<void> {
  if (event.kind !== 'run-ended') return
  const { journal } = event
  const config = notifyConfigOf(journal.run)
  const file =
    commandLine.metricsFile ??
    (config?.metrics?.textfileDir ? textfilePath(config.metrics.textfileDir, journal.run.environment) : undefined)
  const gateway = config?.metrics?.pushgateway
  if (!file && !gateway) return
  try {
    const base = dirname(journal.dir)
    const text = environmentMetrics(journal.run.environment, listRuns(base), base, systems)
    if (file) writeTextfile(file, text)
    if (gateway) await pushMetrics(gateway, journal.run.environment, text)
  } catch (error) {
    events.warn(`Metrics of run ${journal.run.id} not published: ${errorMessage(error)}`)
  }
}
