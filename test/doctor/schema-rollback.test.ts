/**
 * `rollback recording --to V` across a schema change: V cannot run on a newer schema, so the
 * newest verified backup taken on V is restored and every recording written since is re-created;
 * without such a backup the way back is refused, naming what is missing, before anything changes.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BadInputError, RolledBackError } from '../../src/core/errors.ts'
import { switchLabFault } from '../../src/lab/recording-faults.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { recording } from '../../playbooks/upgrade.ts'
import { planRecordingRollback, retryRecording, rollbackRecording } from '../../playbooks/lib/recording-actions.ts'
import { resumeSystemRun, startSystemRun } from '../../src/runs/run-actions.ts'
import { runSvcopsKilledAt } from '../support/cli.ts'
import { startUpgradeLab, type UpgradeLab } from '../recording/fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 4 })
}, 400_000)

afterAll(async () => {
  await lab?.stop()
})

describe('rollback --to V across a schema change', () => {
  it('refuses without a verified backup taken on V, naming it, and changes nothing', async () => {
    const runs = listRuns().length
    const error = await rollbackRecording(recording, lab.env(), { to: '1.5.0' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BadInputError)
    expect((error as Error).message).toMatch(/no verified backup taken on 1\.5\.0/)
    // The way out it names is a command that goes ahead: the package alone, on today's schema.
    expect((error as BadInputError).hint).toContain('svcops rollback recording --env lab --to 1.5.0 --package-only')
    const plan = await planRecordingRollback(recording, lab.env(), { to: '1.5.0', packageOnly: true })
    const planned = plan.steps.map((p) => p.step)
    expect(planned).toContain('install')
    expect(planned).not.toContain('choose-backup')
    expect(listRuns().length).toBe(runs)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
  })

  it('ends on V with its schema, restored from the backup taken on V, and every recording written since', async () => {
    const fingerprintOnV = await lab.fingerprint()
    const upgraded = await startSystemRun(recording, { env: lab.env(), to: '2.0.0' })
    expect(upgraded.phase).toBe('succeeded')
    expect(await lab.fingerprint()).not.toBe(fingerprintOnV)
    await lab.create('written on 2.0.0')
    const titles = (await lab.listAll()).filter((r) => r.channelName !== 'svcops-verify').map((r) => r.title)

    // The dry run shows the procedure the run will follow: the downgrade, with V's backup restored.
    const plan = await planRecordingRollback(recording, lab.env(), { to: '1.4.0' })
    const planned = plan.steps.map((p) => p.step)
    expect(planned).toEqual(expect.arrayContaining(['choose-backup', 'export', 'restore-target']))
    expect(planned.indexOf('restore-target')).toBeGreaterThan(planned.indexOf('install'))
    expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0' })

    const outcome = await rollbackRecording(recording, lab.env(), { to: '1.4.0' })
    expect(outcome.phase).toBe('succeeded')
    expect(outcome.report.timeline.some((e) => e.step === 'restore-target' && e.status === 'ok')).toBe(true)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
    expect(await lab.fingerprint()).toBe(fingerprintOnV)
    const after = (await lab.listAll()).map((r) => r.title)
    for (const title of titles) expect(after).toContain(title)
    expect(await lab.healthy()).toEqual([true])
  }, 300_000)

  it('a downgrade killed after its stop resumes as a downgrade and ends on V with its data', async () => {
    const fingerprintOnV = await lab.fingerprint()
    expect((await startSystemRun(recording, { env: lab.env(), to: '2.0.0' })).phase).toBe('succeeded')
    await lab.create('written before the killed downgrade')
    const titles = (await lab.listAll()).filter((r) => r.channelName !== 'svcops-verify').map((r) => r.title)
    const killed = await runSvcopsKilledAt(
      ['--stack-file', lab.envFile, 'rollback', 'recording', '--to', '1.4.0', '--yes'],
      'stop@rec-1',
      lab.runsDir,
    )
    expect(killed.signal).toBe('SIGKILL')
    const id = listRuns(lab.runsDir)[0]?.id as string
    expect(Journal.open(id).run).toMatchObject({ procedure: 'downgrade', phase: 'running', targetVersion: '1.4.0' })
    const outcome = await resumeSystemRun(recording, id, {})
    expect(outcome.phase).toBe('succeeded')
    expect(outcome.report.timeline.some((e) => e.step === 'restore-target' && e.status === 'ok')).toBe(true)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
    expect(await lab.fingerprint()).toBe(fingerprintOnV)
    const after = (await lab.listAll()).map((r) => r.title)
    for (const title of titles) expect(after).toContain(title)
  }, 300_000)

  it('resume --retry after a rolled-back migration upgrades again to the same target with the same backup, and rolls back again without loss', async () => {
    const failed = await startSystemRun(recording, { env: lab.env(), to: '2.1.0+migfail' }).catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(RolledBackError)
    const first = Journal.open(listRuns()[0]!.id).run
    await lab.create('written between the tries')
    const titles = (await lab.listAll()).filter((r) => r.channelName !== 'svcops-verify').map((r) => r.title)

    const again = await retryRecording(recording, first.id).catch((e: unknown) => e)
    expect(again).toBeInstanceOf(RolledBackError)
    const retry = Journal.open(listRuns()[0]!.id)
    expect(retry.run.id).not.toBe(first.id)
    expect(retry.run.targetVersion).toBe('2.1.0+migfail')
    expect(retry.run.params.backupId).toBe(first.params.backupId)
    expect(retry.entries().find((e) => e.step === 'backup' && e.status === 'ok')?.detail).toMatch(/is reused/)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
    const after = (await lab.listAll()).map((r) => r.title)
    for (const title of titles) expect(after).toContain(title)
  }, 300_000)

  it('resume --retry after the cause of a failed migration was fixed: same backup, same target, upgraded', async () => {
    const target = { env: lab.env(), superuserPassword: readFileSync(join(lab.labDir, 'secrets', 'postgres-password'), 'utf8').trim() }
    // The cause appears after the preflight passed (someone changes the tables' owner during the window).
    const killed = await runSvcopsKilledAt(
      ['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.0.0', '--yes'],
      'backup',
      lab.runsDir,
    )
    expect(killed.signal).toBe('SIGKILL')
    const id = listRuns(lab.runsDir)[0]?.id as string
    await switchLabFault(target, 'tables-not-owned', true)
    let failed: unknown
    try {
      failed = await resumeSystemRun(recording, id, {}).catch((e: unknown) => e)
    } finally {
      await switchLabFault(target, 'tables-not-owned', false) // the fix
    }
    expect(failed).toBeInstanceOf(RolledBackError)
    const first = Journal.open(id).run
    expect(first.phase).toBe('rolled-back')
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })

    const outcome = await retryRecording(recording, id)
    expect(outcome.phase).toBe('succeeded')
    const retry = Journal.open(outcome.runId)
    expect(retry.run.targetVersion).toBe('2.0.0')
    expect(retry.run.params.backupId).toBe(first.params.backupId)
    expect(retry.entries().find((e) => e.step === 'backup' && e.status === 'ok')?.detail).toMatch(/is reused/)
    expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0' })
    expect(await lab.healthy()).toEqual([true])
  }, 300_000)
})
