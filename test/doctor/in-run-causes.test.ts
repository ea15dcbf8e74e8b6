/**
 * Every cause of the seed's "common upgrade problems" inside an upgrade: with its lab fault on, an
 * upgrade does not go through, nothing stays changed, and the run's report carries the doctor's
 * finding for that cause — from the preflight (causes knowable before a stop stop the run there) or
 * from the diagnosis of the failed host before the rollback (slow performance: any answer counts as
 * slow at `slowResponseMs: 1`, so each performance fault is diagnosed after an upgrade that ends slow).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
  lab.setRecording({ healthTimeoutSeconds: 4, slowResponseMs: 1 })
}, 180_000)

afterAll(async () => {
  await lab?.stop()
})

// `preflight`: svcops' own preflight (its role's ownership of the tables) stops the run before the doctor's.
const cases: { fault: LabFault; cause: string; preflight?: RegExp }[] = [
  { fault: 'config-syntax', cause: 'config-syntax' },
  { fault: 'password-unreadable', cause: 'file-permissions' },
  { fault: 'tables-not-owned', cause: 'schema-change-permission', preflight: /owns every table no — not recordings \(owner postgres\)/ },
  { fault: 'storage-unwritable', cause: 'storage-paths' },
  { fault: 'location-renamed', cause: 'storage-location-names' },
  { fault: 'media-api-wrong', cause: 'media-api' },
  { fault: 'tiny-cache', cause: 'content-info-cache' },
  { fault: 'rate-limit', cause: 'write-rate-limit' },
  { fault: 'missing-index', cause: 'list-query' },
  { fault: 'storage-full', cause: 'disk-io' },
]

describe('an upgrade into each lab fault', () => {
  it.each(cases)(
    '$fault: does not go through, changes nothing for good, and its report names $cause',
    async ({ fault, cause, preflight }) => {
      await switchLabFault(target(), fault, true)
      let error: unknown
      try {
        error = await startSystemRun(recording, { env: lab.env(), to: '1.5.0' }).then(
          () => undefined,
          (e: unknown) => e,
        )
      } finally {
        await switchLabFault(target(), fault, false)
      }
      expect(error, `the upgrade into ${fault} succeeded`).toBeInstanceOf(Error)
      const journal = Journal.open(listRuns()[0]?.id as string)
      expect(['failed', 'rolled-back']).toContain(journal.run.phase)
      if (preflight) {
        expect((error as Error).message).toMatch(preflight)
        expect(journal.entries().some((e) => e.disruptive)).toBe(false)
        return
      }
      const findings = recordingSectionsOf(buildReport(journal, recordingDescription)).diagnoses.flatMap(
        (d) => d.findings as { cause: string; host: string }[],
      )
      expect(findings).toEqual(expect.arrayContaining([expect.objectContaining({ cause, host: 'rec-1' })]))
      expect(readFileSync(journal.file('report.md'), 'utf8')).toMatch(new RegExp(`## Why it failed \\(doctor\\)[\\s\\S]*${cause}`))
      expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
      expect(await lab.healthy()).toEqual([true])
    },
  )
})
