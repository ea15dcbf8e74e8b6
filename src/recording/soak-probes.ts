/**
 * svcops' own probes of the recording service during a soak, on each side: the seed's post-upgrade
 * calls (Recording service, Versioning 5): `GET /` for health, `GET /api/v1/content?limit=1`, a
 * test recording written (`POST /api/v1/content`, on the verification's own channel, which exports
 * leave out) and read back in the list. Each interval gives, per instance, two readings: the share
 * of the probes that failed (`probe-errors`, critical) and the slowest probe's time in ms
 * (`probe-latency-ms`) when all answered.
 */
import { errorMessage } from '../core/errors.ts'
import { TEST_CHANNEL, type ContentApi } from './content-snapshot.ts'
import type { AnalysisSettings } from '../config/analysis.ts'
import type { MetricRule } from '../analysis/analysis-verdict.ts'
import type { AnalysisInstance, Reading, SampleGap, Sampler } from '../analysis/analysis-samplers.ts'

export const PROBE_ERRORS = 'probe-errors'
export const PROBE_LATENCY = 'probe-latency-ms'

/** The rules of the probes' two metrics, from the stack's `analysis.probes`. */
export function probeRules(settings: AnalysisSettings): MetricRule[] {
  return [
    { name: PROBE_ERRORS, direction: 'lower', tolerance: 0, floor: 0, critical: true },
    {
      name: PROBE_LATENCY,
      direction: 'lower',
      tolerance: settings.probes.latencyTolerance,
      floor: settings.probes.latencyFloorMs,
      critical: false,
    },
  ]
}

/** The probes of the recording service on `instances` (each instance's `name` is a target, `url` its API). */
export function recordingProbes(
  api: ContentApi,
  instances: Array<AnalysisInstance & { url: string }>,
  options: { runId: string; limit: number },
): Sampler {
  let round = 0
  return {
    describe: () =>
      instances.flatMap((i) => [
        `probes (${i.side} ${i.name}): GET ${i.url}/, GET ${i.url}/api/v1/content?limit=1, POST ${i.url}/api/v1/content (a test recording) and see it listed`,
      ]),
    async sample() {
      round += 1
      const readings: Reading[] = []
      const gaps: SampleGap[] = []
      await Promise.all(
        instances.map(async (i) => {
          const { failed, total, slowestMs } = await probeOnce(
            api,
            i.url,
            options.limit,
            `svcops soak run ${options.runId} on ${i.name} #${round}`,
          )
          readings.push({ metric: PROBE_ERRORS, side: i.side, instance: i.name, value: failed / total })
          if (failed === 0) readings.push({ metric: PROBE_LATENCY, side: i.side, instance: i.name, value: slowestMs })
        }),
      )
      return { readings, gaps }
    },
  }
}

/** One round of the three probes on one instance: how many failed, and the slowest one's time. */
async function probeOnce(
  api: ContentApi,
  url: string,
  limit: number,
  title: string,
): Promise<{ failed: number; total: number; slowestMs: number; errors: string[] }> {
  let failed = 0
  let slowestMs = 0
  const errors: string[] = []
  const timed = async (call: () => Promise<unknown>): Promise<void> => {
    const started = performance.now()
    try {
      await call()
      slowestMs = Math.max(slowestMs, performance.now() - started)
    } catch (error) {
      failed += 1
      errors.push(errorMessage(error))
    }
  }
  await timed(() => api.health(url))
  await timed(() => api.list(url, 1))
  await timed(async () => {
    const now = Math.floor(Date.now() / 1000)
    const created = await api.create(url, { channelName: TEST_CHANNEL, title, startTime: now, stopTime: now + 1 })
    // Read back, as the post-upgrade check does: listed within recording.contentLimit.
    const listed = await api.list(url, limit)
    const seen = listed.some((r) => (created.id !== undefined && created.id !== null ? r.id === created.id : r.title === title))
    if (!seen) throw new Error('the test recording was written but is not listed')
  })
  return { failed, total: 3, slowestMs: Math.round(slowestMs), errors }
}
