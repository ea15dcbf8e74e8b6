/**
 * svcops:upgrade.requireRehearsal's judgement (src/recording/rehearse/latest-rehearsal.ts) on records
 * sealed and opened by the environment's real run seal: only the versions of the hosts the upgrade
 * changes need a rehearsal, and where runs are signed an unsigned record never counts.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { newRunRecord, type RunRecord } from '../../src/runs/run-record.ts'
import { runSeal } from '../../src/runs/run-mac.ts'
import { missingRehearsals } from '../../src/recording/rehearse/latest-rehearsal.ts'

const fingerprint = 'ab'.repeat(32)
const key = randomBytes(32)

/** A finished, passing rehearsal from `from` to 2.1.0 as the store would hand it back, sealed with `sealKey` (none: unsigned). */
function rehearsal(from: string, sealKey: Buffer | undefined): RunRecord {
  const record = newRunRecord({
    kind: 'rehearse',
    system: 'recording',
    environment: 'prod',
    envFile: 'Pulumi.prod.yaml',
    targetVersion: '2.1.0',
    phase: 'succeeded',
    finishedAt: new Date().toISOString(),
    params: { hosts: ['rehearse-1'], previousVersions: { 'rehearse-1': from }, fingerprintBefore: fingerprint, batchSize: 1, maxFail: '0' },
  })
  const stored = JSON.parse(JSON.stringify(runSeal('prod', sealKey).sealRecord(record))) as unknown
  // Read back as every reader of the environment's runs does: with the environment's key.
  return runSeal('prod', key).openRecord(stored, 'the run store', {})
}

const gate = (records: RunRecord[], versions: Record<string, string>, hosts: string[] = [], signedRuns = true) =>
  missingRehearsals({ versions, hosts, to: '2.1.0', fingerprint, records, signedRuns, hours: 24, now: Date.now() })

describe('svcops:upgrade.requireRehearsal', () => {
  it('counts a signed passing rehearsal, and ignores an unsigned one (stripped or written into the run store) where runs are signed', () => {
    expect(gate([rehearsal('2.0.0', key)], { 'rec-1': '2.0.0' })).toEqual({ missing: [], ignoredUnsigned: 0 })
    expect(gate([rehearsal('2.0.0', undefined)], { 'rec-1': '2.0.0' })).toEqual({ missing: ['2.0.0'], ignoredUnsigned: 1 })
    expect(gate([rehearsal('2.0.0', randomBytes(32))], { 'rec-1': '2.0.0' }).missing).toEqual(['2.0.0'])
  })

  it('counts an unsigned rehearsal where the environment has no run key (every record there is unsigned)', () => {
    expect(gate([rehearsal('2.0.0', undefined)], { 'rec-1': '2.0.0' }, [], false)).toEqual({ missing: [], ignoredUnsigned: 0 })
  })

  it('asks a rehearsal only from the versions of the hosts the upgrade changes: not hosts already on the target, not hosts outside --hosts', () => {
    const passed = [rehearsal('2.0.0', key)]
    // After a canary-only upgrade production runs {2.0.0, 2.1.0}: finishing the rollout needs only 2.0.0 -> 2.1.0.
    expect(gate(passed, { 'rec-1': '2.1.0', 'rec-2': '2.0.0' }).missing).toEqual([])
    // A minority host on 1.9.0 still needs its own rehearsal when the upgrade changes it...
    expect(gate(passed, { 'rec-1': '1.9.0', 'rec-2': '2.0.0' }).missing).toEqual(['1.9.0'])
    // ...and not when the upgrade leaves it alone.
    expect(gate(passed, { 'rec-1': '1.9.0', 'rec-2': '2.0.0' }, ['rec-2']).missing).toEqual([])
    expect(gate(passed, { 'rec-1': '1.9.0', 'rec-2': '2.0.0' }, ['rec-1']).missing).toEqual(['1.9.0'])
  })
})
