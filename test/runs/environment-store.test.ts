/**
 * Run state kept with the environment, on the lab (one host, 1.4.0 -> 1.5.0): the upgrade writes
 * its record and journal to the svcops schema of the environment's PostgreSQL as it goes, so from a
 * machine with an empty local runs folder (another `SVCOPS_RUNS_DIR`) `runs list`, `runs show` and
 * `rollback recording` work with the stack file alone; the rollback's restore of the service's
 * database keeps that history (backups exclude the svcops schema, a restore leaves it alone). A run
 * refused before anything stopped leaves nothing there, as it leaves no local folder.
 */
import { mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runSvcopsInProcess } from '../support/cli.ts'
import { startUpgradeLab, type UpgradeLab } from '../recording/fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 2 })
}, 400_000)

afterAll(async () => {
  await lab?.stop()
})

interface Listed {
  runs: { id: string; phase: string; kind: string }[]
}

it('another machine lists, shows and rolls back the runs from the environment alone', async () => {
  const upgraded = await runSvcopsInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '1.5.0', '--yes', '--json'], {
    env: { SVCOPS_RUNS_DIR: lab.runsDir },
  })
  expect(upgraded.code, upgraded.stderr).toBe(0)
  const id = (JSON.parse(upgraded.stdout) as { runId: string }).runId

  const elsewhere = { env: { SVCOPS_RUNS_DIR: mkdtempSync(join(tmpdir(), 'svcops-other-machine-')) } }
  const listed = await runSvcopsInProcess(['--stack-file', lab.envFile, 'runs', 'list', '--json'], elsewhere)
  expect(listed.code, listed.stderr).toBe(0)
  expect((JSON.parse(listed.stdout) as Listed).runs.find((r) => r.id === id)).toMatchObject({ phase: 'succeeded', kind: 'upgrade' })
  const shown = await runSvcopsInProcess(['--stack-file', lab.envFile, 'runs', 'show', id, '--json'], elsewhere)
  expect(shown.code, shown.stderr).toBe(0)
  expect((JSON.parse(shown.stdout) as { timeline: unknown[] }).timeline.length).toBeGreaterThan(5)

  const rolledBack = await runSvcopsInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--yes'], elsewhere)
  expect(rolledBack.code, `${rolledBack.stdout}\n${rolledBack.stderr}`).toBe(0)
  expect((await lab.versions())['rec-1']).toBe('1.4.0')
  expect(await lab.healthy()).toEqual([true])

  // The history survived the rollback (and its restore, when one ran): both runs, as they ended.
  const after = await runSvcopsInProcess(['--stack-file', lab.envFile, 'runs', 'list', '--json'], {
    env: { SVCOPS_RUNS_DIR: mkdtempSync(join(tmpdir(), 'svcops-third-')) },
  })
  const runs = (JSON.parse(after.stdout) as Listed).runs
  expect(runs.find((r) => r.id === id)?.phase).toBe('rolled-back')
}, 900_000)

it('a run refused before anything stopped leaves no record in the environment, and no local folder', async () => {
  const listed = async (): Promise<string[]> => {
    const run = await runSvcopsInProcess(['--stack-file', lab.envFile, 'runs', 'list', '--json'], {
      env: { SVCOPS_RUNS_DIR: mkdtempSync(join(tmpdir(), 'svcops-other-machine-')) },
    })
    expect(run.code, run.stderr).toBe(0)
    return (JSON.parse(run.stdout) as Listed).runs.map((r) => r.id)
  }
  const before = await listed()
  const local = readdirSync(lab.runsDir)
  // Refused by the preflight, inside the run: its record had reached the environment by then.
  const refused = await runSvcopsInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '1.3.0', '--yes'], {
    env: { SVCOPS_RUNS_DIR: lab.runsDir },
  })
  expect(refused.code, refused.stderr).toBe(2)
  expect(refused.stderr).toContain('--to: 1.3.0 is older than what')
  expect(await listed()).toEqual(before)
  expect(readdirSync(lab.runsDir)).toEqual(local)
}, 300_000)
