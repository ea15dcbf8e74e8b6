/**
 * The live system's canary analysis across three hosts (`svcops lab up --live 6.0.0 --live-hosts 3`:
 * the controller on live-1, an ingest, a pipeline and a control panel on live-2 and on live-3, real
 * dpkg and supervisord over the lab's sshd) and a real Prometheus scraping every instance's /metrics
 * each second. The seed's procedure stops every instance before the controller starts, so during a
 * canary's soak its type's other instances are stopped: the run samples each soaked type before the
 * stop (`soak-baseline`) and judges the canary against those figures. A healthy release (6.0.0 ->
 * 7.0.0, judged through Prometheus on the seed's 6.0 frame counters and the pipeline's
 * `video_frames_in_queue`) passes and the rollout goes on; the lab's fault release 7.0.2, whose
 * ingest passes every start-up check and then drops video frames, is caught (read directly from
 * each instance's /metrics): FAIL naming the metric with both medians, every host rolled back,
 * exit 4. The dry run lists the reads the baseline and the soak would make. (`--soak` where no type
 * has a canary, Kubernetes included: test/analysis/soak-refused.test.ts.)
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { labDown, labUp } from '../../src/lab/lab.ts'
import { liveHostsSection } from '../../src/live/live-platforms.ts'
import { unitUrlOf } from '../../src/live/hosts/live-hosts-platform.ts'
import { liveUnits } from '../../src/live/live-placement.ts'
import { runSvcopsInProcess, type CliRun } from '../support/cli.ts'
import { gateIds } from '../support/live-lab.ts'
import { startPrometheus, waitForSeries, type RunningPrometheus } from './prometheus.ts'

const dir = mkdtempSync(join(tmpdir(), 'svcops-live-soak-'))
const labDir = join(dir, 'lab')
const stacksDir = join(dir, 'stacks')
const runsDir = join(dir, 'runs')
const envFile = join(stacksDir, 'Pulumi.lab.yaml')
/** A run on seven instances over three hosts, with a baseline and a soak: slower when the machine is busy, never wrong. */
const RUN_TIMEOUT_MS = 480_000

let prometheus: RunningPrometheus
let original: { config: Record<string, unknown> }

const live = () => liveHostsSection(loadEnvironmentFile(envFile, 'lab'))
const metricsUrl = (name: string) => `${unitUrlOf(live())(liveUnits(live()).find((u) => u.name === name)!)}/metrics`

/** A stack file beside the lab's with `svcops:upgrade.analysis` set to `analysis`. */
function stackWith(name: string, analysis: Record<string, unknown>): string {
  const doc = structuredClone(original)
  doc.config['svcops:upgrade'] = { analysis }
  const file = join(stacksDir, `Pulumi.${name}.yaml`)
  writeFileSync(file, toYaml(doc))
  return file
}

const svcops = (file: string, args: string[]): Promise<CliRun> =>
  runSvcopsInProcess(['--stack-file', file, ...args], { env: { SVCOPS_RUNS_DIR: runsDir } })

/** The ingest's dropped video frames (6.0's split), read from each instance's /metrics. */
const droppedDirect = {
  name: 'dropped-video-frames',
  metric: 'svc_ingest_source_dropped_video_frames',
  counter: true,
  direction: 'lower',
  tolerance: 0,
  critical: true,
}

/** The seed's live metrics asked of Prometheus: the ingest's 6.0 frame counters, the pipeline's queue (4.0's name). */
const throughPrometheus = () => ({
  interval: '1s',
  minSamples: 5,
  prometheus: { url: prometheus.url },
  metrics: {
    ingest: ['dropped_video', 'dropped_audio', 'lost_video', 'duplicated_video'].map((m) => ({
      name: m.replace('_', '-') + '-frames',
      query: `sum(svc_ingest_source_${m}_frames{instance="$instance"})`,
      counter: true,
      tolerance: 0,
      floor: 1,
      critical: m === 'dropped_video',
    })),
    pipeline: [{ name: 'queue', query: 'sum(svc_video_frames_in_queue{instance="$instance"})', tolerance: 0.5, floor: 5 }],
  },
})

const journalOf = (id: string) =>
  readFileSync(join(runsDir, id, 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { step: string; status: string; host?: string; detail?: string; data?: Record<string, unknown> })

const runIdOf = (stdout: string): string => (JSON.parse(stdout) as { runId: string }).runId

beforeAll(async () => {
  await labUp({ dir: labDir, stacksDir, hosts: 0, live: '6.0.0', liveHosts: 3 })
  original = parseYaml(readFileSync(envFile, 'utf8')) as { config: Record<string, unknown> }
  original.config['svcops:live'] = { ...(original.config['svcops:live'] as object), connectTimeoutSeconds: 8 }
  const targets = liveUnits(live())
    .filter((u) => u.component !== 'system-controller')
    .map((u) => new URL(unitUrlOf(live())(u)).host)
  prometheus = await startPrometheus(dir, targets, '/metrics')
  await waitForSeries(prometheus.url, 'up{job="lab"} == 1', targets.length)
}, 300_000)

afterAll(async () => {
  await prometheus?.stop()
  await labDown({ dir: labDir, stacksDir })
})

describe('canary analysis over a soak, the live system across hosts', () => {
  it('the dry run lists the baseline before the stop and the soak of the ingest canary against it: each read it would make', async () => {
    const file = stackWith('soak-plan', { interval: '1s', metrics: { ingest: [droppedDirect] } })
    const acks = gateIds(live(), '6.0.0', '7.0.0').join(',')
    const dry = await svcops(file, [
      'upgrade',
      'live',
      '--to',
      '7.0.0',
      '--ack',
      acks,
      '--soak',
      '40s',
      '--pause-after-canary',
      '--dry-run',
    ])
    expect(dry.code, dry.stderr).toBe(0)
    const out = dry.stdout
    expect(out).toContain('for 40s, every 1s: live-2/ingest, live-3/ingest (baseline)')
    for (const name of ['live-2/ingest', 'live-3/ingest'])
      expect(out).toContain(
        `ingest/dropped-video-frames (baseline ${name}): GET ${metricsUrl(name)}, svc_ingest_source_dropped_video_frames per second`,
      )
    expect(out.indexOf('soak-baseline — ')).toBeLessThan(out.indexOf('stop —'))
    // The ingest canary against its type's figures from before the stop: only the canary is read during the soak.
    expect(out).toContain(
      'for 40s, every 1s: live-2/ingest (canary) against live-2/ingest, live-3/ingest before the stop, 40 samples (baseline)',
    )
    expect(out).toContain(
      `dropped-video-frames (canary live-2/ingest): GET ${metricsUrl('live-2/ingest')}, svc_ingest_source_dropped_video_frames per second`,
    )
    expect(out).not.toMatch(/[^/]dropped-video-frames \(baseline live-3\/ingest\)/)
    // Types without a declared metric are neither sampled nor soaked.
    expect(out).not.toContain('soak-pipeline')
  })

  it(
    "a healthy release passes, judged through Prometheus on the seed's live metrics against the baseline taken before the stop; the rollout goes on",
    async () => {
      const file = stackWith('soak-healthy', throughPrometheus())
      const acks = gateIds(live(), '6.0.0', '7.0.0').join(',')
      const run = await svcops(file, ['--json', 'upgrade', 'live', '--to', '7.0.0', '--ack', acks, '--soak', '12s', '--yes'])
      expect(run.code, run.stderr).toBe(0)
      const journal = journalOf(runIdOf(run.stdout))
      const baseline = journal.find((e) => e.step === 'soak-baseline' && e.status === 'ok')
      const groups = baseline?.data?.groups as Record<string, { instances: string[]; values: Record<string, number[]> }>
      expect(groups.ingest?.instances).toEqual(['live-2/ingest', 'live-3/ingest'])
      expect(groups.ingest?.values['dropped-video-frames']?.length).toBeGreaterThanOrEqual(5)
      expect(groups.pipeline?.values.queue?.length).toBeGreaterThanOrEqual(5)
      // Sampled while every instance still ran the old release: before the first stop.
      const index = (step: string) => journal.findIndex((e) => e.step === step)
      expect(index('soak-baseline')).toBeLessThan(index('stop'))
      for (const step of ['soak-ingest', 'soak-pipeline'])
        expect(journal.find((e) => e.step === step && e.status === 'ok')?.data).toMatchObject({ outcome: 'pass', score: 100, wait: false })
      const verify = await svcops(file, ['verify', 'live', '--json'])
      expect(verify.code, verify.stderr).toBe(0)
    },
    RUN_TIMEOUT_MS,
  )

  it(
    "7.0.2's ingest canary drops video frames a while after its checks pass: the soak fails it against the baseline from before the stop, naming both medians; every host rolled back (exit 4)",
    async () => {
      const file = stackWith('soak-fault', { interval: '1s', minSamples: 5, metrics: { ingest: [droppedDirect] } })
      const run = await svcops(file, ['--json', 'upgrade', 'live', '--to', '7.0.2', '--soak', '30s', '--yes'])
      expect(run.code, run.stderr).toBe(4)
      expect(run.stderr).toMatch(
        /Canary analysis: the canary \(live-2\/ingest\) failed its analysis after \d+ samples: critical metric dropped-video-frames: canary median [\d.]+ against baseline median 0 \(lower is better; worse by [\d.]+, allowed 0; p = 0\.\d+\)/,
      )
      const journal = journalOf(runIdOf(run.stdout))
      expect(journal.some((e) => e.step === 'check' && e.host === 'live-2/ingest' && e.status === 'ok')).toBe(true)
      expect(journal.filter((e) => e.step === 'soak-ingest' && e.status !== 'start').map((e) => e.status)).toEqual(['failed'])
      const verify = await svcops(file, ['verify', 'live', '--json'])
      expect(verify.code, verify.stderr).toBe(0)
      const components = (JSON.parse(verify.stdout) as { components: Array<{ component: string; ok: boolean }> }).components
      expect(components.every((c) => c.ok)).toBe(true)
    },
    RUN_TIMEOUT_MS,
  )
})
