/**
 * report.html of a run that failed in its second batch and was rolled back, opened in Debian's
 * headless Chromium: the picture has a lane per host with its batch, the batch markers, the
 * maintenance window's end and each host's downtime; the outcome is one sentence; no secret is in
 * the page. A screenshot is written to the test's temp dir.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clearSecretsForTests, registerSecret } from '../../src/core/redact.ts'
import { writeReport } from '../../src/reports/report.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { startChromium, type Browser } from './chromium.ts'
import { HOSTS, writeFailedRun } from './failed-run.ts'

const SECRET = 'hunter2-recording-psk-9f8e7d'
let browser: Browser

beforeAll(async () => {
  browser = await startChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  clearSecretsForTests()
})

describe('report.html', () => {
  it('draws a failed-in-batch-2, rolled-back run: lanes, batches, window line, downtime labels; no secret', async () => {
    registerSecret(SECRET)
    const journal = writeFailedRun({ secret: SECRET })
    writeReport(journal, recordingDescription)
    const file = journal.file('report.html')
    const html = readFileSync(file, 'utf8')
    expect(html).not.toContain(SECRET)
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org\/2000\/svg)/)

    await browser.open(file)
    const dom = await browser.evaluate<{
      lanes: Array<{ host: string; batch: string | null }>
      batches: string[]
      window: string | null
      downtime: Record<string, string>
      rollbackBars: number
      failed: string[]
      outcome: string
    }>(`(() => ({
      lanes: [...document.querySelectorAll('svg.timeline g.lane')].map((g) => ({ host: g.dataset.host, batch: g.dataset.batch ?? null })),
      batches: [...document.querySelectorAll('svg.timeline g.batch-marker')].map((g) => g.dataset.batch),
      window: document.querySelector('svg.timeline g.window-end text')?.textContent ?? null,
      downtime: Object.fromEntries([...document.querySelectorAll('svg.timeline text.downtime')].map((t) => [t.dataset.host, t.textContent])),
      rollbackBars: document.querySelectorAll('svg.timeline rect.bar.rollback').length,
      failed: [...document.querySelectorAll('svg.timeline rect.status-failed')].map((r) => r.closest('g.lane').dataset.host + ' ' + r.dataset.step),
      outcome: document.querySelector('#outcome').textContent,
    }))()`)
    expect(dom.lanes).toEqual([
      { host: 'run', batch: null },
      { host: 'rec-1', batch: 'canary' },
      { host: 'rec-2', batch: 'batch 1' },
      { host: 'rec-3', batch: 'batch 1' },
      { host: 'rec-4', batch: 'batch 2' },
      { host: 'rec-5', batch: 'batch 2' },
    ])
    expect(dom.batches).toEqual(['canary', 'batch 1', 'batch 2'])
    expect(dom.window).toBe('window ends 02:34:00 →')
    expect(Object.keys(dom.downtime)).toEqual(HOSTS)
    for (const label of Object.values(dom.downtime)) expect(label).toMatch(/^down \d+(\.\d)? s$|^down \d+ min \d+ s$/)
    expect(dom.rollbackBars).toBeGreaterThan(HOSTS.length * 3)
    expect(dom.failed).toEqual(['rec-5 start'])
    expect(dom.outcome).toBe(
      'Upgrade of prod to 2.0.0 failed in batch 2 on rec-5 at start and was rolled back (database restored); longest downtime 1 min 48 s on rec-1.',
    )
    const text = await browser.evaluate<string>('document.body.innerText')
    expect(text).toContain('Recordings re-created (1)')
    expect(text).not.toContain(SECRET)

    const png = await browser.screenshot()
    expect(png.subarray(1, 4).toString()).toBe('PNG')
    writeFileSync(join(journal.dir, 'report.png'), png)
    // For docs/operations.png: SVCOPS_REPORT_SCREENSHOT=docs/operations.png npx vitest run test/runs/report-html.test.ts
    if (process.env.SVCOPS_REPORT_SCREENSHOT) writeFileSync(process.env.SVCOPS_REPORT_SCREENSHOT, await browser.screenshot(560))
  })
})
