/**
 * Every fault release of the lab (seed: "Common upgrade problems") ends, after the automatic
 * rollback, on the old version with every recording present: exit 4, and the report says why and
 * whether the database was restored.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { exitCodeFor, RolledBackError } from '../../src/core/errors.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { recordingSectionsOf } from '../../src/recording/recording-report.ts'
import { buildReport } from '../../src/reports/report.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { recording } from '../../playbooks/upgrade.ts'
import { rollbackRecording } from '../../playbooks/lib/recording-actions.ts'
import { startSystemRun } from '../../src/runs/run-actions.ts'
import { runSvcopsKilledAt } from '../support/cli.ts'
import { runCli, startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '2.0.0', recordings: 6 })
  lab.setRecording({ healthTimeoutSeconds: 4 })
}, 120_000)

afterAll(async () => {
  await lab?.stop()
})

const cases = [
  { version: '2.1.0+migfail', restore: false, cause: /stopped running|not running|error line/ },
  { version: '2.1.0+crash', restore: true, cause: /stopped running|not running|error line/ },
  { version: '2.1.0+unhealthy', restore: true, cause: /did not become healthy within 4 s/ },
  { version: '2.1.0+slowstart', restore: true, cause: /did not become healthy within 4 s/ },
  { version: '2.1.0+lossy', restore: true, cause: /recordings of the snapshot are missing/ },
]

describe('fault releases are rolled back with nothing lost', () => {
  for (const c of cases) {
    it(`${c.version}: rolled back to 2.0.0 (exit 4), database ${c.restore ? 'restored' : 'kept'}, every recording present`, async () => {
      const before = await lab.listAll()
      const fingerprint = await lab.fingerprint()
      const error = await startSystemRun(recording, { env: lab.env(), to: c.version }).catch((e: unknown) => e)
      expect(error, (error as Error).message).toBeInstanceOf(RolledBackError)
      expect(exitCodeFor(error)).toBe(4)
      expect((error as Error).message).toMatch(c.cause)
      expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0' })
      expect(await lab.healthy()).toEqual([true])
      expect(await lab.fingerprint()).toBe(fingerprint)
      const ids = (await lab.listAll()).map((r) => r.id)
      for (const r of before) expect(ids).toContain(r.id)
      const report = buildReport(Journal.open(listRuns(lab.runsDir)[0]?.id ?? ''), recordingDescription)
      expect(report.run.phase).toBe('rolled-back')
      expect(recordingSectionsOf(report).rollback?.restore).toBe(c.restore)
    })
  }
})

describe('--no-auto-rollback', () => {
  it('keeps the broken state for inspection (exit 1, names the rollback command); rollback --run then restores the old version', async () => {
    const before = await lab.listAll()
    const error = await startSystemRun(recording, { env: lab.env(), to: '2.1.0+migfail', autoRollback: false }).catch((e: unknown) => e)
    expect(exitCodeFor(error)).toBe(1)
    expect((error as Error).message).toMatch(/left as they are \(--no-auto-rollback\)/)
    const runId = listRuns(lab.runsDir)[0]?.id ?? ''
    expect((error as { hint?: string }).hint).toContain(`svcops rollback recording --env lab --run ${runId}`)
    expect(await lab.versions()).toEqual({ 'rec-1': '2.1.0+migfail' })
    expect(await lab.healthy()).toEqual([false])
    const back = await rollbackRecording(recording, lab.env(), { runId })
    expect(back.phase).toBe('rolled-back')
    expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0' })
    const ids = (await lab.listAll()).map((r) => r.id)
    for (const r of before) expect(ids).toContain(r.id)
  })
})

describe('a rollback that was itself killed', () => {
  it('resume continues it: restored, on 2.0.0, every recording present, exit 4', async () => {
    const before = await lab.listAll()
    const fingerprint = await lab.fingerprint()
    const killed = await runSvcopsKilledAt(
      ['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.1.0+crash', '--yes'],
      'rollback:export',
      lab.runsDir,
    )
    expect(killed.signal).toBe('SIGKILL')
    const id = listRuns(lab.runsDir)[0]?.id ?? ''
    expect(Journal.open(id).run.phase).toBe('rolling-back')
    const resumed = await runCli(['--json', 'resume', id])
    expect(resumed.code, resumed.stderr.slice(-400)).toBe(4)
    // A scheduler reads the run, its outcome and its report as fields, as on success.
    const answer = JSON.parse(resumed.stdout) as {
      ok: boolean
      exitCode: number
      runId: string
      phase: string
      reportPath: string
      report: { run: { id: string }; timeline: unknown[] }
    }
    expect(answer).toMatchObject({ ok: false, exitCode: 4, runId: id, phase: 'rolled-back', report: { run: { id } } })
    expect(answer.reportPath).toBe(join(lab.runsDir, id, 'report.md'))
    expect(answer.report.timeline.length).toBeGreaterThan(5)
    expect(Journal.open(id).run.phase).toBe('rolled-back')
    expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0' })
    expect(await lab.fingerprint()).toBe(fingerprint)
    const ids = (await lab.listAll()).map((r) => r.id)
    for (const r of before) expect(ids).toContain(r.id)
  })
})
