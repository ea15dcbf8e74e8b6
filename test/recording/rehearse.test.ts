/**
 * `svcops rehearse recording`: the target release run on a copy of production's database on the
 * stack's rehearsal host — migrations, content checks and rollback timed, the downtime predicted —
 * with production untouched (its hosts' versions and its schema fingerprint the same before and
 * after) and the scratch database gone at the end; the lab's fault releases each caught with the
 * cause named. On the lab's real PostgreSQL, pg_dump/pg_restore, dpkg and supervisord.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { exitCodeFor } from '../../src/core/errors.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { predictionOfRun, rehearseRecordingService } from '../../playbooks/rehearse.ts'
import { runCliInProcess, startUpgradeLab, type UpgradeLab } from './fixture.ts'
import { addRehearsalHost, REHEARSAL_DATABASE, type RehearsalHost } from './rehearsal-host.ts'

let lab: UpgradeLab
let host: RehearsalHost

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 2, version: '2.0.0', recordings: 6 })
  lab.setRecording({ healthTimeoutSeconds: 8 })
  host = await addRehearsalHost(lab, '2.0.0')
}, 180_000)

afterAll(async () => {
  await host?.stop()
  await lab?.stop()
})

/** Production as a user checks it: every host's version, the schema fingerprint, every recording. */
async function production(): Promise<{ versions: Record<string, string | undefined>; fingerprint: string; ids: string[] }> {
  return {
    versions: await lab.versions(),
    fingerprint: await lab.fingerprint(),
    ids: (await lab.listAll()).map((r) => String(r.id)).sort(),
  }
}

function lastRun(): Journal {
  return Journal.open(listRuns(lab.runsDir)[0]?.id ?? '')
}

describe('a rehearsal of 2.1.0 on a copy of production', () => {
  it('passes: the copy migrated and rolled back, every recording listed after, the downtime predicted beside the window; production unchanged, the copy dropped', async () => {
    const before = await production()
    const run = await runCliInProcess([
      '--stack-file',
      lab.envFile,
      'rehearse',
      'recording',
      '--to',
      '2.1.0',
      '--batch',
      '1',
      '--window',
      '30m',
    ])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/Rehearsal of 2\.0\.0 -> 2\.1\.0 on a copy .*: FITS/)
    expect(run.stdout).toMatch(/rollout of \[rec-1\] -> \[rec-2\]/)
    const journal = lastRun()
    expect(journal.run.kind).toBe('rehearse')
    expect(journal.run.phase).toBe('succeeded')
    const p = predictionOfRun(journal)
    expect(p).toMatchObject({ verdict: 'fits', from: '2.0.0', to: '2.1.0', schemaChanged: true, batches: [['rec-1'], ['rec-2']] })
    expect(p?.databaseBytes).toBeGreaterThan(0)
    expect(p?.rollbackMs).toBeGreaterThan(p?.measures.rollbackRestoreMs ?? Infinity)
    expect(p?.measures.rollbackRestoreMs).toBeGreaterThan(0)
    expect(p?.rolloutMs).toBe((p?.canaryDowntimeMs ?? 0) + (p?.hostDowntimeMs ?? 0))
    // The upgrade's own content check ran on the copy: every recording of the snapshot listed, a test recording written.
    const verified = journal.entries().filter((e) => e.step === 'verify-host' && e.status === 'ok' && e.host === host.name)
    expect(verified.length).toBe(2)
    expect(await production()).toEqual(before)
    expect(await host.databaseExists()).toBe(false)
  })

  it('reuses the verified backup the first rehearsal took', async () => {
    const run = await rehearseRecordingService({ env: lab.env(), to: '2.1.0' })
    const entry = Journal.open(run.runId)
      .entries()
      .find((e) => e.step === 'rehearsal-backup' && e.status === 'ok')
    expect(entry?.data?.reused).toBe(true)
    expect(predictionOfRun(Journal.open(run.runId))?.verdict).toBe('no window')
  })

  it('says a rollout longer than the window does not fit', async () => {
    const run = await rehearseRecordingService({ env: lab.env(), to: '2.1.0', windowMs: 1 })
    expect(run.phase).toBe('succeeded')
    expect(predictionOfRun(Journal.open(run.runId))?.verdict).toBe('does not fit')
  })
})

describe('fault releases are caught by the rehearsal, production untouched', () => {
  const cases = [
    { version: '2.1.0+migfail', cause: /stopped running|not running|error line/ },
    { version: '2.1.0+lossy', cause: /recordings of the snapshot are missing/ },
    { version: '2.1.0+slowstart', cause: /did not become healthy within 4 s/ },
  ]
  for (const c of cases) {
    it(`${c.version}: the rehearsal fails naming the cause, with the service's log lines; production and its fingerprint unchanged`, async () => {
      lab.setRecording({ healthTimeoutSeconds: 4 })
      try {
        const before = await production()
        const error = await rehearseRecordingService({ env: lab.env(), to: c.version }).catch((e: unknown) => e)
        expect(exitCodeFor(error)).toBe(1)
        expect((error as Error).message).toMatch(c.cause)
        const journal = lastRun()
        expect(journal.run.phase).toBe('failed')
        expect(journal.entries().some((e) => e.disruptive)).toBe(false)
        const p = predictionOfRun(journal)
        expect(p?.verdict).toBe('failed')
        expect(p?.cause).toMatch(c.cause)
        expect(journal.entries().some((e) => e.step === 'diagnose' && e.host === host.name)).toBe(true)
        expect(await production()).toEqual(before)
        expect(await host.databaseExists()).toBe(false)
      } finally {
        lab.setRecording({ healthTimeoutSeconds: 8 })
      }
    })
  }
})

describe('bad input', () => {
  it('refuses a rehearsal database that is the service database, in one sentence, before anything runs', async () => {
    const env = lab.env()
    lab.setRecording({ rehearsal: { ...env.recording!.rehearsal!, database: env.recording!.database.name } })
    try {
      const run = await runCliInProcess(['--stack-file', lab.envFile, 'rehearse', 'recording', '--to', '2.1.0'])
      expect(run.code).toBe(2)
      expect(run.stderr).toMatch(
        /recording\.rehearsal\.database: "recordings" is the service's own database; expected a scratch database of its own\./,
      )
    } finally {
      lab.setRecording({ rehearsal: env.recording!.rehearsal })
    }
    expect(REHEARSAL_DATABASE).not.toBe(env.recording!.database.name)
  })
})
