/**
 * A rollback killed half-way, on the recording service: `svcops rollback recording` of a finished
 * 1.4.0 -> 1.5.0 upgrade is killed with SIGKILL once the previous package is installed (the service
 * still stopped); `svcops resume ID` finishes the rollback and exits 0, as the uninterrupted
 * rollback does — a rollback asked for is no failed upgrade, so not exit 4 — with the service
 * healthy on 1.4.0, every recording there and no lock left. An automatic rollback (a failed
 * upgrade) that is interrupted and resumed still exits 4: that run did fail.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { ExitCode } from '../../src/core/errors.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { readEnvironmentLock } from '../../src/runs/lock.ts'
import { runSvcopsKilledAt, runSvcopsKilledInRun } from '../support/cli.ts'
import { runCli, startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 3 })
}, 120_000)

afterAll(async () => {
  await lab?.stop()
})

it('a rollback killed after the previous package is installed is finished by svcops resume ID, exit 0', async () => {
  const before = (await lab.listAll()).map((r) => String(r.id))
  const up = await runCli(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '1.5.0', '--yes'], { SVCOPS_RUNS_DIR: lab.runsDir })
  expect(up.code, up.stderr).toBe(0)
  const id = listRuns(lab.runsDir)[0]?.id ?? ''
  const killed = await runSvcopsKilledInRun(
    ['--stack-file', lab.envFile, 'rollback', 'recording', '--run', id, '--yes'],
    id,
    'rollback:install@rec-1',
    lab.runsDir,
  )
  expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL')
  expect(Journal.open(id).run.phase).toBe('rolling-back')
  const resumed = await runCli(['resume', id], { SVCOPS_RUNS_DIR: lab.runsDir })
  expect(resumed.code, resumed.stdout + resumed.stderr).toBe(ExitCode.ok)
  expect(Journal.open(id).run.phase).toBe('rolled-back')
  expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
  expect(await lab.healthy()).toEqual([true])
  const ids = (await lab.listAll()).map((r) => String(r.id))
  for (const r of before) expect(ids).toContain(r)
  expect(await readEnvironmentLock(lab.env().recording!.database, 'lab')).toBeUndefined()
})

it('an automatic rollback killed half-way and resumed still exits 4: the upgrade failed', async () => {
  // The fault release's migration fails on its first start, after the stop: the failure policy rolls back.
  const killed = await runSvcopsKilledAt(
    ['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.1.0+migfail', '--yes'],
    'rollback:install@rec-1',
    lab.runsDir,
  )
  expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL')
  const id = listRuns(lab.runsDir)[0]?.id ?? ''
  expect(Journal.open(id).run.phase).toBe('rolling-back')
  const resumed = await runCli(['resume', id], { SVCOPS_RUNS_DIR: lab.runsDir })
  expect(resumed.code, resumed.stdout + resumed.stderr).toBe(ExitCode.rolledBack)
  expect(Journal.open(id).run.phase).toBe('rolled-back')
  expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
  expect(await lab.healthy()).toEqual([true])
})
