/**
 * The recording service under a second, different contract declared in the stack
 * (`svcops:recording.checks`, docs/contract.md): instead of the lab's configuration-file check, the
 * service refuses an unauthenticated content list (401) and its configuration file holds the
 * database's section. An upgrade, `svcops verify recording` and a rollback pass with it, each
 * asking the declared checks after the seed's own; the upgrade's verification journals them.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCliInProcess, startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.5.0', recordings: 2 })
}, 120_000)

afterAll(async () => {
  await lab?.stop()
})

const SECOND_CONTRACT = [
  { name: 'refuses an unauthenticated list', web: { path: '/api/v1/content?limit=1', status: 401 } },
  {
    name: 'its configuration names the database',
    command: { argv: ['grep', '-q', '"database"', '{root}/etc/opt/{product}/recording.json'] },
  },
]

describe('the recording service under a second contract', () => {
  it('upgrade 1.5.0 -> 2.0.0, verify and rollback pass, each asking the declared checks after the seed’s own', async () => {
    const before = lab.env().recording?.checks
    lab.setRecording({ checks: SECOND_CONTRACT })
    try {
      const up = await runCliInProcess(['--stack-file', lab.envFile, '--json', 'upgrade', 'recording', '--to', '2.0.0', '--yes'], {
        SVCOPS_RUNS_DIR: lab.runsDir,
      })
      expect(up.code, up.stderr).toBe(0)
      expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0' })
      const { runId } = JSON.parse(up.stdout) as { runId: string }
      const journal = readFileSync(join(lab.runsDir, runId, 'journal.jsonl'), 'utf8')
      const verified = journal
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { step: string; status: string; data?: { checks?: Array<{ check: string; ok: boolean }> } })
        .find((e) => e.step === 'verify-host' && e.status === 'ok')
      expect(verified?.data?.checks?.filter((c) => SECOND_CONTRACT.some((d) => d.name === c.check))).toEqual([
        { check: 'refuses an unauthenticated list', ok: true },
        { check: 'its configuration names the database', ok: true },
      ])

      const verify = await runCliInProcess(['--stack-file', lab.envFile, '--json', 'verify', 'recording', '--no-test-recording'])
      expect(verify.code, verify.stdout).toBe(0)
      expect(verify.stdout).toContain('refuses an unauthenticated list')

      const back = await runCliInProcess(['--stack-file', lab.envFile, '--json', 'rollback', 'recording', '--yes'], {
        SVCOPS_RUNS_DIR: lab.runsDir,
      })
      expect(back.code, back.stderr).toBe(0)
      expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0' })
    } finally {
      lab.setRecording({ checks: before })
    }
  })
})
