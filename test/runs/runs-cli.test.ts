/**
 * `svcops runs list` and `svcops runs show` read run folders as they are on disk: the table with
 * outcome, duration and longest downtime, filtered by environment and kind; the timeline drawn one
 * line per host; the report written where asked.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runSvcops, runSvcopsInProcess } from '../support/cli.ts'
import { writeFailedRun } from './failed-run.ts'

// writeFailedRun makes the recording service known to reports, as the CLI does.

describe('svcops runs', () => {
  const base = mkdtempSync(join(tmpdir(), 'svcops-runs-cli-'))
  const journal = writeFailedRun({ base })
  const env = { SVCOPS_RUNS_DIR: base, SVCOPS_ENV: '' }

  it('lists runs as a table with system, outcome, duration and longest downtime, filtered by --env, --kind and --system', async () => {
    const all = await runSvcops(['runs', 'list'], { env })
    expect(all.code).toBe(0)
    const [head, row] = all.stdout.trim().split('\n')
    expect(head).toMatch(/^ID\s+ENV\s+SYSTEM\s+KIND\s+TARGET\s+OUTCOME\s+DURATION\s+LONGEST DOWNTIME$/)
    expect(row).toMatch(/^20261124T023000Z-a1b2c3\s+prod\s+recording\s+upgrade\s+2\.0\.0\s+rolled-back\s+2 min 17 s\s+1 min 48 s rec-1$/)
    // The filters read the same folder, in this process: the table above and the refusal below are the real CLI's.
    expect((await runSvcopsInProcess(['runs', 'list', '--system', 'live'], { env })).stdout.trim()).toBe('No runs yet.')
    expect((await runSvcopsInProcess(['runs', 'list', '--system', 'recording'], { env })).stdout).toContain('20261124T023000Z-a1b2c3')
    const refused = await runSvcops(['runs', 'list', '--system', 'kube'], { env })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('recording, live')
    expect((await runSvcopsInProcess(['runs', 'list', '--env', 'staging'], { env })).stdout.trim()).toBe('No runs yet.')
    expect((await runSvcopsInProcess(['runs', 'list', '--kind', 'backup'], { env })).stdout.trim()).toBe('No runs yet.')
    const json = JSON.parse(
      (await runSvcopsInProcess(['runs', 'list', '--env', 'prod', '--kind', 'upgrade', '--json'], { env })).stdout,
    ) as {
      runs: Array<{ id: string; durationMs: number; longestDowntime: { host: string } }>
    }
    expect(json.runs.map((r) => [r.id, r.durationMs, r.longestDowntime.host])).toEqual([['20261124T023000Z-a1b2c3', 137_000, 'rec-1']])
  })

  it('shows the outcome and the timeline, one line per host with its batch and downtime; --html writes the report', async () => {
    const out = join(base, 'copy.html')
    const shown = await runSvcops(['runs', 'show', journal.run.id, '--html', out], { env })
    expect(shown.code).toBe(0)
    const lines = shown.stdout.split('\n')
    expect(lines[0]).toMatch(/^Upgrade of prod to 2\.0\.0 failed in batch 2 on rec-5 at start and was rolled back \(database restored\)/)
    for (const [host, batch] of [
      ['rec-1', 'canary'],
      ['rec-2', 'batch 1'],
      ['rec-5', 'batch 2'],
    ])
      expect(lines.find((l) => l.startsWith(`${host} (${batch})`))).toMatch(/[xishv]+.*[XISHV]+.*down \d/)
    expect(lines.find((l) => l.startsWith('rec-5'))).toContain('!')
    expect(lines.find((l) => l.includes('canary 02:30:25'))).toContain('batch 2 02:31:14; window ends 02:34:00')
    expect(existsSync(out)).toBe(true)
    expect(readFileSync(out, 'utf8')).toContain('<svg class="timeline"')
  })
})
