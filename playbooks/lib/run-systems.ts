/**
 * What every command, and every playbook run as a script, that starts, continues or shows runs does
 * first: it makes the systems' descriptions known to the reports (src/runs/run-system.ts) and
 * registers the writer of each run's report (src/reports) and the observers of runs — the webhooks (src/notify) and the environment's metrics
 * (src/metrics) — with the engine's run events. The edges (the CLI, a playbook's script) wire them;
 * the engine never imports them. Loaded on first use, so commands that run nothing start without them.
 */
let wired = false

/**
 * Wires the systems and the observers of runs (once); `metricsFile`: where `--metrics-file` writes.
 * Returns the function that unwires what this call wired (nothing when the process was wired
 * before): a command exits instead, but a test file in a worker other files share must not leave
 * its observers to hear their runs.
 */
export async function useRunSystems(options: { metricsFile?: string } = {}): Promise<() => void> {
  const [
    { describeSystem, describedSystems, restoreDescribedSystems },
    { observeRuns, writeRunEndsWith },
    descriptions,
    { notifyOfRun },
    metrics,
    { writeReport },
  ] = await Promise.all([
    import('../../src/runs/system-description.ts'),
    import('../../src/runs/run-events.ts'),
    import('./system-folders.ts').then((folders) => folders.systemDescriptions()),
    import('../../src/notify/run-hooks.ts'),
    import('../../src/metrics/run-metrics.ts'),
    import('../../src/reports/report.ts'),
  ])
  if (options.metricsFile) metrics.setRunOutputOptions({ metricsFile: options.metricsFile })
  if (wired) return () => undefined
  wired = true
  const before = describedSystems()
  for (const description of descriptions) describeSystem(description)
  // The report is written first at a run's end (the engine imports no report), then the observers hear of it.
  const unobserve = [writeRunEndsWith(writeReport), observeRuns(notifyOfRun), observeRuns(metrics.publishRunMetrics)]
  return () => {
    for (const stop of unobserve) stop()
    restoreDescribedSystems(before)
    wired = false
  }
}
