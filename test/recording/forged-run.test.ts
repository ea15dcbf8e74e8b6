/**
 * A recording run forged in the environment's store (the `svcops` schema of the service's
 * database), on the real lab (one host, 1.4.0 -> 1.5.0: no schema change): an attacker with the
 * database role points the upgrade run at an older backup, lists every recording there is now as
 * its snapshot (so none counts as written after the backup) and adds a `rollback:decide` entry
 * saying restore. `svcops rollback recording --yes` from an empty runs folder does not restore the
 * old backup: the decision is the database's (its schema fingerprint did not change), the forged
 * entry is refused with one sentence naming it before anything stops, the recording written since
 * the old backup is still there, and the host stays on 1.5.0. The dry run shows the same refusal.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { recording } from '../../playbooks/upgrade.ts'
import { startSystemRun } from '../../src/runs/run-actions.ts'
import { SVCOPS_SCHEMA, connectDatabase, databaseTarget } from '../../src/drivers/postgres.ts'
import { identityKey } from '../../src/recording/content-snapshot.ts'
import { runCliInProcess, startUpgradeLab, type UpgradeLab } from './fixture.ts'

/**
 * Whether a record read from the environment may drive a rollback at all is the run's MAC's to say
 * (src/runs/run-mac.ts): the attacker writes the run unsigned (no `mac` anywhere) and the operator
 * lets it through with --trust-unsigned-run, so that what refuses is the rollback's own check of
 * what the record and journal say, the layer this file is about.
 */
const TRUST_UNSIGNED = ['--trust-unsigned-run']

let lab: UpgradeLab
/** The machine of whoever is on call: an empty runs folder, so the run is read from the environment's store. */
const onCall = () => ({ SVCOPS_RUNS_DIR: mkdtempSync(join(tmpdir(), 'svcops-on-call-')) })
let runId = ''
let oldBackup = ''
const WRITTEN_SINCE = 'written after the old backup'

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 2 })
  const made = await runCliInProcess(['--stack-file', lab.envFile, 'backup', 'create', '--json'])
  expect(made.code, made.stderr).toBe(0)
  oldBackup = (JSON.parse(made.stdout) as { backup: { id: string } }).backup.id
  await lab.create(WRITTEN_SINCE)
  const outcome = await startSystemRun(recording, { env: lab.env(), to: '1.5.0' })
  expect(outcome.phase).toBe('succeeded')
  runId = outcome.report.run.id
  expect(outcome.report.run.params.backupId).not.toBe(oldBackup)
}, 1_200_000)

afterAll(async () => {
  await lab?.stop()
})

/** The attacker's writes to the run's record: `changes` to its params, every recording there is now in its snapshot, no MAC anywhere. */
async function forgeRecord(c: pg.Client, changes: Record<string, unknown>): Promise<void> {
  const keys = (await lab.listAll()).map(identityKey)
  const row = await c.query<{ record: Record<string, unknown> }>(`SELECT record FROM ${SVCOPS_SCHEMA}.runs WHERE id = $1`, [runId])
  const { mac: _mac, ...record } = row.rows[0]?.record ?? {}
  const params = { ...(record.params as Record<string, unknown>), ...changes, snapshotIds: keys }
  await c.query(`UPDATE ${SVCOPS_SCHEMA}.runs SET record = $2 WHERE id = $1`, [runId, JSON.stringify({ ...record, params })])
  await c.query(`UPDATE ${SVCOPS_SCHEMA}.run_journal SET entry = entry - 'mac' WHERE run_id = $1`, [runId])
}

/** The attacker's writes to the run store: the record pointed at the old backup, every recording in its snapshot, a decision to restore. */
async function forgeRun(): Promise<void> {
  const c = await connectDatabase(databaseTarget(lab.env().recording!.database))
  try {
    await forgeRecord(c, { backupId: oldBackup })
    const decide = {
      time: new Date().toISOString(),
      step: 'rollback:decide',
      status: 'ok',
      data: { restore: true, reason: 'the schema fingerprint changed', hosts: ['rec-1'] },
    }
    await c.query(
      `INSERT INTO ${SVCOPS_SCHEMA}.run_journal (run_id, seq, entry)
       SELECT $1, COALESCE(MAX(seq), -1) + 1, $2::jsonb FROM ${SVCOPS_SCHEMA}.run_journal WHERE run_id = $1`,
      [runId, JSON.stringify(decide)],
    )
  } finally {
    await c.end()
  }
}

it('a forged run does not restore an old backup that loses a recording written since: refused before anything stops', async () => {
  await forgeRun()
  const fingerprint = await lab.fingerprint()
  const refused = new RegExp(
    `Run ${runId}: the journal's entry of step rollback:decide is refused: it says restore the database \\(the schema fingerprint changed\\), but the schema did not change and no recording went missing and this rollback has not begun a restore; svcops does not follow it\\.`,
  )

  const dry = await runCliInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--dry-run', ...TRUST_UNSIGNED], onCall())
  expect(dry.code, `${dry.stdout}\n${dry.stderr}`).toBe(2)
  expect(`${dry.stdout}\n${dry.stderr}`).toMatch(refused)

  const out = await runCliInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--yes', ...TRUST_UNSIGNED], onCall())
  const printed = `${out.stdout}\n${out.stderr}`
  expect(out.code, printed).toBe(2)
  expect(printed).toMatch(refused)
  expect(printed).not.toMatch(/rollback:stop|rollback:restore/)

  // The database was not restored: the recording written since the old backup is there, the schema the same.
  expect((await lab.listAll()).map((r) => r.title)).toContain(WRITTEN_SINCE)
  expect(await lab.fingerprint()).toBe(fingerprint)
  expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0' })
  expect(await lab.healthy()).toEqual([true])
}, 600_000)

it('a forged run whose fingerprint before points at an older backup: trusted only on --trust-unsigned-run, the restore is refused naming that backup', async () => {
  // An older backup whose schema differs from today's (a table since dropped), and a recording written after it.
  const c = await connectDatabase(databaseTarget(lab.env().recording!.database))
  let olderBackup = ''
  let olderFingerprint = ''
  try {
    await c.query('CREATE TABLE public.forged_run_dropped_since (id integer)')
    const made = await runCliInProcess(['--stack-file', lab.envFile, 'backup', 'create', '--json'])
    expect(made.code, made.stderr).toBe(0)
    olderBackup = (JSON.parse(made.stdout) as { backup: { id: string } }).backup.id
    olderFingerprint = await lab.fingerprint()
    await c.query('DROP TABLE public.forged_run_dropped_since')
    await lab.create('written after the older backup')
    // The record says the schema before the run was that backup's, so the rollback finds it "changed" and would restore it.
    await forgeRecord(c, { backupId: olderBackup, fingerprintBefore: olderFingerprint })
  } finally {
    await c.end()
  }
  const fingerprint = await lab.fingerprint()
  expect(fingerprint).not.toBe(olderFingerprint)
  const refused = new RegExp(
    `Run ${runId} is unsigned, trusted only on --trust-unsigned-run, and its rollback would restore the database from backup ${olderBackup}, the one its record points at \\(the schema fingerprint changed \\(${olderFingerprint.slice(0, 12)} -> ${fingerprint.slice(0, 12)}\\)\\); svcops does not restore a database on an unsigned record's word, and nothing was changed\\.`,
  )
  const byHand = `svcops backup restore ${olderBackup} --env ${lab.env().name}`

  const dry = await runCliInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--dry-run', ...TRUST_UNSIGNED], onCall())
  expect(dry.code, `${dry.stdout}\n${dry.stderr}`).toBe(2)
  expect(`${dry.stdout}\n${dry.stderr}`).toMatch(refused)

  const out = await runCliInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--yes', ...TRUST_UNSIGNED], onCall())
  const printed = `${out.stdout}\n${out.stderr}`
  expect(out.code, printed).toBe(2)
  expect(printed).toMatch(refused)
  expect(printed).toContain(byHand)
  expect(printed).not.toMatch(/rollback:stop|rollback:export|rollback:restore/)

  // Nothing restored: both recordings written since the backups are there, the schema and the host as they were.
  expect((await lab.listAll()).map((r) => r.title)).toEqual(expect.arrayContaining([WRITTEN_SINCE, 'written after the older backup']))
  expect(await lab.fingerprint()).toBe(fingerprint)
  expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0' })
  expect(await lab.healthy()).toEqual([true])
}, 600_000)
