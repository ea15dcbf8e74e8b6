/**
 * The canary's analysis over a soak on the lab (two hosts on 1.4.0, PostgreSQL, sshd, dpkg sandboxes,
 * supervisord, the manager emulator) and a real Prometheus scraping the hosts' health endpoint each
 * second: the dry run lists the probes and the queries the soak would make; the lab's fault release
 * 1.5.0+degrades passes every start-up check and is caught by the soak, rolled back, exit 4, the
 * metric named with both sides' figures; a Prometheus that does not answer makes the analysis
 * inconclusive, which `inconclusive: fail` fails (never a pass) and `inconclusive: wait` leaves to a
 * person (`runs abort` rolls it back); a healthy release passes and the
 * rollout goes on, its report drawing each metric canary against baseline. Soaks of seconds, set
 * through the same settings a user sets in minutes.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { runCliInProcess, startUpgradeLab, waitForPausedRun, type UpgradeLab } from '../recording/fixture.ts'
import { runSvcops } from '../support/cli.ts'
import { freePort, startPrometheus, waitForSeries, type RunningPrometheus } from './prometheus.ts'

let lab: UpgradeLab
let prometheus: RunningPrometheus
/** The hosts as Prometheus labels them (`instance`: host:port). */
let instances: string[]

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 2, version: '1.4.0', recordings: 3 })
  instances = lab.env().recording!.hosts.map((h) => new URL(h.url).host)
  // The recording service's seed endpoint without a token is its health, GET /: Prometheus' own
  // series of each scrape (`up`, `scrape_duration_seconds`) are what it gives of a host.
  prometheus = await startPrometheus(lab.dir, instances, '/')
  await waitForSeries(prometheus.url, 'up{job="lab"} == 1', instances.length)
}, 600_000)

afterAll(async () => {
  await prometheus?.stop()
  await lab?.stop()
})

/** A stack file beside the lab's with `svcops:upgrade.analysis` set to `analysis`. */
function stackWith(name: string, analysis: Record<string, unknown>): string {
  const doc = parseYaml(readFileSync(lab.envFile, 'utf8')) as { config: Record<string, unknown> }
  doc.config['svcops:upgrade'] = { analysis }
  const file = join(lab.dir, 'stacks', `Pulumi.${name}.yaml`)
  writeFileSync(file, toYaml(doc))
  return file
}

const upQuery = 'up{job="lab",instance="$instance"}'
const upMetric = { name: 'scrape-up', query: upQuery, direction: 'higher', tolerance: 0, critical: true }

const journalOf = (id: string) =>
  readFileSync(join(lab.runsDir, id, 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { step: string; status: string; host?: string; detail?: string; data?: Record<string, unknown> })

const runIdOf = (stdout: string): string => (JSON.parse(stdout) as { runId: string }).runId

describe('canary analysis over a soak, the recording service', () => {
  it('the dry run lists the soak before batch 1: the probes of each side and the Prometheus queries it would make', async () => {
    const file = stackWith('soak-plan', { interval: '2s', prometheus: { url: prometheus.url }, metrics: { recording: [upMetric] } })
    const dry = await runCliInProcess(['--stack-file', file, 'upgrade', 'recording', '--to', '1.5.0', '--soak', '1m', '--dry-run'])
    expect(dry.code, dry.stderr).toBe(0)
    const [canary, baseline] = lab.env().recording!.hosts
    expect(dry.stdout).toContain(`for 1m, every 2s: rec-1 (canary) against rec-2 (baseline)`)
    expect(dry.stdout).toContain(
      `probes (canary rec-1): GET ${canary!.url}/, GET ${canary!.url}/api/v1/content?limit=1, POST ${canary!.url}/api/v1/content`,
    )
    expect(dry.stdout).toContain(`probes (baseline rec-2): GET ${baseline!.url}/`)
    for (const [i, host] of ['rec-1', 'rec-2'].entries()) {
      const query = encodeURIComponent(`up{job="lab",instance="${instances[i]}"}`)
      expect(dry.stdout).toContain(
        `scrape-up (${i === 0 ? 'canary' : 'baseline'} ${host}): GET ${prometheus.url}/api/v1/query?query=${query}`,
      )
    }
    expect(dry.stdout).toContain('judge probe-errors: lower is better, tolerance 0 %, critical')
    expect(dry.stdout.indexOf('soak — ')).toBeGreaterThan(dry.stdout.indexOf('[rec-1] canary: verify-host'))
    expect(dry.stdout.indexOf('soak — ')).toBeLessThan(dry.stdout.indexOf('[rec-2] batch 1: stop'))
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0', 'rec-2': '1.4.0' })
  })

  it('a release whose API fails a while after its start-up checks is caught by the soak and rolled back (exit 4), the metric named with both sides', async () => {
    const file = stackWith('soak-degrades', { interval: '1s', minSamples: 5 })
    const run = await runCliInProcess([
      '--stack-file',
      file,
      '--json',
      'upgrade',
      'recording',
      '--to',
      '1.5.0+degrades',
      '--soak',
      '60s',
      '--yes',
    ])
    expect(run.code, run.stderr).toBe(4)
    expect(run.stderr).toMatch(
      /Canary analysis: the canary \(rec-1\) failed its analysis after \d+ samples: critical metric probe-errors: canary median 0\.\d+ against baseline median 0 \(lower is better; worse by 0\.\d+, allowed 0; p = 0\.\d+\)/,
    )
    const id = runIdOf(run.stdout)
    const journal = journalOf(id)
    // Every start-up check passed on the canary before the soak.
    expect(journal.some((e) => e.step === 'verify-host' && e.host === 'rec-1' && e.status === 'ok')).toBe(true)
    expect(journal.filter((e) => e.step === 'soak' && e.status !== 'start').map((e) => e.status)).toEqual(['failed'])
    expect(journal.some((e) => e.step === 'stop' && e.host === 'rec-2')).toBe(false)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0', 'rec-2': '1.4.0' })
    const html = readFileSync(join(lab.runsDir, id, 'report.html'), 'utf8')
    expect(html).toContain('Canary analysis')
    expect(html).toMatch(/<svg[^>]*aria-label="probe-errors: canary against baseline"/)
  })

  it('a Prometheus that does not answer makes the analysis inconclusive, never a pass: with inconclusive: fail the canary is rolled back', async () => {
    const silent = `http://127.0.0.1:${await freePort()}`
    const file = stackWith('soak-silent', {
      interval: '1s',
      minSamples: 3,
      prometheus: { url: silent },
      metrics: { recording: [upMetric] },
    })
    const run = await runCliInProcess(['--stack-file', file, '--json', 'upgrade', 'recording', '--to', '1.5.0', '--soak', '5s', '--yes'])
    expect(run.code, run.stderr).toBe(4)
    expect(run.stderr).toMatch(
      /Canary analysis: the canary's analysis \(rec-1\) was inconclusive: scrape-up: 0 canary and 0 baseline samples; at least 3 each are needed \(last: rec-\d: .*connection refused.*\); svcops:upgrade\.analysis\.inconclusive is fail\./,
    )
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0', 'rec-2': '1.4.0' })
  })

  it('an inconclusive analysis with inconclusive: wait waits for a person (the pause after the canary); aborted, the canary is rolled back', async () => {
    const silent = `http://127.0.0.1:${await freePort()}`
    const file = stackWith('soak-wait', {
      interval: '1s',
      minSamples: 3,
      inconclusive: 'wait',
      prometheus: { url: silent },
      metrics: { recording: [upMetric] },
    })
    let pid = 0
    const waiting = runSvcops(['--stack-file', file, 'upgrade', 'recording', '--to', '1.5.0', '--soak', '4s', '--yes'], {
      env: { SVCOPS_RUNS_DIR: lab.runsDir },
      onSpawn: (p) => (pid = p),
    })
    try {
      const id = await waitForPausedRun(lab.runsDir, [], waiting)
      const soak = journalOf(id).find((e) => e.step === 'soak' && e.status === 'ok')
      expect(soak?.data).toMatchObject({ outcome: 'inconclusive', score: 100, wait: true })
      const aborted = await runCliInProcess(['--stack-file', file, 'runs', 'abort', id])
      expect(aborted.code, aborted.stderr).toBe(0)
      const ended = await waiting
      expect(ended.code, ended.stderr).toBe(4)
      expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0', 'rec-2': '1.4.0' })
    } finally {
      if (pid)
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // it had ended
        }
    }
  }, 480_000)

  it('a healthy release passes the soak (the probes and Prometheus agree) and the rollout goes on', async () => {
    const file = stackWith('soak-healthy', {
      interval: '1s',
      minSamples: 5,
      prometheus: { url: prometheus.url },
      metrics: { recording: [upMetric] },
    })
    const run = await runCliInProcess(['--stack-file', file, '--json', 'upgrade', 'recording', '--to', '1.5.0', '--soak', '8s', '--yes'])
    expect(run.code, run.stderr).toBe(0)
    const journal = journalOf(runIdOf(run.stdout))
    const soak = journal.find((e) => e.step === 'soak' && e.status === 'ok')
    expect(soak?.data).toMatchObject({ outcome: 'pass', score: 100, wait: false })
    // Progress was journaled sample by sample (what runs watch shows).
    expect(
      journal.filter((e) => e.step === 'soak' && e.status === 'start' && e.detail?.startsWith('sample ')).length,
    ).toBeGreaterThanOrEqual(5)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0', 'rec-2': '1.5.0' })
  })
})
