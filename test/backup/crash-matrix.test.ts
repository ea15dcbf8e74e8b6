/**
 * The crash matrix of the nightly backup playbook (playbooks/backup.ts), at the engine: every step
 * boundary of the run (read from the journal of the same run left uninterrupted, so a step added to
 * the playbook is killed at too) killed through the journal's failpoint in-process
 * (test/support/crash-point.ts), then resumed, and separately rolled back. Its steps need SQL
 * (pg_dump, a test restore into a scratch database), so it runs on the e2e tier's shared PostgreSQL
 * (test/backup/fixture.ts), with a real OpenPGP key and a local store.
 *
 * Each store holds a verified backup of an earlier night first. A resumed run must end as the
 * uninterrupted one: succeeded, its backup verified by a test restore and the earlier one pruned
 * (--keep-last 1). A rolled-back run has nothing to undo (a backup stops nothing): it is marked
 * failed, and the store still holds a verified backup.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backupRecording } from '../../playbooks/backup.ts'
import { runBackupPlaybook } from '../../playbooks/lib/backup-actions.ts'
import { openBackupRun, type BackupParams } from '../../src/backup/backup-steps.ts'
import { listBackups, LocalStore } from '../../src/backup/index.ts'
import { parseEnvironment } from '../../src/config/load.ts'
import type { Environment } from '../../src/config/schema.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { resumeRun } from '../../src/runs/playbook.ts'
import { boundariesOf, boundaryName, runKilledAt, type Boundary } from '../support/crash-point.ts'
import { SERVICE_PASSWORD, startBackupBed, type BackupBed } from './fixture.ts'

let bed: BackupBed
let runs: string
let stores = 0
/** The first store made, holding the earlier night's verified backup: every case starts from a copy. */
let earlierStore: { path: string; id: string } | undefined
/** A backup run acts on the database and the store only: there is nothing to freeze at the kill. */
const NOTHING = { freeze: () => undefined, thaw: () => undefined }
const RETENTION = { keepLast: 1 }

beforeAll(async () => {
  bed = await startBackupBed(200)
  runs = mkdtempSync(join(tmpdir(), 'svcops-backup-matrix-'))
  process.env.SVCOPS_RUNS_DIR = runs
  process.env.SVCOPS_TEST_DB_PASSWORD = SERVICE_PASSWORD
})

afterAll(async () => {
  delete process.env.SVCOPS_RUNS_DIR
  delete process.env.SVCOPS_TEST_DB_PASSWORD
  rmSync(runs, { recursive: true, force: true })
  await bed?.stop()
})

/** The environment of a store at `path`. */
function environmentOf(path: string): Environment {
  return parseEnvironment(
    {
      'svcops:recording': {
        version: '1.6.0',
        hosts: [{ name: 'rec1', url: 'http://127.0.0.1:9', transport: 'local' }],
        database: { ...bed.database, password: { env: 'SVCOPS_TEST_DB_PASSWORD' } },
      },
      'svcops:backup': { store: { path }, recipients: [bed.publicKeyFile], identity: { file: bed.privateKeyFile } },
    },
    'test',
    join(bed.dir, 'Pulumi.test.yaml'),
  )
}

/** An environment whose store holds one verified backup of an earlier night (a copy of the first store made). */
async function environmentWithEarlierBackup(): Promise<{ env: Environment; store: LocalStore; earlier: string }> {
  const path = join(bed.dir, `store-${++stores}`)
  if (!earlierStore) {
    const made = await runBackupPlaybook(backupRecording, { env: environmentOf(path) })
    earlierStore = { path, id: Journal.open(made.runId).run.params.backupId as string }
    return environmentWithEarlierBackup()
  }
  cpSync(earlierStore.path, path, { recursive: true })
  return { env: environmentOf(path), store: new LocalStore(path), earlier: earlierStore.id }
}

function resume(env: Environment, id: string, rollback: boolean): Promise<unknown> {
  const journal = Journal.open(id) as Journal<BackupParams>
  const setup = {
    playbook: backupRecording,
    journal,
    lock: { release: () => Promise.resolve() },
    open: openBackupRun(env, RETENTION, recordingDescription),
    system: recordingDescription,
  }
  return resumeRun(setup, rollback ? { rollback: true } : {}).catch((error: unknown) => error)
}

/** A backup run killed at `boundary`: its environment, store and id. */
async function killedAt(boundary: Boundary) {
  const world = await environmentWithEarlierBackup()
  const killed = await runKilledAt(boundary, NOTHING, () => runBackupPlaybook(backupRecording, { env: world.env, ...RETENTION }))
  expect(killed.crashed, `the run never passed ${boundaryName(boundary)}`).toBe(true)
  const id = listRuns()[0]?.id as string
  expect(Journal.open(id).run.phase).toBe('running')
  return { ...world, id }
}

describe('the nightly backup, killed at each step boundary', () => {
  let boundaries: Boundary[] = []

  beforeAll(async () => {
    const { env } = await environmentWithEarlierBackup()
    const outcome = await runBackupPlaybook(backupRecording, { env, ...RETENTION })
    expect(outcome.phase).toBe('succeeded')
    boundaries = boundariesOf(Journal.open(outcome.runId).entries())
  })

  it('the uninterrupted run passes every step of the playbook', () => {
    expect(boundaries.map(boundaryName)).toEqual(['create', 'verify', 'prune'])
  })

  it('killed at each boundary, then resumed: succeeded, its backup verified, the earlier one pruned', async () => {
    for (const boundary of boundaries) {
      const { env, store, earlier, id } = await killedAt(boundary)
      await resume(env, id, false)
      const run = Journal.open(id)
      expect(run.run.phase, `killed after ${boundaryName(boundary)}`).toBe('succeeded')
      const made = run.run.params.backupId
      expect(run.entries().some((e) => e.step === 'verify' && e.status === 'ok' && e.data?.backupId === made)).toBe(true)
      const left = await listBackups(store)
      expect(left.map((b) => b.id)).toEqual([made])
      expect(made).not.toBe(earlier)
    }
  })

  it('killed at each boundary, then rolled back: failed with nothing to undo, a verified backup kept', async () => {
    for (const boundary of boundaries) {
      const { env, store, earlier, id } = await killedAt(boundary)
      await resume(env, id, true)
      expect(Journal.open(id).run.phase, `killed after ${boundaryName(boundary)}`).toBe('failed')
      // Killed before the prune, the earlier backup is there; after it, the run's own, verified, replaced it.
      const left = await listBackups(store)
      expect(left.filter((b) => b.verified).length).toBeGreaterThan(0)
      if (boundary.step !== 'prune') expect(left.map((b) => b.id)).toContain(earlier)
    }
  })
})
