/**
 * The live production system's upgrade never makes things worse, on a real live lab host: an
 * upgrade to the release every component already runs changes nothing (exit 0, the same processes,
 * a `no-op` run); one to an older release is refused before anything (exit 2), naming the rollback;
 * a rollback whose previous release's package left the host refuses before its first stop (exit 5).
 */
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { componentPackage } from '../../src/live/layout.ts'
import { gateIds, LIVE_COMPONENTS, PRODUCT, startLiveLab, type LiveLab } from '../support/live-lab.ts'

let lab: LiveLab

/** The `--ack` of every gate between two releases (none for a patch release). */
function acks(from: string, to: string): string[] {
  const ids = gateIds(lab.live(), from, to)
  return ids.length ? ['--ack', ids.join(',')] : []
}

/** Each component's process id, as supervisord reports it. */
function pids(): string[] {
  return LIVE_COMPONENTS.map((c) => lab.supervisorctl(['pid', componentPackage(PRODUCT, c)]).trim())
}

/** The phase of the newest run, from `svcops runs list --json`. */
async function newestPhase(): Promise<string | undefined> {
  const list = await lab.svcops(['runs', 'list', '--json'])
  const runs = JSON.parse(list.stdout) as { runs?: { phase: string }[] } | { phase: string }[]
  return (Array.isArray(runs) ? runs : (runs.runs ?? []))[0]?.phase
}

beforeAll(async () => {
  lab = await startLiveLab({ version: '6.0.0' })
  const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--yes', ...acks('6.0.0', '7.0.0')])
  expect(run.code, run.stderr).toBe(0)
  expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

describe('no-op and downgrade', () => {
  it('upgrade live --to 7.0.0 again changes nothing: exit 0, "Already on 7.0.0", the same pids, a no-op run', async () => {
    const before = pids()
    expect(before.every((p) => /^\d+$/.test(p) && p !== '0')).toBe(true)
    const files = lab.snapshot()
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--yes'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout + run.stderr).toContain('Already on 7.0.0')
    expect(pids()).toEqual(before)
    expect(lab.snapshot()).toEqual(files)
    expect(await newestPhase()).toBe('no-op')
  })

  it('upgrade live --to an older release refuses before anything (exit 2), naming the rollback', async () => {
    const before = pids()
    const files = lab.snapshot()
    const run = await lab.svcops(['upgrade', 'live', '--to', '6.0.0', '--yes'])
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--to: 6.0.0 is older than what')
    expect(run.stderr).toContain('svcops rollback live --env lab')
    expect(pids()).toEqual(before)
    expect(lab.snapshot()).toEqual(files)
    expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
  })
})

describe('preconditions before the first stop of a rollback', () => {
  it("a rollback whose previous package left the host's cache refuses (exit 5): nothing stopped, every component on 7.0.0", async () => {
    const cached = '/var/cache/svcops/packages/svc-ingest_6.0.0_all.deb'
    expect(lab.read(cached)).toBeDefined()
    rmSync(lab.file(cached))
    const before = pids()
    const files = lab.snapshot()

    const dry = await lab.svcops(['rollback', 'live', '--dry-run'])
    expect(dry.code).toBe(5)
    expect(dry.stderr + dry.stdout).toContain('svc-ingest 6.0.0 is not in the package cache')

    const run = await lab.svcops(['rollback', 'live', '--yes'])
    expect(run.code).toBe(5)
    expect(run.stderr).toMatch(
      /Nothing changed: the rollback of run \S+ would not get through — .*svc-ingest 6\.0\.0 is not in the package cache/,
    )
    expect(run.stderr).toMatch(/svcops rollback live --env lab --run \S+/)
    expect(pids()).toEqual(before)
    expect(lab.snapshot()).toEqual(files)
    expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
    for (const c of LIVE_COMPONENTS) expect(lab.state(c)).toBe('RUNNING')
  })
})
