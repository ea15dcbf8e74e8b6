/**
 * Real SIGKILLs of `svcops upgrade recording` on the lab, at the boundaries where a kill costs most:
 * the first stop, mid-migration (the new release's first start migrated the schema) and
 * mid-restore (the rollback restored the backup, nothing started yet). The CLI dies by SIGKILL right
 * after its journal records the boundary (the failpoint `crashFailpointEnv`, test/support/cli.ts);
 * each run is then finished by `svcops resume ID` or rolled back, and must end with the service
 * healthy on the expected release, every recording there (those written after the backup too) and
 * no lock left. Every other boundary of the upgrade and its rollback is killed at the engine, on the
 * recording service in memory (test/runs/crash-matrix-recording.test.ts; docs/testing.md).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { ExitCode } from '../../src/core/errors.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { readEnvironmentLock } from '../../src/runs/lock.ts'
import { runSvcopsKilledAt, runSvcopsKilledInRun } from '../support/cli.ts'
import { runCli, startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab
let initial: string[] = []

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 4 })
  initial = (await lab.listAll()).map((r) => r.title)
}, 120_000)

afterAll(async () => {
  await lab?.stop()
})

async function killedUpgrade(to: string, boundary: string): Promise<string> {
  const killed = await runSvcopsKilledAt(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', to, '--yes'], boundary, lab.runsDir)
  expect(killed.signal, `${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
  const id = listRuns(lab.runsDir)[0]?.id as string
  expect(Journal.open(id).run.phase).toBe('running')
  return id
}

async function expectHealthyOn(version: string, titles: string[]): Promise<void> {
  expect(await lab.versions()).toEqual({ 'rec-1': version })
  expect(await lab.healthy()).toEqual([true])
  const now = (await lab.listAll()).map((r) => r.title)
  for (const t of titles) expect(now).toContain(t)
  expect(await readEnvironmentLock(lab.env().recording!.database, 'lab')).toBeUndefined()
  expect(existsSync(join(lab.env().recording!.hosts[0]!.root!, 'var/lib/svcops/upgrade.lock'))).toBe(false)
}

it('killed after the first stop: svcops resume ID finishes the upgrade, healthy on the new release', async () => {
  const id = await killedUpgrade('1.5.0', 'stop@rec-1')
  const resumed = await runCli(['resume', id], { SVCOPS_RUNS_DIR: lab.runsDir })
  expect(resumed.code, resumed.stdout + resumed.stderr).toBe(ExitCode.ok)
  expect(Journal.open(id).run.phase).toBe('succeeded')
  await expectHealthyOn('1.5.0', initial)
})

it('killed mid-migration, its rollback killed mid-restore: svcops resume ID ends on the old release with every recording', async () => {
  // 2.0.0's first start migrates the schema: the rollback must restore the backup.
  const id = await killedUpgrade('2.0.0', 'start@rec-1')
  expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0' })
  const later = await lab.create('written on 2.0.0 after the kill')
  const killed = await runSvcopsKilledInRun(
    ['--stack-file', lab.envFile, 'rollback', 'recording', '--run', id, '--yes'],
    id,
    'rollback:restore',
    lab.runsDir,
  )
  expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL')
  expect(Journal.open(id).run.phase).toBe('rolling-back')
  const resumed = await runCli(['resume', id], { SVCOPS_RUNS_DIR: lab.runsDir })
  expect(resumed.code, resumed.stdout + resumed.stderr).toBe(ExitCode.ok)
  expect(Journal.open(id).run.phase).toBe('rolled-back')
  await expectHealthyOn('1.5.0', [...initial, later.title])
})
