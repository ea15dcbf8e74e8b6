/**
 * `svcops rehearse recording`: the target release run on a copy of production's database on the
 * stack's rehearsal host — migrations, content checks and rollback timed, the downtime predicted —
 * with production untouched (its hosts' versions and its schema fingerprint the same before and
 * after) and the scratch database gone at the end; the lab's fault releases each caught with the
 * cause named. On the lab's real PostgreSQL, pg_dump/pg_restore, dpkg and supervisord.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { exitCodeFor } from '../../src/core/errors.ts'
import { switchLabFault } from '../../src/lab/recording-faults.ts'
import { textfilePath } from '../../src/metrics/publish.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { predictionOfRun, rehearseRecordingService } from '../../playbooks/rehearse.ts'
import { readEnvironmentLock } from '../../src/runs/lock.ts'
import { crashFailpointEnv, runSvcops } from '../support/cli.ts'
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
  it('--dry-run prints every step and command and changes nothing: no run, no copy, production as it was', async () => {
    const before = await production()
    const run = await runCliInProcess(['--stack-file', lab.envFile, 'rehearse', 'recording', '--to', '2.1.0', '--dry-run'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain("Dry run: rehearsal of 2.1.0 for environment 'lab' (nothing will be changed).")
    expect(run.stdout).toContain(`CREATE DATABASE ${REHEARSAL_DATABASE}`)
    expect(run.stdout).toMatch(/restore-copy/)
    expect(listRuns(lab.runsDir)).toEqual([])
    expect(await host.databaseExists()).toBe(false)
    expect(await production()).toEqual(before)
  })

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
    // The run's report carries the prediction beside its own timeline.
    expect(readFileSync(journal.file('report.md'), 'utf8')).toMatch(/## Rehearsal: the predicted upgrade[\s\S]*FITS/)
    expect(readFileSync(journal.file('report.html'), 'utf8')).toContain('<ul id="rehearsal">')
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

describe('the upgrade after a rehearsal', () => {
  it("shows the latest rehearsal of the same target in the upgrade's dry run: when, verdict, predicted rollout", async () => {
    const run = await runCliInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.1.0', '--dry-run'])
    expect(run.code, run.stderr).toBe(0)
    const latest = listRuns(lab.runsDir).find((r) => r.kind === 'rehearse' && r.targetVersion === '2.1.0')
    expect(run.stdout).toContain(`Rehearsal: run ${latest?.id ?? '?'} at `)
    expect(run.stdout).toMatch(/2\.0\.0 -> 2\.1\.0, passed \((fits|does not fit|no window), predicted rollout [0-9.]+ (ms|s)\)/)
    const none = await runCliInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.1.0+crash', '--dry-run'])
    expect(none.stdout).toContain('Rehearsal: none of 2.1.0+crash in this runs folder')
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

describe('an interrupted rehearsal', () => {
  it('SIGINT after the copy was restored: exit 130, told to rehearse again (not resume), the scratch database dropped, the rehearsal host stopped, the lock free, production unchanged', async () => {
    const before = await production()
    const run = await runSvcops(['--stack-file', lab.envFile, 'rehearse', 'recording', '--to', '2.1.0'], {
      env: { SVCOPS_RUNS_DIR: lab.runsDir, ...crashFailpointEnv('restore-copy', 'SIGINT') },
    })
    expect(run.code, run.stderr).toBe(130)
    expect(lastRun().run.phase).toBe('interrupted')
    // `svcops resume` refuses a rehearsal, so the closing lines say to rehearse again instead.
    expect(run.stderr).toContain(`rehearse again: svcops rehearse recording --env ${lab.env().name} --to 2.1.0`)
    expect(run.stderr).not.toContain('svcops resume')
    expect(await host.databaseExists()).toBe(false)
    await expect(fetch(`${host.url}/`)).rejects.toThrow()
    // Nothing is left to finish: the next run of the environment is not refused.
    expect(await readEnvironmentLock(lab.env().recording!.database, lab.env().name)).toBeFalsy()
    expect(await production()).toEqual(before)
  })
})

describe('the rehearsal host must work on the copy', () => {
  it("its configuration names production's database: the rehearsal stops before any content check and before the target is installed, in one sentence; production and its fingerprint unchanged", async () => {
    const undo = host.pointServiceAt(lab.env().recording!.database.name)
    try {
      const before = await production()
      const error = await rehearseRecordingService({ env: lab.env(), to: '2.1.0' }).catch((e: unknown) => e)
      expect(exitCodeFor(error)).toBe(1)
      expect((error as Error).message).toMatch(
        new RegExp(
          `^The service on the rehearsal host ${host.name} answered a content list but holds no session on the scratch database ${REHEARSAL_DATABASE} at `,
        ),
      )
      const entries = lastRun().entries()
      expect(entries.some((e) => e.step === 'uses-copy' && e.status === 'failed')).toBe(true)
      expect(entries.some((e) => e.step === 'snapshot' || e.step === 'verify-host')).toBe(false)
      // Only the current release was installed (the copy's first start), never the target.
      expect(entries.filter((e) => e.step === 'install' && e.status === 'ok').length).toBe(1)
      expect(await production()).toEqual(before)
      expect(await host.databaseExists()).toBe(false)
    } finally {
      undo()
    }
  })

  it("a passing rehearsal journals the proof: a session on the copy, the copy migrated, production's fingerprint as before", async () => {
    const before = await production()
    await rehearseRecordingService({ env: lab.env(), to: '2.1.0' })
    const proofs = lastRun()
      .entries()
      .filter((e) => e.step === 'uses-copy' && e.status === 'ok')
    expect(proofs.length).toBe(2)
    expect(proofs[0]?.data).toMatchObject({ copyMigrated: false })
    expect(proofs[0]?.data?.sessions).toBeGreaterThan(0)
    expect(proofs[1]?.data).toMatchObject({ copyMigrated: true, productionFingerprint: before.fingerprint })
  })
})

describe('a missing privilege is caught on production, where the copy cannot show it', () => {
  it("tables-not-owned: the rehearsal stops before the copy, naming the doctor's schema-change-permission; nothing changed", async () => {
    const target = { env: lab.env(), superuserPassword: readFileSync(join(lab.labDir, 'secrets', 'postgres-password'), 'utf8').trim() }
    await switchLabFault(target, 'tables-not-owned', true)
    try {
      const before = await production()
      const error = await rehearseRecordingService({ env: lab.env(), to: '2.1.0' }).catch((e: unknown) => e)
      expect(exitCodeFor(error)).toBe(1)
      expect((error as Error).message).toMatch(
        /^Cause schema-change-permission: the service's role may not change the schema of recordings/,
      )
      expect(
        lastRun()
          .entries()
          .some((e) => e.step === 'restore-copy'),
      ).toBe(false)
      expect(await production()).toEqual(before)
      expect(await host.databaseExists()).toBe(false)
    } finally {
      await switchLabFault(target, 'tables-not-owned', false)
    }
  })
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

describe('a rehearsal is told like other runs', () => {
  it("its start and end reach the stack's webhooks and its end the environment's Prometheus textfile (kind rehearse), with no production downtime and no backup counted twice", async () => {
    const received: Array<Record<string, unknown>> = []
    const receiver = createServer((req, res) => {
      let body = ''
      req.on('data', (d: Buffer) => (body += d.toString()))
      req.on('end', () => {
        received.push(JSON.parse(body) as Record<string, unknown>)
        res.end('ok')
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const dir = mkdtempSync(join(tmpdir(), 'svcops-rehearsal-notify-'))
    const doc = parseYaml(readFileSync(lab.envFile, 'utf8')) as { config: Record<string, unknown> }
    const kept = readFileSync(lab.envFile, 'utf8')
    doc.config['svcops:notify'] = { webhooks: [{ url: { env: 'SVCOPS_TEST_REHEARSAL_HOOK' } }], metrics: { textfileDir: dir } }
    writeFileSync(lab.envFile, toYaml(doc))
    try {
      const hook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`
      const run = await runCliInProcess(['--stack-file', lab.envFile, 'rehearse', 'recording', '--to', '2.1.0', '--window', '30m'], {
        SVCOPS_TEST_REHEARSAL_HOOK: hook,
      })
      expect(run.code, run.stderr).toBe(0)
      const id = listRuns(lab.runsDir)[0]?.id ?? ''
      const mine = received.filter((m) => m.runId === id)
      expect(mine.map((m) => m.event)).toEqual(['start', 'success'])
      expect(mine[1]).toMatchObject({
        kind: 'rehearse',
        targetVersion: '2.1.0',
        phase: 'succeeded',
        downtime: [],
        longestDowntimeSeconds: null,
      })
      expect(mine[1]?.summary).toMatch(/^Rehearsal of lab to 2\.1\.0 succeeded\.$/)
      const text = readFileSync(textfilePath(dir, lab.env().name), 'utf8')
      expect(text).toMatch(/^svcops_run_last_outcome\{environment="lab",kind="rehearse",outcome="succeeded"\} 1$/m)
      expect(text).toMatch(/^svcops_run_last_success_timestamp_seconds\{environment="lab",kind="rehearse"\} \d+/m)
      // No production host went down: a rehearsal has no downtime series.
      expect(text).not.toMatch(/^svcops_host_last_downtime_seconds\{environment="lab",kind="rehearse"/m)
      // A rehearsal that reused an earlier backup leaves the last backup's time at that backup's; one that took a backup moves it.
      const backupAt = Number(/^svcops_backup_last_success_timestamp_seconds\{environment="lab"\} ([\d.]+)$/m.exec(text)?.[1])
      const journal = Journal.open(id)
      const started = Date.parse(journal.run.startedAt) / 1000
      const reused = journal.entries().find((e) => e.step === 'rehearsal-backup' && e.data)?.data?.reused
      if (reused === true) expect(backupAt).toBeLessThan(started)
      else expect(backupAt).toBeGreaterThanOrEqual(started)
      execFileSync('/usr/bin/promtool', ['check', 'metrics'], { input: text })
    } finally {
      writeFileSync(lab.envFile, kept)
      await new Promise((resolve) => receiver.close(resolve))
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('svcops:upgrade.requireRehearsal', () => {
  /** Sets `svcops:upgrade` in the lab's stack file. */
  function requireRehearsal(hours: number | undefined): void {
    const doc = parseYaml(readFileSync(lab.envFile, 'utf8')) as { config: Record<string, unknown> }
    if (hours === undefined) delete doc.config['svcops:upgrade']
    else doc.config['svcops:upgrade'] = { requireRehearsal: hours }
    writeFileSync(lab.envFile, toYaml(doc))
  }

  it('refuses an upgrade nobody rehearsed before anything starts, in one sentence (exit 5), with no run and production unchanged', async () => {
    requireRehearsal(24)
    try {
      const before = await production()
      const runs = listRuns(lab.runsDir).length
      const run = await runCliInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.1.0+crash', '--yes'])
      expect(run.code).toBe(5)
      expect(run.stderr).toMatch(
        /svcops:upgrade\.requireRehearsal: no rehearsal of 2\.0\.0 -> 2\.1\.0\+crash on schema [0-9a-f]{12} passed within the last 24 h; the upgrade was refused before anything started\./,
      )
      expect(listRuns(lab.runsDir).length).toBe(runs)
      expect(await production()).toEqual(before)
    } finally {
      requireRehearsal(undefined)
    }
  })

  it('lets the upgrade of a rehearsed from, to and schema through, and it succeeds', async () => {
    requireRehearsal(24)
    try {
      const run = await runCliInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.1.0', '--yes'])
      expect(run.code, run.stderr).toBe(0)
      expect(await lab.versions()).toEqual({ 'rec-1': '2.1.0', 'rec-2': '2.1.0' })
    } finally {
      requireRehearsal(undefined)
    }
  })
})
