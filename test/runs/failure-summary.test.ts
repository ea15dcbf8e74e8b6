/**
 * A failed run's report as the on-call engineer reads it first: `runs show`, report.md and
 * report.html open with what failed, where, that host's status and last log lines, the doctor's
 * finding (or that it found none among its checks) and the exact next command; the doctor's passing
 * checks are one line. Read from a run folder, the way `svcops runs show` reads it.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildReport, writeReport } from '../../src/reports/report.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { renderClosingLine, renderRunText } from '../../src/reports/report-text.ts'
import { formatDuration } from '../../src/core/events.ts'
import { outcomeSentence } from '../../src/reports/timeline.ts'
import { startChromium, type Browser } from './chromium.ts'
import { writeFailedRun } from './failed-run.ts'

const NEXT = 'Next: svcops doctor recording --env prod, then svcops resume 20261124T023000Z-a1b2c3 --retry'
let browser: Browser

beforeAll(async () => {
  browser = await startChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
})

describe('the first lines of a failed run', () => {
  it('runs show: the outcome, then what failed, where, the last log lines, the doctor and the next command, before the timeline', () => {
    const report = buildReport(writeFailedRun({ diagnosis: true }), recordingDescription)
    const lines = renderRunText(report, outcomeSentence(report)).split('\n')
    expect(lines.slice(0, 8)).toEqual([
      outcomeSentence(report),
      '',
      "Failed: start failed: svc-recording on rec-5 exited: invalid logLevel 'loud'",
      'Where: rec-5 (status: FATAL)',
      'Last log lines of rec-5:',
      '  2026-11-24T02:31:20Z level=info msg="recording service 2.0.0 starting"',
      `  2026-11-24T02:31:20Z level=error msg="invalid logLevel 'loud'; expected debug, info, warn or error"`,
      'Doctor: no known cause among its 3 checks.',
    ])
    expect(lines[8]).toBe(NEXT)
  })

  it('report.md opens with the same lines, never says "No cause found", and collapses passing checks to one line', () => {
    const journal = writeFailedRun({ diagnosis: true })
    writeReport(journal, recordingDescription)
    const md = readFileSync(journal.file('report.md'), 'utf8')
    const head = md.split('\n').slice(0, 12).join('\n')
    expect(head).toContain("Failed: start failed: svc-recording on rec-5 exited: invalid logLevel 'loud'")
    expect(head).toContain("level=error msg=\"invalid logLevel 'loud'")
    expect(head).toContain(NEXT)
    expect(md).not.toContain('No cause found')
    expect(md).toContain('2 check(s) passed: config-syntax, storage-unwritable.')
    expect(md).not.toMatch(/\| rec-5 \| config-syntax \|/)
    expect(md).toMatch(/\| rec-5 \| password-unreadable \| password file \| skipped/)
  })

  it('a run left failed with --no-auto-rollback names the rollback; one that failed before any host says so', () => {
    const journal = writeFailedRun({ diagnosis: true })
    journal.update({ phase: 'failed' })
    const failed = buildReport(journal, recordingDescription)
    expect(failed.failure?.next).toBe('svcops resume 20261124T023000Z-a1b2c3 --rollback')
    const bare = writeFailedRun()
    const noDiagnosis = buildReport(bare, recordingDescription)
    expect(noDiagnosis.failure?.logsNote).toBe('no log lines were recorded for rec-5')
  })

  it('report.html shows them above the timeline, with the log lines', async () => {
    const journal = writeFailedRun({ diagnosis: true })
    writeReport(journal, recordingDescription)
    await browser.open(journal.file('report.html'))
    const dom = await browser.evaluate<{ failureBottom: number; svgTop: number; what: string; logs: string; next: string }>(`(() => ({
      failureBottom: document.querySelector('#failure').getBoundingClientRect().bottom,
      svgTop: document.querySelector('svg.timeline').getBoundingClientRect().top,
      what: document.querySelector('#failure-what').textContent,
      logs: document.querySelector('#failure-logs').textContent,
      next: document.querySelector('#failure-next').textContent,
    }))()`)
    expect(dom.failureBottom).toBeLessThanOrEqual(dom.svgTop)
    expect(dom.what).toBe("Failed: start failed: svc-recording on rec-5 exited: invalid logLevel 'loud'")
    expect(dom.logs).toContain("level=error msg=\"invalid logLevel 'loud'")
    expect(`${dom.next}`).toBe(NEXT)
  })
})

describe('the last line of a run', () => {
  it('sums up the outcome, what changed, the downtime and where the report is', () => {
    const journal = writeFailedRun()
    const report = buildReport(journal, recordingDescription)
    expect(renderClosingLine(report, journal.file('report.md'))).toBe(
      `Run 20261124T023000Z-a1b2c3: ${outcomeSentence(report)} Every host on its version before the run; downtime ${formatDuration(
        report.downtime.reduce((sum, d) => sum + (d.downtimeMs ?? 0), 0),
      )} in all over 5 hosts. Report: ${journal.file('report.md')}`,
    )
  })
})
