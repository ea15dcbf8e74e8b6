/**
 * `svcops verify live` is a run of the live system started through the one run path: one record of
 * kind verify, its report, a line in `runs list`. It only reads and takes no lock (docs/live.md):
 * beside an upgrade holding the environment's lock it runs and leaves that lock to its holder. A
 * failed check fails the run naming it (exit 1, the sentence on stderr as before).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { lockLiveEnvironment } from '../../src/live/live-context.ts'
import { startLiveLab, type LiveLab } from '../support/live-lab.ts'

let lab: LiveLab

beforeAll(async () => {
  lab = await startLiveLab({ version: '6.0.0', cli: 'in-process' })
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

interface Listed {
  id: string
  kind: string
  system: string
  phase: string
  cause?: string
}

async function listedRun(id: string): Promise<Listed | undefined> {
  const list = await lab.svcops(['runs', 'list', '--json'])
  const runs = JSON.parse(list.stdout) as { runs?: Listed[] } | Listed[]
  return (Array.isArray(runs) ? runs : (runs.runs ?? [])).find((r) => r.id === id)
}

describe('svcops verify live as a run', () => {
  it('is one record of kind verify with its report, and runs beside an upgrade holding the lock, leaving it held', async () => {
    const env = loadEnvironmentFile(lab.envFile, 'lab')
    const upgrade = { id: 'held-by-an-upgrade', holder: 'test', startedAt: new Date().toISOString() }
    const lock = await lockLiveEnvironment(env, upgrade, {})
    try {
      const out = await lab.svcops(['verify', 'live', '--json'])
      expect(out.code, out.stderr).toBe(0)
      const v = JSON.parse(out.stdout) as { ok: boolean; runId: string; components: unknown[] }
      expect(v.ok).toBe(true)
      expect(v.components.length).toBeGreaterThan(0)
      expect(await listedRun(v.runId)).toMatchObject({ kind: 'verify', system: 'live', phase: 'succeeded' })
      expect(existsSync(join(lab.runsDir, v.runId, 'report.json'))).toBe(true)
      // The upgrade still holds it: another run is refused, naming it.
      const other = { id: 'another-upgrade', holder: 'test', startedAt: new Date().toISOString() }
      await expect(lockLiveEnvironment(env, other, {})).rejects.toThrow(/held-by-an-upgrade/)
    } finally {
      await lock.release()
    }
  })

  it('fails its run naming the failed check: exit 1, the sentence on stderr', async () => {
    lab.supervisorctl(['stop', 'svc-ingest'])
    try {
      const out = await lab.svcops(['verify', 'live', '--json'])
      expect(out.code).toBe(1)
      const v = JSON.parse(out.stdout) as { ok: boolean; runId: string }
      expect(v.ok).toBe(false)
      expect(out.stderr).toMatch(/svcops: The live production system of 'lab' fails \d+ checks?: ingest: /)
      const listed = await listedRun(v.runId)
      expect(listed).toMatchObject({ kind: 'verify', system: 'live', phase: 'failed' })
      expect(listed?.cause).toContain('ingest: ')
    } finally {
      lab.supervisorctl(['start', 'svc-ingest'])
    }
  })
})
