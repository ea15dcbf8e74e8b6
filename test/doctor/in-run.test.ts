/**
 * The doctor inside the upgrade's runs: the preflight stops a run before any stop when the role
 * cannot alter the tables or a host's service could not start; a host that fails during the rollout
 * is diagnosed before the rollback, which still runs, and the report says why it failed.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RolledBackError } from '../../src/core/errors.ts'
import { switchLabFault, type LabFault } from '../../src/lab/recording-faults.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { recordingSectionsOf } from '../../src/recording/recording-report.ts'
import { buildReport } from '../../src/reports/report.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { recording } from '../../playbooks/upgrade.ts'
import { startSystemRun } from '../../src/runs/run-actions.ts'
import { startUpgradeLab, type UpgradeLab } from '../recording/fixture.ts'

let lab: UpgradeLab
const target = () => ({
  env: lab.env(),
  superuserPassword: readFileSync(join(lab.labDir, 'secrets', 'postgres-password'), 'utf8').trim(),
})

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 6 })
  lab.setRecording({ healthTimeoutSeconds: 4 })
}, 180_000)

afterAll(async () => {
  await lab?.stop()
})

async function withFault<T>(fault: LabFault, fn: () => Promise<T>): Promise<T> {
  await switchLabFault(target(), fault, true)
  try {
    return await fn()
  } finally {
    await switchLabFault(target(), fault, false)
  }
}

function newestRun(): Journal {
  const id = listRuns()[0]?.id
  if (!id) throw new Error('no run')
  return Journal.open(id)
}

describe('the doctor in the upgrade runs', () => {
  it('the ownership preflight stops a run whose role cannot alter the tables, before any stop', async () => {
    const error = await withFault('tables-not-owned', () =>
      startSystemRun(recording, { env: lab.env(), to: '2.0.0' }).catch((e: unknown) => e),
    )
    expect(error).toBeInstanceOf(Error)
    expect(error).not.toBeInstanceOf(RolledBackError)
    expect((error as Error).message).toMatch(/owns every table no — not recordings \(owner postgres\)/)
    const journal = newestRun()
    expect(journal.entries().some((e) => e.disruptive)).toBe(false)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
  })

  it('a cause only the service sees (its config does not parse) stops the run in the doctor preflight, with the finding in the report', async () => {
    const error = await withFault('config-syntax', () =>
      startSystemRun(recording, { env: lab.env(), to: '2.0.0' }).catch((e: unknown) => e),
    )
    expect((error as Error).message).toMatch(/Preflight: .*config-syntax/)
    const journal = newestRun()
    expect(journal.entries().some((e) => e.disruptive)).toBe(false)
    const report = buildReport(journal, recordingDescription)
    expect(recordingSectionsOf(report).diagnoses[0]?.findings).toEqual([expect.objectContaining({ cause: 'config-syntax', host: 'rec-1' })])
    expect(readFileSync(journal.file('report.md'), 'utf8')).toMatch(/## Why it failed \(doctor\)[\s\S]*config-syntax/)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
  })

  it('a failed migration is diagnosed on the host before the rollback, the rollback still runs, and the report says why', async () => {
    const error = await startSystemRun(recording, { env: lab.env(), to: '2.1.0+migfail' }).catch((e: unknown) => e)
    expect(error, (error as Error).message).toBeInstanceOf(RolledBackError)
    const journal = newestRun()
    const report = buildReport(journal, recordingDescription)
    const diagnosis = recordingSectionsOf(report).diagnoses.find((d) => d.step === 'diagnose')
    expect(diagnosis?.host).toBe('rec-1')
    // Its migration failed (migration-history); when the diagnosis finds the service already exited, its
    // service manager's state is named too (service-start): which one depends on when supervisor gave up.
    expect(diagnosis?.findings).toEqual(expect.arrayContaining([expect.objectContaining({ cause: 'migration-history', host: 'rec-1' })]))
    expect(diagnosis?.findings.map((f) => (f as { cause: string }).cause).filter((c) => c !== 'service-start')).toEqual([
      'migration-history',
    ])
    expect(JSON.stringify(diagnosis?.findings)).toMatch(/migration to schema 3 failed and was rolled back/)
    const entries = journal.entries().map((e) => `${e.step} ${e.status}`)
    expect(entries.indexOf('diagnose ok')).toBeLessThan(entries.indexOf('rollback:decide ok'))
    expect(readFileSync(journal.file('report.md'), 'utf8')).toMatch(/## Why it failed \(doctor\)[\s\S]*migration-history/)
    // The picture's page says why too: the finding, its evidence and its fix.
    expect(readFileSync(journal.file('report.html'), 'utf8')).toMatch(
      /<h2>Why it failed \(doctor\)<\/h2>[\s\S]*data-cause="migration-history"[\s\S]*fix: /,
    )
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
    expect(await lab.healthy()).toEqual([true])
  })

  it('a host that answers slowly after the upgrade is diagnosed before the rollback (a content info cache too small), and the rollback still runs', async () => {
    // Any answer counts as slow at a 1 ms limit: what is under test is what a slow host leads to.
    lab.setRecording({ healthTimeoutSeconds: 4, slowResponseMs: 1 })
    try {
      const error = await withFault('tiny-cache', () => startSystemRun(recording, { env: lab.env(), to: '1.5.0' }).catch((e: unknown) => e))
      expect(error, (error as Error).message).toBeInstanceOf(RolledBackError)
      expect((error as Error).message).toMatch(/response time — .* took \d+ ms, over recording\.slowResponseMs \(1 ms\): slow performance/)
      const journal = newestRun()
      const diagnosis = recordingSectionsOf(buildReport(journal, recordingDescription)).diagnoses.find((d) => d.step === 'diagnose')
      expect(diagnosis?.findings).toEqual([expect.objectContaining({ cause: 'content-info-cache', host: 'rec-1' })])
      expect(readFileSync(journal.file('report.md'), 'utf8')).toMatch(/## Why it failed \(doctor\)[\s\S]*content-info-cache/)
      expect(journal.run.phase).toBe('rolled-back')
      expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
    } finally {
      lab.setRecording({ healthTimeoutSeconds: 4 })
    }
  })
})
