/**
 * Site steps hooked on a playbook's steps by their values (src/runs/site-steps.ts), on the recording
 * upgrade run by the engine against the in-memory recording service (test/support/recording-world.ts):
 * a hook before the first stop and one after the fleet's verification run once each, in their
 * place; when the upgrade fails after the first one, the rollback undoes it after the playbook's own
 * rollback. The live upgrade's site (the example src/runs/site-steps.ts documents) runs on a live lab
 * in test/live/site-steps.test.ts; here its hooks are checked to sit on steps the live upgrade runs.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { upgradeLiveSite } from '../../playbooks/site/index.ts'
import { recording } from '../../playbooks/upgrade.ts'
import { preflight, stopComponent, verifySystem } from '../../src/live/live-steps.ts'
import { verifyFleet } from '../../src/recording/fleet-check.ts'
import type { RecordingContext } from '../../src/recording/recording-context.ts'
import { newUpgradeRecord } from '../../src/recording/recording-system.ts'
import { stopService } from '../../src/recording/target-steps.ts'
import { Journal } from '../../src/runs/journal.ts'
import { startRun } from '../../src/runs/playbook.ts'
import { after, before, type SiteStep } from '../../src/runs/site-steps.ts'
import { defineStep } from '../../src/runs/step.ts'
import { RecordingWorld } from '../support/recording-world.ts'

let runs: string
let runsBefore: string | undefined
beforeAll(() => {
  runs = mkdtempSync(join(tmpdir(), 'svcops-site-hooks-'))
  runsBefore = process.env.SVCOPS_RUNS_DIR
  process.env.SVCOPS_RUNS_DIR = runs
})
afterAll(() => {
  if (runsBefore === undefined) delete process.env.SVCOPS_RUNS_DIR
  else process.env.SVCOPS_RUNS_DIR = runsBefore
  rmSync(runs, { recursive: true, force: true })
})

/** A site step that only says it ran. */
const siteStep = (id: string, undo?: SiteStep<RecordingContext>): SiteStep<RecordingContext> => ({
  ...defineStep<RecordingContext>({ id, title: `${id} (site step)`, describe: () => [id], act: () => Promise.resolve({ changed: [id] }) }),
  ...(undo ? { undo } : {}),
})

/** Upgrades the world's two hosts from 1.5.0 to `to` with `site` on the recording upgrade; the journal's `step status` lines. */
async function upgradeWith(to: string, failing?: { host: string; version: string }): Promise<string[]> {
  const world = new RecordingWorld({
    hosts: ['rec-1', 'rec-2'],
    version: '1.5.0',
    recordings: 2,
    releases: ['1.5.0', to],
    ...(failing ? { failing } : {}),
  })
  const record = newUpgradeRecord({ env: world.env, to, batch: 1 })
  const site = [before(stopService, siteStep('site-before-stop', siteStep('site-undo'))), after(verifyFleet, siteStep('site-after-verify'))]
  await startRun({
    playbook: { ...recording.playbook(record), site },
    journal: Journal.create(record),
    lock: world.takeLock(record.id),
    open: world.opener(),
    system: recording,
  }).catch(() => undefined)
  return Journal.open(record.id)
    .entries()
    .map((e) => `${e.step}${e.host ? `@${e.host}` : ''} ${e.status}`)
}

describe('site steps hooked on step values', () => {
  it('run once each: before the first stop, and after the verification', async () => {
    const steps = await upgradeWith('1.6.0')
    expect(steps.filter((s) => s.startsWith('site-'))).toEqual([
      'site-before-stop start',
      'site-before-stop ok',
      'site-after-verify start',
      'site-after-verify ok',
    ])
    const firstStop = steps.findIndex((s) => s.startsWith('stop@'))
    expect(steps[firstStop - 1]).toBe('site-before-stop ok')
    expect(steps.indexOf('site-after-verify start')).toBe(steps.indexOf('verify ok') + 1)
    expect(steps.some((s) => s.startsWith('rollback:'))).toBe(false)
  })

  it('a failed upgrade is rolled back, then the site step that ran is undone; the one after never ran', async () => {
    const steps = await upgradeWith('1.6.0', { host: 'rec-1', version: '1.6.0' })
    expect(steps).toContain('site-before-stop ok')
    expect(steps.some((s) => s.startsWith('site-after-verify'))).toBe(false)
    const undo = steps.indexOf('rollback:site-undo ok')
    expect(undo).toBeGreaterThan(-1)
    // After every step of the playbook's own rollback.
    expect(steps.slice(undo + 1).filter((s) => s.startsWith('rollback:'))).toEqual([])
    expect(steps.filter((s) => s.startsWith('rollback:') && !s.startsWith('rollback:site')).length).toBeGreaterThan(0)
  })

  it("the documented live example hooks on the live upgrade's own steps", () => {
    expect(upgradeLiveSite.map((h) => [h.when, h.at, h.step.id])).toEqual([
      ['before', preflight, 'site-notice'],
      ['before', stopComponent, 'site-drain-ingest'],
      ['after', verifySystem, 'site-restore-ingest'],
    ])
  })
})
