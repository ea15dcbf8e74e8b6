/**
 * Run state kept with the environment, on the lab (one host, 1.4.0 -> 1.5.0): the upgrade writes
 * its record and journal to the svcops schema of the environment's PostgreSQL as it goes, so from a
 * machine with an empty local runs folder (another `SVCOPS_RUNS_DIR`) `runs list`, `runs show` and
 * `rollback recording` work with the stack file alone; the rollback's restore of the service's
 * database keeps that history (backups exclude the svcops schema, a restore leaves it alone). A run
 * refused before anything stopped leaves nothing there, as it leaves no local folder.
 */
import { existsSync, mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { databaseTarget, withDatabase } from '../../src/drivers/postgres.ts'
import { newRunId } from '../../src/runs/run-record.ts'
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

/** What the store's database role can do, as whoever holds it could: `sql` on the svcops tables. */
async function asStoreWriter<T extends Record<string, unknown>>(sql: string, values: unknown[]): Promise<T[]> {
  const db = lab.env().recording?.database
  if (!db) throw new Error('the lab has no recording database')
  return withDatabase(databaseTarget(db), async (c) => (await c.query<T>(sql, values)).rows)
}

/** A machine with an empty runs folder. */
function otherMachine(): { dir: string; env: { SVCOPS_RUNS_DIR: string } } {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-other-machine-'))
  return { dir, env: { SVCOPS_RUNS_DIR: dir } }
}

it('refuses runs forged in the store (another environment, changed after signing) and lets an unsigned one act only on --trust-unsigned-run', async () => {
  const upgraded = await runSvcopsInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '1.5.0', '--yes', '--json'], {
    env: { SVCOPS_RUNS_DIR: lab.runsDir },
  })
  expect(upgraded.code, upgraded.stderr).toBe(0)
  const id = (JSON.parse(upgraded.stdout) as { runId: string }).runId
  const [signed] = await asStoreWriter<{ record: Record<string, unknown> }>('SELECT record FROM svcops.runs WHERE id = $1', [id])
  expect(typeof signed?.record.mac).toBe('string')

  // Another environment's run filed under lab (the attack restored staging's backup into lab): refused, naming both.
  const foreign = newRunId()
  await asStoreWriter(
    `INSERT INTO svcops.runs (id, environment, system, started_at, record)
     SELECT $2, 'lab', system, started_at, jsonb_set(jsonb_set(record, '{id}', to_jsonb($2::text)), '{environment}', '"staging"') FROM svcops.runs WHERE id = $1`,
    [id, foreign],
  )
  await asStoreWriter(
    `INSERT INTO svcops.run_journal (run_id, seq, entry) SELECT $2, seq, entry FROM svcops.run_journal WHERE run_id = $1`,
    [id, foreign],
  )
  const there = otherMachine()
  const resumed = await runSvcopsInProcess(['--stack-file', lab.envFile, 'resume', foreign, '--rollback', '--yes'], there)
  expect(resumed.code, resumed.stdout).toBe(2)
  expect(resumed.stderr).toContain(`Run ${foreign} in the svcops schema`)
  expect(resumed.stderr).toContain("names environment 'staging', not 'lab'")
  expect(readdirSync(there.dir)).toEqual([])
  expect((await lab.versions())['rec-1']).toBe('1.5.0')
  // The views show it as refused, with the sentence, and do not fail.
  const listed = await runSvcopsInProcess(['--stack-file', lab.envFile, 'runs', 'list'], there)
  expect(listed.code, listed.stderr).toBe(0)
  expect(listed.stdout).toMatch(new RegExp(`${foreign}.*refused`))
  expect(listed.stderr).toContain("names environment 'staging'")
  const shown = await runSvcopsInProcess(['--stack-file', lab.envFile, 'runs', 'show', foreign, '--markdown'], there)
  expect(shown.code, shown.stderr).toBe(0)
  expect(shown.stdout).toContain(`Run ${foreign}: refused.`)

  // The real run, its backup id changed after it was signed: refused, and nothing copied here.
  await asStoreWriter(`UPDATE svcops.runs SET record = jsonb_set(record, '{params,backupId}', '"backup/forged"') WHERE id = $1`, [id])
  const changed = await runSvcopsInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--run', id, '--yes'], there)
  expect(changed.code, changed.stdout).toBe(2)
  expect(changed.stderr).toContain('fails its MAC check')
  expect(existsSync(join(there.dir, id))).toBe(false)

  // The same run as one written before records were signed: no MAC on it or its entries.
  await asStoreWriter(`UPDATE svcops.runs SET record = $2::jsonb - 'mac' WHERE id = $1`, [id, JSON.stringify(signed?.record)])
  await asStoreWriter(`UPDATE svcops.run_journal SET entry = entry - 'mac' WHERE run_id = $1`, [id])
  const unsignedList = await runSvcopsInProcess(['--stack-file', lab.envFile, 'runs', 'list', '--json'], there)
  expect(unsignedList.code, unsignedList.stderr).toBe(0)
  const listedUnsigned = (JSON.parse(unsignedList.stdout) as { runs: { id: string; trust?: { state: string; sentence: string } }[] }).runs
  expect(listedUnsigned.find((r) => r.id === id)?.trust).toMatchObject({
    state: 'unsigned',
    sentence: expect.stringContaining('carries no MAC') as unknown,
  })
  const unsignedShown = await runSvcopsInProcess(['--stack-file', lab.envFile, 'runs', 'show', id, '--markdown'], there)
  expect(unsignedShown.code, unsignedShown.stderr).toBe(0)
  expect(unsignedShown.stderr).toContain(`warning: Run ${id} in the svcops schema`)
  const untrusted = await runSvcopsInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--run', id, '--yes'], there)
  expect(untrusted.code, untrusted.stdout).toBe(2)
  expect(untrusted.stderr).toContain('--trust-unsigned-run')
  const dryRun = await runSvcopsInProcess(
    ['--stack-file', lab.envFile, 'rollback', 'recording', '--run', id, '--dry-run', '--trust-unsigned-run'],
    there,
  )
  expect(dryRun.code, dryRun.stderr).toBe(0)
  expect(readdirSync(there.dir)).toEqual([])
  expect((await lab.versions())['rec-1']).toBe('1.5.0')

  const trusted = await runSvcopsInProcess(
    ['--stack-file', lab.envFile, 'rollback', 'recording', '--run', id, '--yes', '--trust-unsigned-run'],
    there,
  )
  expect(trusted.code, `${trusted.stdout}\n${trusted.stderr}`).toBe(0)
  expect((await lab.versions())['rec-1']).toBe('1.4.0')
  // Who trusted it is kept in the run, which is signed again as it goes on.
  const [after] = await asStoreWriter<{ record: Record<string, unknown> }>('SELECT record FROM svcops.runs WHERE id = $1', [id])
  expect(after?.record.trustedUnsigned).toMatchObject({ by: expect.stringContaining('@') as unknown })
  expect(typeof after?.record.mac).toBe('string')
  expect(after?.record.phase).toBe('rolled-back')
}, 900_000)
