/**
 * Crash-resume of `svcops upgrade recording` on one host, shared by resume-early.test.ts and
 * resume-late.test.ts (a lab each, so they run in parallel). The CLI dies by SIGKILL right after
 * its journal records a step boundary finished (`runSvcopsKilledAt`, through the journal's
 * failpoint `SVCOPS_CRASH_AFTER`; a resume with `runSvcopsKilledInRun`, at a boundary that resume
 * itself finishes). Each
 * file takes a run of consecutive boundaries, and
 *
 *   rollback  per boundary: an upgrade killed at it, then `rollback --run` (in-process), must end
 *             with a healthy service on the old version, every recording, and no lock left;
 *   resume    one chain for all of them: the upgrade killed at the first boundary, `svcops resume
 *             ID` killed at the second, the next resume killed at the third, and so on; the last
 *             resume (in-process) must end with the run succeeded, a healthy service on the new
 *             version, every recording, and no lock left. Every boundary is thus followed by a
 *             resume, and the run that finishes has been killed at each of them.
 *
 * The rollback cases leave the lab on the version they started from (1.4.0); the chain then takes it
 * to 1.5.0. A resume skips the steps done once (preflight, doctor, stage, snapshot, backup) and a
 * host already verified, and runs the others again: each next boundary is one the resume runs (the
 * test fails if the resume is not killed).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { readEnvironmentLock } from '../../src/runs/lock.ts'
import { resumeRecordingService, rollbackRecordingService } from '../../playbooks/upgrade.ts'
import { runSvcopsKilledAt, runSvcopsKilledInRun } from '../support/cli.ts'
import { startUpgradeLab, type UpgradeLab } from './fixture.ts'

/** Every boundary of an upgrade of one host, in order. */
export const BOUNDARIES = [
  'preflight',
  'doctor',
  'stage@rec-1',
  'snapshot',
  'backup',
  'stop@rec-1',
  'install@rec-1',
  'review-config@rec-1',
  'start@rec-1',
  'wait-healthy@rec-1',
  'check-logs@rec-1',
  'verify-host@rec-1',
  'verify',
]

/** Declares the crash cases for `boundaries` (consecutive, in order) on a lab of its own. */
export function describeCrashResume(boundaries: string[]): void {
  let lab: UpgradeLab
  let initial: string[] = []

  beforeAll(async () => {
    lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 4 })
    initial = (await lab.listAll()).map((r) => String(r.id))
  }, 120_000)

  afterAll(async () => {
    await lab?.stop()
  })

  /** The lab's version and the other one, the upgrade's target. */
  async function pair(): Promise<{ from: string; to: string }> {
    const from = (await lab.versions())['rec-1'] as string
    return { from, to: from === '1.4.0' ? '1.5.0' : '1.4.0' }
  }

  async function killedUpgrade(boundary: string, to: string): Promise<string> {
    const killed = await runSvcopsKilledAt(
      ['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', to, '--yes'],
      boundary,
      lab.runsDir,
    )
    expect(killed.signal, `${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
    const id = listRuns(lab.runsDir)[0]?.id as string
    expect(Journal.open(id).run.phase).toBe('running')
    return id
  }

  async function expectHealthyOn(version: string): Promise<void> {
    expect((await lab.versions())['rec-1']).toBe(version)
    expect(await lab.healthy()).toEqual([true])
    const ids = (await lab.listAll()).map((r) => String(r.id))
    for (const r of initial) expect(ids).toContain(r)
    expect(await readEnvironmentLock(lab.env().recording!.database, 'lab')).toBeUndefined()
    expect(existsSync(join(lab.env().recording!.hosts[0]!.root!, 'var/lib/svcops/upgrade.lock'))).toBe(false)
  }

  describe('kill -9 at a step boundary, then resume or roll back', () => {
    it('the boundaries are consecutive, in the order a run passes them', () => {
      const at = BOUNDARIES.indexOf(boundaries[0] ?? '')
      expect(at).toBeGreaterThanOrEqual(0)
      expect(boundaries).toEqual(BOUNDARIES.slice(at, at + boundaries.length))
    })

    it.each(boundaries)('killed after %s, rollback ends healthy on the old version with every recording', async (boundary) => {
      const { from, to } = await pair()
      const id = await killedUpgrade(boundary, to)
      const outcome = await rollbackRecordingService(lab.env(), { runId: id })
      // A rollback after a kill before the first stop has nothing to undo: the run is only marked failed.
      expect(outcome.phase).toBe(Journal.open(id).disrupted() ? 'rolled-back' : 'failed')
      await expectHealthyOn(from)
    })

    it(`killed after ${boundaries.join(', then its resume after ')}: the last resume ends healthy on the new version with every recording`, async () => {
      const { to } = await pair()
      const [first, ...rest] = boundaries
      const id = await killedUpgrade(first ?? '', to)
      for (const boundary of rest) {
        const killed = await runSvcopsKilledInRun(['--stack-file', lab.envFile, 'resume', id], id, boundary, lab.runsDir)
        expect(killed.signal, `resume not killed after ${boundary}:\n${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
        expect(Journal.open(id).run.phase).toBe('running')
      }
      const outcome = await resumeRecordingService(id, {})
      expect(outcome.phase).toBe('succeeded')
      await expectHealthyOn(to)
    })
  })
}
