/**
 * Crash-resume: the test kills the CLI with SIGKILL from outside as soon as its journal shows a step
 * boundary; then `resume`, and in a second case after the same kill `rollback --run`, must each
 * end with a healthy service on one version, no recording lost, and no lock left behind.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { readEnvironmentLock } from '../../src/runs/lock.ts'
import { resumeRecordingService, rollbackRecordingService } from '../../playbooks/upgrade.ts'
import { runSvcopsKilledAt } from '../support/cli.ts'
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

/** Declares the crash-resume cases for `boundaries` on a lab of its own. */
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

  describe('kill -9 at a step boundary, then resume or roll back', () => {
    describe.each(boundaries)('killed after %s', (boundary) => {
      it.each(['resume', 'rollback'] as const)('%s ends healthy on one version with every recording', async (how) => {
        const from = (await lab.versions())['rec-1'] as string
        const to = from === '1.4.0' ? '1.5.0' : '1.4.0'
        const killed = await runSvcopsKilledAt(
          ['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', to, '--yes'],
          boundary,
          lab.runsDir,
        )
        expect(killed.signal).toBe('SIGKILL')
        const id = listRuns(lab.runsDir)[0]?.id as string
        expect(Journal.open(id).run.phase).toBe('running')
        const outcome = how === 'resume' ? await resumeRecordingService(id, {}) : await rollbackRecordingService(lab.env(), { runId: id })
        // A rollback after a kill before the first stop has nothing to undo: the run is only marked failed.
        const stoppedBeforeKill = Journal.open(id).disrupted()
        expect(outcome.phase).toBe(how === 'resume' ? 'succeeded' : stoppedBeforeKill ? 'rolled-back' : 'failed')
        const versions = await lab.versions()
        expect(versions['rec-1']).toBe(how === 'resume' ? to : from)
        expect(await lab.healthy()).toEqual([true])
        const ids = (await lab.listAll()).map((r) => String(r.id))
        for (const r of initial) expect(ids).toContain(r)
        expect(await readEnvironmentLock(lab.env().recording!.database, 'lab')).toBeUndefined()
        expect(existsSync(join(lab.env().recording!.hosts[0]!.root!, 'var/lib/svcops/upgrade.lock'))).toBe(false)
      })
    })
  })
}
