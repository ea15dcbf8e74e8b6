/**
 * The live production system spread over three hosts (`svcops lab up --live 5.2.0 --live-weak-psk
 * --live-hosts 3`: the system controller on live-1, an ingest, a pipeline and a control panel on
 * live-2 and on live-3, each host its own sandbox with real dpkg and supervisord, all reached over
 * the lab's sshd), driven as an operator does, through `svcops`:
 *
 *   - each instance connects to the controller under its own name and `verify live` checks all six;
 *   - the dry run upgrades the controller alone and each type's instances as a canary, then a batch;
 *   - 5.2.0 -> 6.0.0 replaces the weak PSK with one new PSK in the settings file on live-1 and in
 *     every instance's environment on live-2 and live-3;
 *   - an upgrade into the fault release 7.0.1 (its instances never connect) fails on the ingest
 *     canary, installs nothing on the other ingest, and rolls every host back (exit 4);
 *   - with --max-fail 1, a control panel on live-3 whose port another process took is stopped, the
 *     others upgraded, the run failed naming it (exit 1); `rollback live --run ID` puts every host back.
 *
 * A run killed at each step boundary across the three hosts, then resumed, rolled back, or resumed
 * and rolled back, is the crash matrix's (test/runs/crash-matrix-live.test.ts, "across three
 * hosts"); the real SIGKILLs of a live run are test/live/resume-sigkill.test.ts's.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeFileSync } from 'node:fs'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { liveHostsSection } from '../../src/live/live-platforms.ts'
import type { LiveConfig } from '../../src/config/schema.ts'
import { labDown, labUp } from '../../src/lab/lab.ts'
import { LIVE_LOCK_PATH } from '../../src/live/hosts/live-hosts-platform.ts'
import { envValue } from '../../src/live/hosts/host-files.ts'
import { componentEnvFile, componentPackage, productOf, settingsCandidates } from '../../src/live/layout.ts'
import { liveUnits, placedHosts } from '../../src/live/live-placement.ts'
import { listRuns } from '../../src/runs/journal.ts'
import { runSvcopsInProcess, type CliRun } from '../support/cli.ts'
import { gateIds } from '../support/live-lab.ts'

const dir = mkdtempSync(join(tmpdir(), 'svcops-live-hosts-'))
const labDir = join(dir, 'lab')
const stacksDir = join(dir, 'stacks')
const runsDir = join(dir, 'runs')
const envFile = join(stacksDir, 'Pulumi.lab.yaml')
const outputs: string[] = []
const seen = new Set<string>()

const live = (): LiveConfig => liveHostsSection(loadEnvironmentFile(envFile, 'lab'))
const rootOf = (host: string): string => placedHosts(live()).find((h) => h.config.name === host)?.config.root ?? ''
const read = (host: string, path: string): string | undefined => {
  const file = join(rootOf(host), path)
  return existsSync(file) ? readFileSync(file, 'utf8') : undefined
}
const PSK_VARIABLE = 'SVC_SYSTEM_CONTROLLER_PSK'
/** A test that runs svcops two or three times on seven instances: slower when the machine is busy, never wrong. */
const RUN_TIMEOUT_MS = 480_000

/** Every settings and environment file of every host, by `host:path` (absent ones undefined); every PSK seen is kept. */
function snapshot(): Record<string, string | undefined> {
  const product = productOf(live())
  const files: Record<string, string | undefined> = {}
  for (const path of settingsCandidates(live())) files[`live-1:${path}`] = read('live-1', path)
  for (const u of liveUnits(live()))
    files[`${u.host}:${componentEnvFile(product, u.component)}`] = read(u.host, componentEnvFile(product, u.component))
  for (const [key, text] of Object.entries(files)) {
    if (!text) continue
    const psk = key.endsWith('.json') ? (JSON.parse(text) as { psk?: string }).psk : envValue(text, PSK_VARIABLE)
    if (psk) seen.add(psk)
  }
  return files
}

/** The installed release of every instance, by unit name, read with dpkg on its host. */
function versions(): Record<string, string> {
  const product = productOf(live())
  return Object.fromEntries(
    liveUnits(live()).map((u) => [
      u.name,
      execFileSync(
        'dpkg-query',
        [`--admindir=${join(rootOf(u.host), 'var/lib/dpkg')}`, '-W', '-f=${Version}', componentPackage(product, u.component)],
        {
          encoding: 'utf8',
        },
      ).trim(),
    ]),
  )
}

function allOn(version: string): Record<string, string> {
  return Object.fromEntries(liveUnits(live()).map((u) => [u.name, version]))
}

async function svcops(args: string[]): Promise<CliRun> {
  snapshot()
  const run = await runSvcopsInProcess(['--stack-file', envFile, ...args], { env: { SVCOPS_RUNS_DIR: runsDir } })
  outputs.push(run.stdout, run.stderr)
  snapshot()
  return run
}

async function expectWhole(version: string): Promise<void> {
  expect(versions()).toEqual(allOn(version))
  const verify = await svcops(['verify', 'live'])
  expect(verify.code, verify.stdout + verify.stderr).toBe(0)
  expect(read('live-1', LIVE_LOCK_PATH)).toBeUndefined()
}

function journalOf(id: string): Array<{ step: string; status: string; host?: string }> {
  return readFileSync(join(runsDir, id, 'journal.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { step: string; status: string; host?: string })
}

/**
 * Listens on 127.0.0.1:`port` as soon as whoever holds it lets it go (retrying every 50 ms), until
 * released. It answers nothing: a connection (a check reading `/metrics`) is closed at once.
 */
function takeWhenFree(port: number): { release: () => Promise<void> } {
  const server = createServer((socket) => socket.destroy())
  let released = false
  const attempt = (): void => {
    if (released) return
    server.once('error', () => setTimeout(attempt, 50))
    server.listen(port, '127.0.0.1')
  }
  attempt()
  return {
    release: () =>
      new Promise((resolve) => {
        released = true
        server.close(() => resolve())
      }),
  }
}

beforeAll(async () => {
  process.env.SVCOPS_LAB_PACKAGES_DIR ??= join(tmpdir(), 'svcops-test-lab-packages')
  await labUp({ dir: labDir, stacksDir, hosts: 0, live: '5.2.0', liveWeakPsk: true, liveHosts: 3 })
  const doc = parseYaml(readFileSync(envFile, 'utf8')) as { config: Record<string, unknown> }
  doc.config['svcops:live'] = { ...(doc.config['svcops:live'] as object), connectTimeoutSeconds: 8 }
  writeFileSync(envFile, toYaml(doc))
}, 240_000)

afterAll(async () => {
  await labDown({ dir: labDir, stacksDir })
})

describe('the live system across three hosts', () => {
  it('lab up --live-hosts 3 puts the controller on live-1 and an instance of each other type on live-2 and live-3, each connected by its name', async () => {
    expect(liveUnits(live()).map((u) => u.name)).toEqual([
      'live-1/system-controller',
      'live-2/ingest',
      'live-3/ingest',
      'live-2/pipeline',
      'live-3/pipeline',
      'live-2/control-panel',
      'live-3/control-panel',
    ])
    expect(versions()).toEqual(allOn('5.2.0'))
    const verify = await svcops(['verify', 'live', '--json'])
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    const result = JSON.parse(verify.stdout) as { components: Array<{ component: string; ok: boolean }> }
    expect(result.components.map((c) => `${c.component} ${c.ok}`)).toEqual(liveUnits(live()).map((u) => `${u.name} true`))
  })

  it('plans the controller alone, then each type as a canary and a batch of --batch', async () => {
    const plan = await svcops([
      'upgrade',
      'live',
      '--to',
      '6.0.0',
      '--ack',
      gateIds(live(), '5.2.0', '6.0.0').join(','),
      '--dry-run',
      '--json',
    ])
    expect(plan.code, plan.stdout + plan.stderr).toBe(0)
    const shown = JSON.parse(plan.stdout) as {
      steps: Array<{ step: string; host?: string; batch?: string }>
      rollout: Array<{ component: string; batches: string[][] }>
    }
    expect(shown.rollout).toEqual(
      ['ingest', 'pipeline', 'control-panel'].map((c) => ({ component: c, batches: [[`live-2/${c}`], [`live-3/${c}`]] })),
    )
    const steps = shown.steps
    expect(steps.filter((s) => s.step === 'install').map((s) => `${s.host ?? ''} ${s.batch ?? '-'}`)).toEqual([
      'live-1/system-controller -',
      'live-2/ingest canary',
      'live-3/ingest batch 1',
      'live-2/pipeline canary',
      'live-3/pipeline batch 1',
      'live-2/control-panel canary',
      'live-3/control-panel batch 1',
    ])
    expect(steps.filter((s) => s.step === 'stop').map((s) => s.host)).toEqual(
      liveUnits(live())
        .map((u) => u.name)
        .reverse(),
    )
  })

  it(
    '5.2.0 -> 6.0.0 replaces the weak PSK with one new PSK in the settings file on live-1 and every instance on live-2 and live-3',
    async () => {
      const weak = JSON.parse(read('live-1', '/opt/svc/system-controller/etc/svc_sc_settings.json') ?? '{}') as { psk?: string }
      const metricsFile = join(dir, 'upgrade.prom')
      const up = await svcops([
        'upgrade',
        'live',
        '--to',
        '6.0.0',
        '--yes',
        '--ack',
        gateIds(live(), '5.2.0', '6.0.0').join(','),
        '--metrics-file',
        metricsFile,
      ])
      expect(up.code, up.stdout + up.stderr).toBe(0)
      // The run's metrics, as --metrics-file writes them for the recording service's runs too.
      expect(readFileSync(metricsFile, 'utf8')).toMatch(
        /^svcops_run_last_outcome\{environment="[\w-]+",kind="upgrade",outcome="succeeded"\} 1$/m,
      )
      const psk = (JSON.parse(read('live-1', '/etc/opt/svc/svc_sc_settings.json') ?? '{}') as { psk?: string }).psk
      expect(psk).toBeDefined()
      expect(psk).not.toBe(weak.psk)
      const product = productOf(live())
      for (const u of liveUnits(live()).filter((x) => x.component !== 'system-controller'))
        expect(envValue(read(u.host, componentEnvFile(product, u.component)), PSK_VARIABLE), u.name).toBe(psk)
      await expectWhole('6.0.0')
    },
    RUN_TIMEOUT_MS,
  )

  it(
    'an upgrade into 7.0.1, whose instances never connect, stops at the ingest canary and rolls every host back (exit 4)',
    async () => {
      const before = snapshot()
      const up = await svcops(['upgrade', 'live', '--to', '7.0.1', '--yes', '--ack', gateIds(live(), '6.0.0', '7.0.1').join(',')])
      expect(up.code, up.stdout + up.stderr).toBe(4)
      const id = listRuns(runsDir)[0]?.id ?? ''
      const installed = journalOf(id)
        .filter((e) => e.step === 'install' && e.status === 'ok')
        .map((e) => e.host)
      expect(installed).toEqual(['live-1/system-controller', 'live-2/ingest'])
      await expectWhole('6.0.0')
      expect(snapshot()).toEqual(before)
    },
    RUN_TIMEOUT_MS,
  )

  it(
    '--max-fail 1: the control panel on live-3 that cannot bind its port is stopped, every other instance upgraded, the run failed naming it',
    async () => {
      const before = snapshot()
      const from = versions()['live-1/system-controller'] ?? ''
      const port = placedHosts(live()).find((h) => h.config.name === 'live-3')?.ports['control-panel'] ?? 0
      // Another process takes the port as soon as the old control panel lets it go: the new one cannot bind it and exits.
      const squatter = takeWhenFree(port)
      let id = ''
      try {
        const up = await svcops([
          'upgrade',
          'live',
          '--to',
          '7.0.0',
          '--yes',
          '--max-fail',
          '1',
          '--ack',
          gateIds(live(), from, '7.0.0').join(','),
        ])
        expect(up.code, up.stdout + up.stderr).toBe(1)
        expect(up.stdout + up.stderr).toMatch(
          /Upgraded 6 of 7 instances to 7\.0\.0; live-3\/control-panel failed and stopped \(within --max-fail 1\)/,
        )
        id = listRuns(runsDir)[0]?.id ?? ''
        expect(listRuns(runsDir)[0]?.phase).toBe('failed')
        expect(versions()).toEqual(allOn('7.0.0'))
        expect(
          journalOf(id)
            .filter((e) => e.step === 'verify')
            .map((e) => e.status),
        ).toEqual(['start', 'ok'])
      } finally {
        await squatter.release()
      }
      const metricsFile = join(dir, 'rollback.prom')
      const rolled = await svcops(['rollback', 'live', '--yes', '--run', id, '--metrics-file', metricsFile])
      expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0)
      expect(readFileSync(metricsFile, 'utf8')).toMatch(
        /^svcops_run_last_outcome\{environment="[\w-]+",kind="upgrade",outcome="rolled-back"\} 1$/m,
      )
      await expectWhole(from)
      expect(snapshot()).toEqual(before)
    },
    RUN_TIMEOUT_MS,
  )

  it('shows no PSK in any output, journal or report', () => {
    expect(seen.size).toBeGreaterThan(1)
    const files = listRuns(runsDir).flatMap((r) =>
      ['run.json', 'journal.jsonl', 'report.json', 'report.md']
        .map((f) => join(runsDir, r.id, f))
        .filter(existsSync)
        .map((f) => readFileSync(f, 'utf8')),
    )
    for (const text of [...outputs, ...files]) for (const psk of seen) expect(text.includes(psk)).toBe(false)
  })
})
