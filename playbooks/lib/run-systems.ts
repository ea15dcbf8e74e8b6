/**
 * What every command, and every playbook run as a script, that starts, continues or shows runs does
 * first: it makes the systems' descriptions known to the reports (src/runs/run-system.ts) and
 * registers the observers of runs — the webhooks (src/notify) and the environment's metrics
 * (src/metrics) — with the engine's run events. The edges (the CLI, a playbook's script) wire them;
 * the engine never imports them. Loaded on first use, so commands that run nothing start without them.
 */
let wired = false

/** Wires the systems and the observers of runs (once); `metricsFile`: where `--metrics-file` writes. */
export async function useRunSystems(options: { metricsFile?: string } = {}): Promise<void> {
  const [{ describeSystem }, { observeRuns }, { recordingDescription }, { liveDescription }, { notifyOfRun }, metrics] = await Promise.all([
    import('../../src/runs/system-description.ts'),
    import('../../src/runs/run-events.ts'),
    import('../../src/recording/recording-description.ts'),
    import('../../src/live/live-description.ts'),
    import('../../src/notify/run-hooks.ts'),
    import('../../src/metrics/run-metrics.ts'),
  ])
  if (options.metricsFile) metrics.setRunOutputOptions({ metricsFile: options.metricsFile })
  if (wired) return
  wired = true
  describeSystem(recordingDescription)
  describeSystem(liveDescription)
  observeRuns(notifyOfRun)
  observeRuns(metrics.publishRunMetrics)
}
