/**
 * What a recording rollback takes from its run's record and journal, as a specification, on the
 * recording service in memory (test/support/recording-world.ts): the backup id follows the store's
 * rule, `previousVersions` names hosts of the stack with versions, the snapshot's keys are keys,
 * and the decision to restore is the database's (its schema fingerprint), not a journal entry's.
 * Each bad field is refused with one sentence naming the run and the field. The attack end to end,
 * on the lab's real database, is test/recording/forged-run.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { BadInputError } from '../../src/core/errors.ts'
import type { RecordingContext } from '../../src/recording/recording-context.ts'
import type { RecordingParams } from '../../src/recording/recording-params.ts'
import { newUpgradeRecord } from '../../src/recording/recording-system.ts'
import { assertRollbackParams, isSnapshotKey } from '../../src/recording/rollback-params.ts'
import { decideRestore } from '../../src/recording/rollback-steps.ts'
import { Journal, type JournalEntry } from '../../src/runs/journal.ts'
import { stepData } from '../../src/runs/step.ts'
import { RecordingWorld, fingerprintOf } from '../support/recording-world.ts'

const world = new RecordingWorld({ hosts: ['rec-1', 'rec-2'], version: '1.5.0', recordings: 2, releases: ['1.5.0', '2.0.0'] })
const SCHEMA = fingerprintOf(3)
const GOOD: Partial<RecordingParams> = {
  backupId: 'matrix-20261201T020000Z-1a2b',
  fingerprintBefore: SCHEMA,
  previousVersions: { 'rec-1': '1.5.0', 'rec-2': '1.5.0' },
  snapshotIds: ['id:1', 'id:2', JSON.stringify(['news', 'evening', 1700000000, 1700003600])],
}

/** The context of an upgrade run whose record holds `params` and whose journal holds `entries`. */
async function contextOf(params: Partial<RecordingParams>, entries: Omit<JournalEntry, 'time'>[] = []): Promise<RecordingContext> {
  const record = newUpgradeRecord({ env: world.env, to: '2.0.0' })
  const journal = Journal.inMemory({ ...record, params: { ...record.params, ...params } })
  for (const e of entries) journal.append(e)
  const opened = await world.opener()(journal)
  await opened.close()
  return opened.ctx
}

function refusalOf(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(BadInputError)
    return (error as Error).message
  }
  throw new Error('it was followed')
}

describe("a rollback's record, checked before it is followed", () => {
  it('follows what svcops writes', async () => {
    const ctx = await contextOf(GOOD)
    expect(() => assertRollbackParams(ctx)).not.toThrow()
  })

  const bad: Array<[string, Partial<RecordingParams>, RegExp]> = [
    [
      'a backup id outside the store',
      { backupId: '../../etc/passwd' },
      /params\.backupId: '\.\.\/\.\.\/etc\/passwd' is not an id of the backup store; expected one like matrix-20260101T020000Z-1a2b; svcops does not follow it\.$/,
    ],
    ['a backup id of another form', { backupId: 'backup/old' }, /params\.backupId: 'backup\/old' is not an id of the backup store/],
    [
      'a host the stack does not name',
      { previousVersions: { 'rec-1': '1.5.0', attacker: '0.1.0' } },
      /params\.previousVersions: 'attacker' is not a host the stack names \(rec-1, rec-2\); svcops does not follow it\.$/,
    ],
    [
      'a version that is not one',
      { previousVersions: { 'rec-1': '1.5.0; rm -rf /' } },
      /params\.previousVersions\.rec-1: '1\.5\.0; rm -rf \/' is not a version; expected one like 1\.5\.0/,
    ],
    [
      'a fingerprint that is not one',
      { fingerprintBefore: 'anything' },
      /params\.fingerprintBefore: 'anything' is not a schema fingerprint; expected 64 lower-case hex digits/,
    ],
    [
      'a snapshot key that is not one',
      { snapshotIds: ['id:1', 'everything'] },
      /params\.snapshotIds\.1: 'everything' is not a recording's key; expected id:ID or the JSON of its channel, title, start and stop/,
    ],
    ['a snapshot key of the wrong fields', { snapshotIds: [JSON.stringify(['a', 'b', 'c', 'd'])] }, /params\.snapshotIds\.0: /],
    [
      'more keys than a snapshot holds',
      { snapshotIds: Array.from({ length: 10_000 }, (_, i) => `id:${i}`) },
      /params\.snapshotIds: 10000 keys is more than a snapshot holds; expected fewer than 10000 \(recording\.contentLimit\)/,
    ],
  ]
  it.each(bad)('refuses %s, naming the run and the field', async (_what, params, sentence) => {
    const ctx = await contextOf({ ...GOOD, ...params })
    const message = refusalOf(() => assertRollbackParams(ctx))
    expect(message).toMatch(new RegExp(`^Run ${ctx.journal.run.id}: `))
    expect(message).toMatch(sentence)
  })

  it('knows the keys a snapshot writes and nothing else', () => {
    expect(isSnapshotKey('id:42')).toBe(true)
    expect(isSnapshotKey(JSON.stringify(['news', 'evening', 1, 2]))).toBe(true)
    for (const key of ['id:', 'id:a b', '42', '[1,2,3,4]', '["a","b",1]', '{"a":1}', `id:${'x'.repeat(201)}`])
      expect(isSnapshotKey(key)).toBe(false)
  })
})

describe('the decision to restore the database', () => {
  const forged = {
    step: 'rollback:decide',
    status: 'ok' as const,
    data: { restore: true, reason: 'the schema fingerprint changed', hosts: ['rec-1', 'rec-2'] },
  }

  it("refuses a journal's decision to restore that the schema fingerprint does not bear out, naming the entry", async () => {
    const ctx = await contextOf(GOOD, [forged])
    const error = await decideRestore.act(ctx, { dataLoss: false }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(BadInputError)
    expect((error as Error).message).toBe(
      `Run ${ctx.journal.run.id}: the journal's entry of step rollback:decide is refused: it says restore the database (the schema fingerprint changed), but the schema did not change and no recording went missing and this rollback has not begun a restore; svcops does not follow it.`,
    )
  })

  it('follows it once this rollback began its restore (the database may be the backup’s by now)', async () => {
    const ctx = await contextOf(GOOD, [forged, { step: 'rollback:restore', status: 'start' }])
    expect((await decideRestore.act(ctx, { dataLoss: false })).data).toMatchObject({ restore: true })
  })

  it('decides from the database without a journal entry: no restore on the schema before the run', async () => {
    const ctx = await contextOf(GOOD)
    expect((await decideRestore.act(ctx, { dataLoss: false })).data).toMatchObject({ restore: false })
  })

  it('restores when the schema changed since, whatever the journal says', async () => {
    const ctx = await contextOf({ ...GOOD, fingerprintBefore: fingerprintOf(2) }, [{ ...forged, data: { ...forged.data, restore: false } }])
    expect((await decideRestore.act(ctx, { dataLoss: false })).data).toMatchObject({ restore: true })
  })

  const badData: Array<[string, Record<string, unknown>, string]> = [
    [
      'a restore that is not a yes or no',
      { restore: 'yes', reason: '', hosts: [] },
      'data.restore: Invalid input: expected boolean, received string',
    ],
    ['no reason', { restore: true, hosts: [] }, 'data.reason: Invalid input: expected string, received undefined'],
    [
      'hosts that are not names',
      { restore: true, reason: '', hosts: 'rec-1' },
      'data.hosts: Invalid input: expected array, received string',
    ],
    [
      'a fingerprint that is not one',
      { restore: true, reason: '', hosts: [], fingerprintNow: 'x' },
      'data.fingerprintNow: expected 64 lower-case hex digits',
    ],
  ]
  it.each(badData)('refuses a decision entry with %s, naming run, step and field', (_what, data, field) => {
    const message = refusalOf(() => stepData(decideRestore, { step: 'rollback:decide', data }, '20261202T010000Z-3fa9c1'))
    expect(message).toBe(
      `Run 20261202T010000Z-3fa9c1: the journal's entry of step rollback:decide is refused: ${field}; svcops did not write it so, and does not follow it.`,
    )
  })
})
