/**
 * What a confirmation prompt says before a run: the run a rollback undoes, the versions back, the
 * hosts, and the downtime measured in the environment's last run — or that it is unknown.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { promptsOver } from '../../src/commands/prompts.ts'
import { systemDescriptions } from '../../src/edge/system-folders.ts'
import { writeFailedRun } from './failed-run.ts'

// The prompts read earlier runs as their systems describe them: the registry the CLI builds.
const { upgradePrompt, rollbackPrompt } = promptsOver(await systemDescriptions())

const saved = process.env.SVCOPS_RUNS_DIR
afterEach(() => {
  if (saved === undefined) delete process.env.SVCOPS_RUNS_DIR
  else process.env.SVCOPS_RUNS_DIR = saved
})

describe('confirmation prompts', () => {
  it('an upgrade names the hosts and versions, and says the downtime is unknown without an earlier run', () => {
    process.env.SVCOPS_RUNS_DIR = mkdtempSync(join(tmpdir(), 'svcops-prompts-'))
    expect(upgradePrompt('the recording service', 'prod', 'recording', ['rec-1', 'rec-2'], '2.0.0')).toBe(
      "Upgrade the recording service of 'prod' to 2.0.0: rec-1, rec-2, from versions no earlier run recorded; expected downtime: unknown (no earlier run measured it)?",
    )
  })

  it('an upgrade names the version each host goes from, as the last run left them, and the downtime measured then', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-prompts-'))
    process.env.SVCOPS_RUNS_DIR = base
    writeFailedRun({ base }) // rolled back: every host ended on 1.5.0
    expect(upgradePrompt('the recording service', 'prod', 'recording', ['rec-1', 'rec-2', 'rec-6'], '2.0.1')).toBe(
      "Upgrade the recording service of 'prod' to 2.0.1: rec-1, rec-2 from 1.5.0; rec-6 from unknown (as run 20261124T023000Z-a1b2c3 left them); expected downtime: about 1 min 48 s per host, as measured in run 20261124T023000Z-a1b2c3?",
    )
  })

  it('a rollback names the run it undoes, each host back to its version, and the downtime measured before', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-prompts-'))
    process.env.SVCOPS_RUNS_DIR = base
    writeFailedRun({ base })
    expect(rollbackPrompt('the recording service', 'prod', 'recording')).toBe(
      "Roll back the recording service of 'prod': run 20261124T023000Z-a1b2c3 (to 2.0.0, rolled-back), rec-1 back to 1.5.0, rec-2 back to 1.5.0, rec-3 back to 1.5.0, rec-4 back to 1.5.0, rec-5 back to 1.5.0; expected downtime: about 1 min 48 s per host, as measured in run 20261124T023000Z-a1b2c3?",
    )
  })
})
