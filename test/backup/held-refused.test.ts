/**
 * Retention and `backup delete` read a refused run record as "which backups runs hold is unknown",
 * never as "this run holds nothing", on real PostgreSQL: a paused upgrade's row in the environment's
 * run store (signed with the run key the stack derives from its backup identity) holds its backup;
 * one byte changed in that row by the database role makes it refused. From a machine with an empty
 * runs folder, the nightly `backup run --keep-last 1` then keeps every backup and says why, `backup
 * prune` likewise, and `backup delete` of the paused run's backup is refused without --force.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { main } from '../../src/commands/program.ts'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { postgresRunStore } from '../../src/runs/pg-run-store.ts'
import { runSealOf } from '../../src/runs/run-mac.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'
import { startBackupBed, SERVICE_PASSWORD, type BackupBed } from './fixture.ts'

const PASSWORD_VARIABLE = 'SVCOPS_HELD_REFUSED_DB_PASSWORD'
let bed: BackupBed
let envFile: string

/** `svcops --stack-file ENVFILE ARGS` in this process, from a machine whose runs folder is empty. */
async function fromAnotherMachine(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true))
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true))
  process.env.SVCOPS_RUNS_DIR = mkdtempSync(join(bed.dir, 'machine-d-'))
  try {
    return { code: await main(['--stack-file', envFile, ...args]), stdout, stderr }
  } finally {
    delete process.env.SVCOPS_RUNS_DIR
    out.mockRestore()
    err.mockRestore()
  }
}

beforeAll(async () => {
  bed = await startBackupBed(50)
  process.env[PASSWORD_VARIABLE] = SERVICE_PASSWORD
  envFile = join(bed.dir, 'Pulumi.heldtest.yaml')
  writeFileSync(
    envFile,
    stringify({
      config: {
        'svcops:recording': {
          version: '1.6.0',
          hosts: [{ name: 'rec1', url: 'http://127.0.0.1:9', transport: 'local' }],
          database: { ...bed.database, password: { env: PASSWORD_VARIABLE } },
        },
        'svcops:backup': {
          store: { path: join(bed.dir, 'held-store') },
          recipients: [bed.publicKeyFile],
          identity: { file: bed.privateKeyFile },
        },
      },
    }),
  )
}, 300_000)

afterAll(async () => {
  delete process.env[PASSWORD_VARIABLE]
  await bed?.stop()
})

const listed = async (): Promise<{ id: string; heldBy: string | null }[]> => {
  const list = await fromAnotherMachine('--json', 'backup', 'list')
  expect(list.code, list.stderr).toBe(0)
  return (JSON.parse(list.stdout) as { backups: { id: string; heldBy: string | null }[] }).backups
}

it('a paused run whose row was changed after signing keeps every backup: the nightly prune and prune keep them and say why, delete needs --force', async () => {
  const created: string[] = []
  for (let i = 0; i < 2; i++) {
    const made = await fromAnotherMachine('--json', 'backup', 'create')
    expect(made.code, made.stderr).toBe(0)
    created.push((JSON.parse(made.stdout) as { backup: { id: string } }).backup.id)
  }
  const [held = '', newer = ''] = created

  // An upgrade paused after its canary on machine A: its signed record in the environment's store holds the older backup.
  const env = loadEnvironmentFile(envFile)
  const run = newRunRecord({
    kind: 'upgrade',
    system: 'recording',
    environment: env.name,
    envFile,
    params: { hosts: ['rec1'], backupId: held },
  })
  const store = postgresRunStore(env.recording?.database ?? missing(), env.name, runSealOf(env))
  try {
    await store.write({ record: { ...run, holder: 'ops@machine-a', pausedAt: new Date().toISOString() }, from: 0, all: [] })
  } finally {
    await store.close()
  }
  expect((await listed()).find((b) => b.id === held)).toMatchObject({ heldBy: run.id })

  // The database role changes one byte of that row: the record is refused on read.
  await bed.sql(
    `SET ROLE ${pg.escapeIdentifier(bed.database.user)}; UPDATE svcops.runs SET record = jsonb_set(record, '{holder}', '"ops@machine-b"') WHERE id = '${run.id}'`,
  )

  const nightly = await fromAnotherMachine('--json', 'backup', 'run', '--keep-last', '1')
  expect(nightly.code, nightly.stderr).toBe(0)
  const timeline = (
    JSON.parse(nightly.stdout) as { report: { timeline: { step: string; status: string; data?: { heldUnknown?: string } }[] } }
  ).report.timeline
  const prune = timeline.find((e) => e.step === 'prune' && e.status === 'ok')
  expect(prune?.data?.heldUnknown).toMatch(new RegExp(`^Run ${run.id} in .* fails its MAC check`))
  const after = (await listed()).map((b) => b.id)
  expect(after).toEqual(expect.arrayContaining([held, newer]))
  expect(after).toHaveLength(3)

  const pruned = await fromAnotherMachine('backup', 'prune', '--keep-last', '0')
  expect(pruned.code, pruned.stderr).toBe(0)
  expect(pruned.stderr).toContain(`Retention keeps every backup of '${env.name}' and backup delete needs --force: Run ${run.id} in `)
  expect(pruned.stdout).toMatch(
    new RegExp(`^Nothing removed: the runs that may hold backups could not be read \\(Run ${run.id} in .*fails its MAC check`, 'm'),
  )
  expect((await listed()).map((b) => b.id)).toHaveLength(3)

  const refused = await fromAnotherMachine('backup', 'delete', held)
  expect(refused.code, refused.stderr).toBe(2)
  expect(refused.stderr).toContain(`backup delete: which backups runs still need is unknown (Run ${run.id} in `)
  expect(refused.stderr).toContain(`backup ${held} was not deleted.`)
  expect((await listed()).map((b) => b.id)).toContain(held)
  const forced = await fromAnotherMachine('backup', 'delete', newer, '--force')
  expect(forced.code, forced.stderr).toBe(0)
  expect((await listed()).map((b) => b.id)).not.toContain(newer)
}, 600_000)

function missing(): never {
  throw new Error('the stack has no recording database')
}
