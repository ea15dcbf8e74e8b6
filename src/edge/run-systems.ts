/**
 * What every command, and every playbook run as a script, that starts, continues or shows runs does
 * first: it registers the writer of each run's report (src/reports) and the observers of runs — the
 * webhooks (src/notify) and the environment's metrics (src/metrics, reading each run as its system
 * describes it) — with the engine's run events. The edges (the CLI, a playbook's script) wire them;
 * the engine never imports them. Loaded on first use, so commands that run nothing start without them.
 * The systems' descriptions are not registered anywhere: a reader of runs is given them
 * (`runSystems`, from the registry of systems).
 */
import type { Systems } from '../runs/system-description.ts'

let wired = false

/** What reports, notifications and metrics know of every system, from each system's folder (system-folders.ts). */
export async function runSystems(): Promise<Systems> {
  return (await import('./system-folders.ts')).systemDescriptions()
}

/**
 * Wires the observers of runs (once); `metricsFile`: where `--metrics-file` writes.
 * Returns the function that unwires what this call wired (nothing when the process was wired
 * before): a command exits instead, but a test file in a worker other files share must not leave
 * its observers to hear their runs.
 */
export async function useRunSystems(options: { metricsFile?: string } = {}): Promise<() => void> {
  const [{ observeRuns, writeRunEndsWith }, systems, { notifyOfRun }, metrics, { writeReport }] = await Promise.all([
    import('../runs/run-events.ts'),
    runSystems(),
    import('../notify/run-hooks.ts'),
    import('../metrics/run-metrics.ts'),
    import('../reports/report.ts'),
  ])
  if (options.metricsFile) metrics.setRunOutputOptions({ metricsFile: options.metricsFile })
  if (wired) return () => undefined
  wired = true
  // The report is written first at a run's end (the engine imports no report), then the observers hear of it.
  const unobserve = [
    writeRunEndsWith(writeReport),
    observeRuns(notifyOfRun),
    observeRuns((event) => metrics.publishRunMetrics(event, systems)),
  ]
  return () => {
    for (const stop of unobserve) stop()
    wired = false
  }
}
