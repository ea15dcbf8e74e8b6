/**
 * What a rehearsal predicts from what it measured (src/recording/rehearse/prediction.ts), and where
 * a rehearsal is refused before anything is read: a stack without `recording.rehearsal`, and the
 * Kubernetes platform (not rehearsed: no number is printed for it).
 */
import { describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { BadInputError } from '../../src/core/errors.ts'
import { describePrediction, predict } from '../../src/recording/rehearse/prediction.ts'
import { newRehearsalRun } from '../../src/recording/rehearse/rehearsal-system.ts'
import { REHEARSAL_REPORT, rehearsalSection } from '../../src/recording/rehearse/rehearsal-report.ts'
import type { Prediction } from '../../src/recording/rehearse/prediction.ts'
import type { ReportSection } from '../../src/runs/report-contribution.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'

const input = {
  from: '2.0.0',
  to: '2.1.0',
  fingerprint: 'ab'.repeat(32),
  databaseBytes: 10_000_000,
  batches: [['rec-1'], ['rec-2', 'rec-3'], ['rec-4']],
}
const measures = {
  stopMs: 500,
  installMs: 1500,
  firstStartMs: 9000,
  restartMs: 2000,
  verifyMs: 1000,
  rollbackMs: 7000,
  rollbackRestoreMs: 3000,
}

describe('the prediction of a rehearsal', () => {
  it('takes the canary with its migrations, then one later host start per batch, and sets the rollout beside the window', () => {
    const p = predict(measures, { ...input, windowMs: 60_000, schemaChanged: true })
    expect(p.canaryDowntimeMs).toBe(500 + 1500 + 9000 + 1000)
    expect(p.hostDowntimeMs).toBe(500 + 1500 + 2000 + 1000)
    expect(p.migrationMs).toBe(7000)
    expect(p.rolloutMs).toBe(12_000 + 2 * 5000)
    expect(p.rollbackMs).toBe(7000)
    expect(p.verdict).toBe('fits')
    expect(predict(measures, { ...input, windowMs: 21_999 }).verdict).toBe('does not fit')
    expect(predict(measures, input).verdict).toBe('no window')
  })

  it('says failed with the cause and the service log lines, and predicts no number', () => {
    const p = predict(
      {},
      {
        ...input,
        failure: { cause: 'svc-recording on rehearsal-1 stopped running', logLines: ['2026-12-02T05:00:00Z FATAL migration 3 failed'] },
      },
    )
    expect(p).toMatchObject({ verdict: 'failed', cause: 'svc-recording on rehearsal-1 stopped running' })
    expect(p.rolloutMs).toBeUndefined()
    expect(describePrediction(p)).toEqual([
      expect.stringMatching(/2\.0\.0 -> 2\.1\.0 .*: FAILED$/),
      '  cause: svc-recording on rehearsal-1 stopped running',
      '  log: 2026-12-02T05:00:00Z FATAL migration 3 failed',
    ])
  })

  it("puts a failed rehearsal's cause and the service's log lines in report.md as a fenced block, so a link or HTML in a log line is shown as text", () => {
    const hostile = 'FATAL see [the fix](https://evil.example/x) ![](https://evil.example/p.png) <img src=x> ``` end'
    const p = predict({}, { ...input, failure: { cause: 'svc-recording on rehearsal-1 stopped running', logLines: [hostile] } })
    const section = rehearsalSection as unknown as ReportSection<Prediction>
    const value = section.build(
      [{ time: new Date().toISOString(), step: 'predict', status: 'ok', report: REHEARSAL_REPORT, data: p }],
      newRunRecord({ kind: 'rehearse', system: 'recording', environment: 'test', envFile: '/dev/null', params: {} }),
    )
    expect(value).toBeDefined()
    const md = section.markdown?.(value as Prediction) ?? []
    const fence = '````'
    expect(md.slice(-3)).toEqual([fence, `cause: svc-recording on rehearsal-1 stopped running\nlog: ${hostile}`, fence])
    expect(md.filter((l) => l.startsWith('- '))).toEqual([expect.stringMatching(/^- Rehearsal of 2\.0\.0 -> 2\.1\.0 .*: FAILED$/)])
  })
})

describe('where a rehearsal is refused before anything is read', () => {
  it('a stack without recording.rehearsal: one sentence naming the field', () => {
    const env = loadEnvironmentFile('stacks/Pulumi.example-hosts.yaml', 'example-hosts')
    expect(() => newRehearsalRun({ env, to: '2.1.0' })).toThrow(BadInputError)
    expect(() => newRehearsalRun({ env, to: '2.1.0' })).toThrow(/recording\.rehearsal: missing; expected \{ host, database \}/)
  })

  it('the Kubernetes platform: the rehearsal Job is the target, no rehearsal host is needed; on hosts one is', () => {
    const env = loadEnvironmentFile('stacks/Pulumi.dev.yaml', 'dev')
    expect(() => newRehearsalRun({ env, to: '2.1.0' })).toThrow(/recording\.rehearsal: missing/)
    env.recording!.rehearsal = { database: 'recordings_rehearsal' }
    expect(newRehearsalRun({ env, to: '2.1.0' }).params.hosts).toEqual([`${env.product.prefix}-recording-rehearsal`])
    const hosts = loadEnvironmentFile('stacks/Pulumi.example-hosts.yaml', 'example-hosts')
    hosts.recording!.rehearsal = { database: 'recordings_rehearsal' }
    expect(() => newRehearsalRun({ env: hosts, to: '2.1.0' })).toThrow(
      /recording\.rehearsal\.host: missing; expected the host a rehearsal runs on \(recording\.platform hosts\)\./,
    )
  })

  it('a version that is not one: the flag named', () => {
    const env = loadEnvironmentFile('stacks/Pulumi.example-hosts.yaml', 'example-hosts')
    expect(() => newRehearsalRun({ env, to: 'latest' })).toThrow(/--to/)
  })
})
