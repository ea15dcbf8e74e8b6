/**
 * The promotion gate's judgement (src/recording/promotion-gate.ts) as a specification: which run of
 * the earlier environment lets an upgrade to V go, and the clause that says why none does. Reading
 * the earlier environment's store on the lab is test/recording/promotion-gate.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { judgePromotion, type PromotionInput } from '../../src/recording/promotion-gate.ts'
import { newRunRecord, type RunRecord } from '../../src/runs/run-record.ts'

const NOW = Date.parse('2026-12-02T12:00:00Z')
const hoursAgo = (h: number) => new Date(NOW - h * 3_600_000).toISOString()

function upgrade(fields: Partial<RunRecord> & { id: string }): RunRecord {
  return newRunRecord({
    kind: 'upgrade',
    system: 'recording',
    environment: 'staging',
    envFile: '/stacks/Pulumi.staging.yaml',
    params: {},
    targetVersion: '2.0.0',
    phase: 'succeeded',
    startedAt: hoursAgo(3),
    finishedAt: hoursAgo(2),
    trust: { state: 'signed' },
    ...fields,
  })
}

function judge(records: RunRecord[], more: Partial<PromotionInput> = {}) {
  return judgePromotion({ from: 'staging', to: '2.0.0', records, signedRuns: true, hours: 24, now: NOW, ...more })
}

describe('the promotion gate lets an upgrade to V go', () => {
  it('with a succeeded, signed upgrade of the recording service to V within the hours', () => {
    const v = judge([upgrade({ id: 'a' })])
    expect(v.ok && v.run.id).toBe('a')
  })
  it('with the newest run that counts when a newer one failed', () => {
    const v = judge([
      upgrade({ id: 'old-ok', finishedAt: hoursAgo(20) }),
      upgrade({ id: 'new-failed', phase: 'rolled-back', finishedAt: hoursAgo(1) }),
    ])
    expect(v.ok && v.run.id).toBe('old-ok')
  })
  it('with an unsigned record where the earlier environment does not sign its runs', () => {
    const v = judge([upgrade({ id: 'u', trust: { state: 'unsigned', sentence: 'no MAC' } })], { signedRuns: false })
    expect(v.ok).toBe(true)
  })
})

describe('the promotion gate refuses, naming the environment and the run', () => {
  it.each([
    [
      'no upgrade to V at all',
      [upgrade({ id: 'x', targetVersion: '1.9.0' })],
      "environment 'staging' has no upgrade of the recording service to 2.0.0 in its run store",
    ],
    [
      'only a rehearsal of V',
      [upgrade({ id: 'r', kind: 'rehearse' })],
      "environment 'staging' has no upgrade of the recording service to 2.0.0 in its run store",
    ],
    [
      'only a live upgrade to V',
      [upgrade({ id: 'l', system: 'live' })],
      "environment 'staging' has no upgrade of the recording service to 2.0.0 in its run store",
    ],
    ['a failed one', [upgrade({ id: 'f', phase: 'rolled-back' })], 'its newest, run f, does not count, as it ended rolled-back'],
    [
      'one still running',
      [upgrade({ id: 'r', phase: 'running', finishedAt: undefined })],
      'its newest, run r, does not count, as it ended running',
    ],
    ['a no-op one (already on V)', [upgrade({ id: 'n', phase: 'no-op' })], 'its newest, run n, does not count, as it ended no-op'],
    [
      'one too old',
      [upgrade({ id: 'o', finishedAt: hoursAgo(25) })],
      `its newest, run o, does not count, as it ended at ${hoursAgo(25)}, more than 24 h ago`,
    ],
    [
      'an unsigned one where runs are signed',
      [upgrade({ id: 'u', trust: { state: 'unsigned', sentence: 'no MAC' } })],
      "its newest, run u, does not count, as its record is unsigned where the runs of 'staging' are signed",
    ],
    [
      'a refused one',
      [upgrade({ id: 'z', trust: { state: 'refused', sentence: 'Run z: its MAC does not match.' } })],
      'its newest, run z, does not count, as its record in the run store is refused (Run z: its MAC does not match.)',
    ],
  ])('%s', (_label, records, why) => {
    const v = judge(records)
    expect(v.ok).toBe(false)
    expect(!v.ok && v.why).toContain(why)
  })

  it('a succeeded run a further check does not accept (the hook for a canary analysis verdict)', () => {
    const analysisFailed = (r: RunRecord) => (r.id === 'a' ? 'its canary analysis failed' : undefined)
    const v = judge([upgrade({ id: 'a' })], { checks: [analysisFailed] })
    expect(!v.ok && v.why).toContain('its newest, run a, does not count, as its canary analysis failed')
  })
})
