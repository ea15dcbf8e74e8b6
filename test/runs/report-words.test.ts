/**
 * Each system in its own words, drawn by headless Chromium: a live run's report.html names
 * components in dependency order (no canary, no batch, "Downtime per component") and paints its
 * failed check red; a recording run whose batches started within a second keeps every batch label
 * apart; a failed health wait is a red bar, not a green one with a red outline.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { liveDescription } from '../../src/live/live-description.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { writeReport } from '../../src/reports/report.ts'
import { Journal, type JournalEntry } from '../../src/runs/journal.ts'
import type { RunRecord } from '../../src/runs/run-record.ts'
import { startChromium, type Browser } from './chromium.ts'

const T0 = Date.parse('2026-11-25T02:00:00.000Z')
let browser: Browser

beforeAll(async () => {
  browser = await startChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
})

/** A journal written as a run would write it: `steps` are [name, host, startSecond, seconds, status]. */
function writeRun(
  run: Omit<RunRecord, 'startedAt' | 'finishedAt' | 'holder' | 'pid' | 'envFile' | 'autoRollback'>,
  steps: [string, string | undefined, number, number, 'ok' | 'failed'][],
): Journal {
  const base = mkdtempSync(join(tmpdir(), 'svcops-words-'))
  const at = (s: number) => new Date(T0 + s * 1000).toISOString()
  const end = Math.max(...steps.map(([, , s, d]) => s + d)) + 1
  const record: RunRecord = {
    ...run,
    envFile: '/etc/svcops/stacks/Pulumi.prod.yaml',
    autoRollback: true,
    startedAt: at(0),
    finishedAt: at(end),
    holder: 'svcops@cron',
    pid: 4242,
  }
  const entries: JournalEntry[] = []
  for (const [step, host, start, seconds, status] of steps) {
    const on = host ? { host } : {}
    const stop = step === 'stop' ? { disruptive: true } : {}
    entries.push({ time: at(start), step, status: 'start', ...on, ...stop })
    entries.push({
      time: at(start + seconds),
      step,
      status,
      durationMs: seconds * 1000,
      ...on,
      ...(status === 'failed' ? { detail: `${host ?? 'run'} did not pass ${step}` } : {}),
      ...(status === 'ok' && (step === 'check' || step === 'verify-host') ? { report: 'verified' } : {}),
    })
  }
  const journal = Journal.create(record, base)
  entries.sort((a, b) => a.time.localeCompare(b.time))
  writeFileSync(journal.file('journal.jsonl'), entries.map((e) => JSON.stringify(e)).join('\n') + '\n')
  return journal
}

/** Every pair of the elements matched by `selector` whose boxes overlap, as "a / b". */
const OVERLAPS = (selector: string) => `(() => {
  const boxes = [...document.querySelectorAll(${JSON.stringify(selector)})].map((e) => ({ text: e.textContent, r: e.getBoundingClientRect() }))
  const out = []
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].r, b = boxes[j].r
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) out.push(boxes[i].text + ' / ' + boxes[j].text)
    }
  return out
})()`

describe('report.html in each system’s words', () => {
  it('a live run: components in dependency order, no canary or batch, its failed check red', async () => {
    const components = ['controller', 'ingest', 'panel']
    const journal = writeRun(
      {
        id: '20261125T020000Z-11aa22',
        kind: 'upgrade',
        system: 'live',
        environment: 'prod',
        targetVersion: '7.0.0',
        phase: 'failed',
        cause: 'ingest 7.0.0 did not pass its check',
        params: { components, previousVersions: { controller: '6.2.0', ingest: '6.2.0', panel: '6.2.0' }, acks: [] },
      },
      [
        ['preflight', undefined, 0, 2, 'ok'],
        ['gates', undefined, 2, 1, 'ok'],
        ['stop', 'controller', 3, 1, 'ok'],
        ['install', 'controller', 4, 3, 'ok'],
        ['start', 'controller', 7, 1, 'ok'],
        ['check', 'controller', 8, 2, 'ok'],
        ['stop', 'ingest', 10, 1, 'ok'],
        ['install', 'ingest', 11, 3, 'ok'],
        ['start', 'ingest', 14, 1, 'ok'],
        ['check', 'ingest', 15, 60, 'failed'],
      ],
    )
    writeReport(journal, liveDescription)
    await browser.open(journal.file('report.html'))
    const dom = await browser.evaluate<{
      lanes: string[]
      batchMarks: number
      failedFill: string
      text: string
      overlaps: string[]
    }>(`(() => ({
      lanes: [...document.querySelectorAll('svg.timeline g.lane')].map((g) => g.dataset.host + ':' + (g.dataset.batch ?? '')),
      batchMarks: document.querySelectorAll('svg.timeline g.batch-marker').length,
      failedFill: getComputedStyle(document.querySelector('svg.timeline rect.status-failed')).fill,
      text: document.body.innerText,
      overlaps: ${OVERLAPS('svg.timeline text')},
    }))()`)
    expect(dom.lanes).toEqual(['run:', 'controller:', 'ingest:', 'panel:'])
    expect(dom.batchMarks).toBe(0)
    expect(dom.text).not.toMatch(/canary|batch/i)
    expect(dom.text).toContain('Downtime per component')
    expect(dom.text).toContain('Failed: check failed: ingest did not pass check')
    expect(dom.failedFill).toBe('rgb(240, 68, 56)')
    expect(dom.overlaps).toEqual([])
  })

  it('a recording run whose batches started within a second: labels apart, the failed health wait red', async () => {
    const hosts = ['rec-1', 'rec-2', 'rec-3', 'rec-4']
    const journal = writeRun(
      {
        id: '20261125T020000Z-33bb44',
        kind: 'upgrade',
        system: 'recording',
        environment: 'prod',
        targetVersion: '2.0.0',
        phase: 'failed',
        cause: 'rec-1 did not become healthy within 60 s',
        params: { hosts, previousVersions: {}, batchSize: 1, maxFail: '3' },
      },
      [
        ['preflight', undefined, 0, 2, 'ok'],
        ...hosts.flatMap((h, i): [string, string, number, number, 'ok' | 'failed'][] => [
          ['stop', h, 3 + i * 0.4, 1, 'ok'],
          ['install', h, 5, 3, 'ok'],
          ['start', h, 8, 1, 'ok'],
          ['wait-healthy', h, 9, i === 0 ? 60 : 4, i === 0 ? 'failed' : 'ok'],
          ...(i === 0 ? [] : ([['verify-host', h, 13, 2, 'ok']] as [string, string, number, number, 'ok'][])),
        ]),
      ],
    )
    writeReport(journal, recordingDescription)
    await browser.open(journal.file('report.html'))
    const dom = await browser.evaluate<{ batches: string[]; overlaps: string[]; failed: string[]; healthyFill: string }>(`(() => ({
      batches: [...document.querySelectorAll('svg.timeline g.batch-marker')].map((g) => g.dataset.batch),
      overlaps: ${OVERLAPS('svg.timeline text')},
      failed: [...document.querySelectorAll('svg.timeline rect.status-failed')].map((r) => r.dataset.step + ' ' + getComputedStyle(r).fill),
      healthyFill: getComputedStyle(document.querySelector('svg.timeline rect.stage-healthy.status-ok')).fill,
    }))()`)
    expect(dom.batches).toEqual(['canary', 'batch 1', 'batch 2', 'batch 3'])
    expect(dom.overlaps).toEqual([])
    expect(dom.failed).toEqual(['wait-healthy rgb(240, 68, 56)'])
    expect(dom.healthyFill).toBe('rgb(18, 183, 106)')
  })
})
