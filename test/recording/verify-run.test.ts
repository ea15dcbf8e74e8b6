/**
 * `svcops verify recording` is a run of the recording service started through the one run path:
 * one record of kind verify, its journal and report, a line in `runs list`. It only reads and takes
 * no lock (docs/upgrade.md): beside an upgrade holding the environment's lock it runs, and leaves
 * that lock to its holder. A failed check fails the run naming the check (exit 1), and a verify is
 * run again, never resumed.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCommand } from '../../src/core/runner.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { lockRecordingEnvironment } from '../../src/recording/recording-context.ts'
import { supervisorctlArgv } from '../support/supervisorctl.ts'
import { runCliInProcess, startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 2 })
}, 120_000)

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
  const list = await runCliInProcess(['runs', 'list', '--json'], { SVCOPS_RUNS_DIR: lab.runsDir })
  const runs = JSON.parse(list.stdout) as { runs?: Listed[] } | Listed[]
  return (Array.isArray(runs) ? runs : (runs.runs ?? [])).find((r) => r.id === id)
}

const verify = () => runCliInProcess(['--stack-file', lab.envFile, '--json', 'verify', 'recording', '--no-test-recording'])

describe('svcops verify recording as a run', () => {
  it('is one record of kind verify with its report, listed by runs list; the checks in the JSON as before', async () => {
    const out = await verify()
    expect(out.code, out.stderr).toBe(0)
    const v = JSON.parse(out.stdout) as { ok: boolean; runId: string; hosts: Array<{ host: string; checks: Array<{ check: string }> }> }
    expect(v.ok).toBe(true)
    expect(v.hosts.map((h) => h.host)).toEqual(['rec-1'])
    expect(v.hosts[0]?.checks.map((c) => c.check)).toContain('GET / (health)')
    expect(await listedRun(v.runId)).toMatchObject({ kind: 'verify', system: 'recording', phase: 'succeeded' })
    expect(existsSync(join(lab.runsDir, v.runId, 'report.json'))).toBe(true)
  }, 300_000)

  it('runs beside an upgrade that holds the environment lock, and leaves the lock to that upgrade', async () => {
    const env = lab.env()
    const upgrade = { id: 'held-by-an-upgrade', holder: 'test', startedAt: new Date().toISOString() }
    const { lock } = await lockRecordingEnvironment(env, upgrade, {})
    try {
      const out = await verify()
      expect(out.code, out.stderr).toBe(0)
      const v = JSON.parse(out.stdout) as { ok: boolean; runId: string }
      expect(v.ok).toBe(true)
      expect(await listedRun(v.runId)).toMatchObject({ kind: 'verify', phase: 'succeeded' })
      // The upgrade still holds it: another run is refused, naming it.
      const other = { id: 'another-upgrade', holder: 'test', startedAt: new Date().toISOString() }
      await expect(lockRecordingEnvironment(env, other, {})).rejects.toThrow(/held-by-an-upgrade/)
    } finally {
      await lock.release()
    }
  }, 300_000)

  it('fails its run naming the failed check (exit 1); the run is run again, not resumed', async () => {
    const host = lab.env().recording?.hosts[0]
    if (!host) throw new Error('the lab has no host')
    const transport = transportFor(host)
    let runId = ''
    try {
      await runCommand(transport, supervisorctlArgv(host, ['stop', 'svc-recording']))
      const out = await verify()
      expect(out.code).toBe(1)
      const v = JSON.parse(out.stdout) as { ok: boolean; runId: string }
      expect(v.ok).toBe(false)
      runId = v.runId
    } finally {
      await runCommand(transport, supervisorctlArgv(host, ['start', 'svc-recording']))
      await transport.close()
    }
    const listed = await listedRun(runId)
    expect(listed).toMatchObject({ kind: 'verify', phase: 'failed' })
    expect(listed?.cause).toContain('rec-1: GET / (health)')
    const resumed = await runCliInProcess(['--stack-file', lab.envFile, 'resume', runId], { SVCOPS_RUNS_DIR: lab.runsDir })
    expect(resumed.code).toBe(2)
    expect(resumed.stderr).toContain('svcops verify recording --env lab')
  }, 300_000)
})
