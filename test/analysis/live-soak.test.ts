/**
 * The live system's canary analysis across three hosts (`svcops lab up --live 7.0.0 --live-hosts 3`:
 * the controller on live-1, an ingest, a pipeline and a control panel on live-2 and on live-3, real
 * dpkg and supervisord over the lab's sshd). The lab's fault release 7.0.2 starts, connects and
 * passes every check, then its ingest's `svc_ingest_source_dropped_video_frames` (6.0's split of the
 * dropped frames) climbs. The seed's procedure stops every instance before the controller starts,
 * so during the ingest canary's soak the other ingest (live-3) is stopped: read directly from each
 * instance's /metrics, the baseline has no sample, the analysis is inconclusive (never a pass) and
 * every host is rolled back (exit 4). The dry run lists the reads the soak would make;
 * `--pause-after-canary` is accepted where a type has several instances.
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

const dir = mkdtempSync(join(tmpdir(), 'svcops-live-soak-'))
const labDir = join(dir, 'lab')
const stacksDir = join(dir, 'stacks')
const runsDir = join(dir, 'runs')
const envFile = join(stacksDir, 'Pulumi.lab.yaml')
/** A run on seven instances over three hosts, with a soak: slower when the machine is busy, never wrong. */
const RUN_TIMEOUT_MS = 480_000

const svcops = (args: string[]): Promise<CliRun> =>
  runSvcopsInProcess(['--stack-file', envFile, ...args], { env: { SVCOPS_RUNS_DIR: runsDir } })

beforeAll(async () => {
  await labUp({ dir: labDir, stacksDir, hosts: 0, live: '7.0.0', liveHosts: 3 })
  const doc = parseYaml(readFileSync(envFile, 'utf8')) as { config: Record<string, unknown> }
  doc.config['svcops:live'] = { ...(doc.config['svcops:live'] as object), connectTimeoutSeconds: 8 }
  doc.config['svcops:upgrade'] = {
    analysis: {
      interval: '1s',
      minSamples: 5,
      metrics: {
        ingest: [
          {
            name: 'dropped-video-frames',
            metric: 'svc_ingest_source_dropped_video_frames',
            counter: true,
            direction: 'lower',
            tolerance: 0,
            critical: true,
          },
        ],
      },
    },
  }
  writeFileSync(envFile, toYaml(doc))
}, 300_000)

afterAll(async () => {
  await labDown({ dir: labDir, stacksDir })
})

describe('canary analysis over a soak, the live system across hosts', () => {
  it('the dry run lists the soak of the ingest canary: each instance’s /metrics it would read', async () => {
    const live = liveHostsSection(loadEnvironmentFile(envFile, 'lab'))
    const url = (name: string) => `${unitUrlOf(live)(liveUnits(live).find((u) => u.name === name)!)}/metrics`
    const dry = await svcops(['upgrade', 'live', '--to', '7.0.2', '--soak', '40s', '--pause-after-canary', '--dry-run'])
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toContain('soak-ingest — soak: the canary against the hosts still on the old release')
    expect(dry.stdout).toContain('for 40s, every 1s: live-2/ingest (canary) against live-3/ingest (baseline)')
    expect(dry.stdout).toContain(
      `dropped-video-frames (canary live-2/ingest): GET ${url('live-2/ingest')}, svc_ingest_source_dropped_video_frames per second`,
    )
    expect(dry.stdout).toContain(
      `dropped-video-frames (baseline live-3/ingest): GET ${url('live-3/ingest')}, svc_ingest_source_dropped_video_frames per second`,
    )
    // Types without a declared metric are not soaked.
    expect(dry.stdout).not.toContain('soak-pipeline')
  })

  it(
    "7.0.2's ingest canary: the seed's procedure has stopped the other ingest, so read directly the soak has no baseline: inconclusive, never a pass, every host rolled back (exit 4)",
    async () => {
      const run = await svcops(['--json', 'upgrade', 'live', '--to', '7.0.2', '--soak', '40s', '--yes'])
      expect(run.code, run.stderr).toBe(4)
      expect(run.stderr).toMatch(
        /Canary analysis: the canary's analysis \(live-2\/ingest\) was inconclusive: dropped-video-frames: \d+ canary and 0 baseline samples; at least 5 each are needed \(last: live-3\/ingest: GET http:\/\/127\.0\.0\.1:\d+\/metrics failed: connection refused\.\); svcops:upgrade\.analysis\.inconclusive is fail\./,
      )
      const verify = await svcops(['verify', 'live', '--json'])
      expect(verify.code, verify.stderr).toBe(0)
      const components = (JSON.parse(verify.stdout) as { components: Array<{ component: string; ok: boolean }> }).components
      expect(components.every((c) => c.ok)).toBe(true)
    },
    RUN_TIMEOUT_MS,
  )
})
