/**
 * `runs list`, `rollback` ("the last run") and `resume` pick runs newest first. Run ids carry whole
 * seconds: two runs started within one second must still come in the order they started.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'

describe('listRuns', () => {
  it('orders runs started within one second by their start, not by the random part of their ids', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-runs-order-'))
    const fields = { kind: 'upgrade' as const, system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} }
    // The earlier run gets the larger random suffix, so sorting by id alone would put it first.
    const first = newRunRecord(fields)
    first.id = '20261125T020000Z-ffffff'
    first.startedAt = '2026-11-25T02:00:00.100Z'
    const second = newRunRecord(fields)
    second.id = '20261125T020000Z-000000'
    second.startedAt = '2026-11-25T02:00:00.900Z'
    const third = newRunRecord(fields)
    third.id = '20261125T020001Z-123456'
    third.startedAt = '2026-11-25T02:00:01.000Z'
    for (const run of [second, third, first]) Journal.create(run, base)
    expect(listRuns(base).map((r) => r.id)).toEqual([third.id, second.id, first.id])
  })
})
