/**
 * End to end on the lab: a real upgrade of two hosts where the second (batch 1) refuses to start
 * on the new version, rolled back automatically — the run folder holds report.html, and headless
 * Chromium shows both lanes with their batch, the failure and the rollback, and each downtime; a
 * rollback asked for after it names the run already rolled back.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { exitCodeFor } from '../../src/core/errors.ts'
import { listRuns } from '../../src/runs/journal.ts'
import { recording } from '../../playbooks/upgrade.ts'
import { startSystemRun } from '../../src/runs/run-actions.ts'
import { runCli, startUpgradeLab, type UpgradeLab } from '../recording/fixture.ts'
import { startChromium, type Browser } from './chromium.ts'

let lab: UpgradeLab
let browser: Browser

// A lab starts slowly on a loaded machine (real PostgreSQL, sshd, supervisord per host).
beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 2, version: '1.5.0', recordings: 3 })
  browser = await startChromium()
}, 600_000)

afterAll(async () => {
  await browser?.close()
  await lab?.stop()
})

describe('report.html of a lab run', () => {
  it('a run that failed in batch 1 and rolled back writes report.html whose picture shows it', async () => {
    // rec-2's operator set an option 2.0.0 validates and 1.5.0 ignores: 2.0.0 refuses to start there.
    const rec2 = lab.env().recording!.hosts[1]!
    const configFile = join(rec2.root!, 'etc/opt/svc/recording.json')
    const config = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>
    writeFileSync(configFile, JSON.stringify({ ...config, logLevel: 'loud' }, null, 2))
    const error = await startSystemRun(recording, { env: lab.env(), to: '2.0.0', batch: 1, windowMs: 3_600_000 }).catch((e: unknown) => e)
    expect(exitCodeFor(error)).toBe(4)
    const run = listRuns(lab.runsDir)[0]!
    const file = join(lab.runsDir, run.id, 'report.html')
    await browser.open(file)
    const dom = await browser.evaluate<{
      lanes: string[]
      batches: string[]
      batchX: number[]
      window: boolean
      downtime: string[]
      failed: string[]
      rollback: number
      outcome: string
    }>(`(() => ({
      lanes: [...document.querySelectorAll('svg.timeline g.lane')].map((g) => g.dataset.host + ':' + (g.dataset.batch ?? '')),
      batches: [...document.querySelectorAll('svg.timeline g.batch-marker')].map((g) => g.dataset.batch),
      batchX: [...document.querySelectorAll('svg.timeline g.batch-marker line')].map((l) => Number(l.getAttribute('x1'))),
      window: document.querySelector('svg.timeline g.window-end') !== null,
      downtime: [...document.querySelectorAll('svg.timeline text.downtime')].map((t) => t.dataset.host),
      failed: [...document.querySelectorAll('svg.timeline rect.status-failed')].map((r) => r.closest('g.lane').dataset.host),
      rollback: document.querySelectorAll('svg.timeline rect.bar.rollback').length,
      outcome: document.querySelector('#outcome').textContent,
    }))()`)
    expect(dom.lanes).toEqual(['run:', 'rec-1:canary', 'rec-2:batch 1'])
    expect(dom.batches).toEqual(['canary', 'batch 1'])
    // batch 1 starts after the canary was verified, not when packages were staged on every host
    expect((dom.batchX[1] ?? 0) - (dom.batchX[0] ?? 0)).toBeGreaterThan(20)
    expect(dom.window).toBe(true)
    expect(dom.downtime).toEqual(['rec-1', 'rec-2'])
    expect(dom.failed).toContain('rec-2')
    expect(dom.rollback).toBeGreaterThan(4)
    expect(dom.outcome).toMatch(
      /^Upgrade of \S+ to 2\.0\.0 failed in batch 1 on rec-2 at \S+ and was rolled back \(database restored\); longest downtime/,
    )
    // The first lines an on-call engineer reads: rec-2's status and its last log lines naming the bad option, and what to run next.
    const failure = await browser.evaluate<{ where: string; logs: string; next: string }>(`(() => ({
      where: document.querySelector('#failure-where').textContent,
      logs: document.querySelector('#failure-logs').textContent,
      next: document.querySelector('#failure-next').textContent,
    }))()`)
    expect(failure.where).toMatch(/^Where: rec-2 \(status: \S+/)
    expect(failure.logs).toMatch(/FATAL .*logLevel: Invalid option/)
    expect(failure.next).toBe(`Next: svcops doctor recording --env lab, then svcops resume ${run.id} --retry`)
    const md = readFileSync(join(lab.runsDir, run.id, 'report.md'), 'utf8')
    expect(md.split('\n').slice(0, 30).join('\n')).toMatch(/Last log lines of rec-2:\n(.*\n)*.*FATAL .*logLevel: Invalid option/)
    expect(md).not.toContain('No cause found')
    const png = await browser.screenshot()
    writeFileSync(join(lab.dir, 'report.png'), png)
    // For docs/operations.png: SVCOPS_REPORT_SCREENSHOT=$PWD/docs/operations.png npx vitest run test/runs/lab-report.test.ts
    if (process.env.SVCOPS_REPORT_SCREENSHOT) writeFileSync(process.env.SVCOPS_REPORT_SCREENSHOT, await browser.screenshot(520))
  }, 300_000)

  it('rollback recording after that automatic rollback names the run already rolled back, and why', async () => {
    const run = listRuns(lab.runsDir)[0]!
    const again = await runCli(['--env', 'lab', '--stack-file', lab.envFile, 'rollback', 'recording', '--yes'], {
      SVCOPS_RUNS_DIR: lab.runsDir,
    })
    expect(again.code, again.stderr).toBe(2)
    expect(again.stderr).toContain(
      `There is no upgrade run of environment 'lab' left to roll back: its newest, ${run.id} (to 2.0.0), was already rolled back automatically after: `,
    )
    expect(again.stderr).toContain(`See it with: svcops runs show ${run.id}`)
  }, 120_000)
})
