/**
 * Backups and the runs that need them, across machines, on the lab (two hosts, 1.5.0 -> 2.0.0, a
 * schema change: the rollback restores the run's backup). An upgrade paused after its canary on
 * machine A (its runs folder) holds the environment's lock and its backup. From machine D (another
 * runs folder, the stack file alone): `backup restore` and `backup delete --force` of that backup
 * are refused naming the run, and change nothing; so is the nightly `backup run --keep-last 1`
 * (it takes the lock too), and `backup list` shows the backup held by the paused run (read from the
 * environment's run store, not D's empty folder); `runs abort` then has A roll back, and the
 * rollback finds and restores that backup.
 */
import { mkdtempSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runSvcops, runSvcopsInProcess, type CliRun } from '../support/cli.ts'
import { startUpgradeLab, waitForPausedRun, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab
/** Machine D's runs folder: it knows runs from the environment's store only. */
let elsewhere: string
const started: number[] = []

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 2, version: '1.5.0', recordings: 3 })
  elsewhere = mkdtempSync(join(lab.dir, 'machine-d-'))
}, 400_000)

afterAll(async () => {
  for (const pid of started)
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // it had ended
    }
  await lab?.stop()
})

/** `svcops` from machine D, read in this worker. */
const fromD = (args: string[]): Promise<CliRun> =>
  runSvcopsInProcess(['--stack-file', lab.envFile, ...args], { env: { SVCOPS_RUNS_DIR: elsewhere } })

interface Listed {
  backups: { id: string; heldBy: string | null }[]
}

it('a paused run keeps its backup from every machine: restore, delete and the nightly backup refused naming it, the abort restores it', async () => {
  const fingerprintBefore = await lab.fingerprint()
  const titlesBefore = (await lab.listAll()).map((r) => r.title).sort()
  const upgrade = runSvcops(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.0.0', '--pause-after-canary', '--yes'], {
    env: { SVCOPS_RUNS_DIR: lab.runsDir },
    onSpawn: (pid) => started.push(pid),
  })
  const id = await waitForPausedRun(lab.runsDir, [], upgrade)
  const backupId = (JSON.parse(readFileSync(join(lab.runsDir, id, 'run.json'), 'utf8')) as { params: { backupId: string } }).params.backupId
  expect(backupId).toMatch(/^lab-/)
  const fingerprintPaused = await lab.fingerprint()
  expect(fingerprintPaused).not.toBe(fingerprintBefore)

  const restore = await fromD(['backup', 'restore', backupId, '--yes'])
  expect(restore.code, restore.stderr).toBe(3)
  expect(restore.stderr).toContain(`backup restore: run ${id} (`)
  expect(restore.stderr).toContain(`is running or paused and holds the lock of environment 'lab'; nothing was restored.`)
  expect(await lab.fingerprint()).toBe(fingerprintPaused)

  const remove = await fromD(['backup', 'delete', backupId, '--force'])
  expect(remove.code, remove.stderr).toBe(3)
  expect(remove.stderr).toContain(`backup delete: run ${id} (`)
  expect(remove.stderr).toContain('nothing was deleted.')

  const nightly = await fromD(['backup', 'run', '--keep-last', '1', '--json'])
  expect(nightly.code, nightly.stderr).toBe(3)
  expect(nightly.stderr).toContain(`backup run: run ${id} (`)
  expect(nightly.stderr).toContain(`is running or paused and holds the lock of environment 'lab'; nothing was backed up.`)
  const prune = await fromD(['backup', 'prune', '--keep-last', '0'])
  expect(prune.code, prune.stderr).toBe(3)
  expect(prune.stderr).toContain(`backup prune: run ${id} (`)
  const listed = await fromD(['backup', 'list', '--json'])
  expect(listed.code, listed.stderr).toBe(0)
  const backups = (JSON.parse(listed.stdout) as Listed).backups
  expect(backups.find((b) => b.id === backupId)).toMatchObject({ heldBy: id })

  const aborted = await fromD(['runs', 'abort', id])
  expect(aborted.code, aborted.stderr).toBe(0)
  const ended = await upgrade
  expect(ended.code, ended.stderr).toBe(4)
  expect(ended.stderr).not.toContain('There is no backup')
  const journal = readFileSync(join(lab.runsDir, id, 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { step: string; status: string })
  expect(journal.filter((e) => e.step === 'rollback:restore').map((e) => e.status)).toContain('ok')
  expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0', 'rec-2': '1.5.0' })
  expect(await lab.fingerprint()).toBe(fingerprintBefore)
  // Every recording is there (the run's own verify probes, written after the backup, were recreated).
  expect((await lab.listAll()).map((r) => r.title)).toEqual(expect.arrayContaining(titlesBefore))
}, 900_000)
