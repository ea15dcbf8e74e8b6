/**
 * A run folder written before the run record had a core and params (every field flat, `system`
 * only on live runs) still opens: the core's fields stay, the rest become the system's params and
 * pass that system's schema, so a run interrupted before an upgrade of svcops resumes after it.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { liveParamsSchema } from '../../src/live/live-params.ts'
import { recordingParamsSchema } from '../../src/recording/recording-params.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { withParams } from '../../src/runs/run-record.ts'

/** A run folder with `run.json` as an earlier svcops wrote it. */
function earlierRun(base: string, record: Record<string, unknown>): string {
  const id = record.id as string
  mkdirSync(join(base, id), { recursive: true })
  writeFileSync(join(base, id, 'run.json'), JSON.stringify(record, null, 2))
  writeFileSync(join(base, id, 'journal.jsonl'), '{"time":"2026-11-20T03:00:01.000Z","step":"preflight","status":"ok"}\n')
  return id
}

const core = {
  kind: 'upgrade',
  environment: 'prod',
  envFile: '/srv/stacks/Pulumi.prod.yaml',
  targetVersion: '2.0.0',
  autoRollback: true,
  phase: 'running',
  startedAt: '2026-11-20T03:00:00.000Z',
  holder: 'svcops@cron',
  pid: 4242,
}

describe('run records of the earlier layout', () => {
  it('opens a recording run (no system) as the recording service’s, its flat fields as params its schema accepts', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-runs-'))
    const id = earlierRun(base, {
      ...core,
      id: '20261120T030000Z-0a0b0c',
      previousVersions: { 'rec-1': '1.5.0', 'rec-2': '1.5.0' },
      hosts: ['rec-1', 'rec-2'],
      batchSize: 1,
      maxFail: '0',
      backupId: 'prod-20261120T030010Z-9f8e',
      fingerprintBefore: 'a1b2c3',
      snapshotIds: ['1', '2'],
      deadline: '2026-11-20T04:30:00.000Z',
      procedure: 'downgrade',
    })
    const journal = Journal.open(id, base)
    expect(journal.run).toMatchObject({
      id,
      system: 'recording',
      kind: 'upgrade',
      targetVersion: '2.0.0',
      phase: 'running',
      procedure: 'downgrade',
    })
    expect(journal.run).not.toHaveProperty('hosts')
    const typed = withParams(journal.run, recordingParamsSchema, 'the recording service')
    expect(typed.params).toEqual({
      previousVersions: { 'rec-1': '1.5.0', 'rec-2': '1.5.0' },
      hosts: ['rec-1', 'rec-2'],
      batchSize: 1,
      maxFail: '0',
      backupId: 'prod-20261120T030010Z-9f8e',
      fingerprintBefore: 'a1b2c3',
      snapshotIds: ['1', '2'],
      deadline: '2026-11-20T04:30:00.000Z',
    })
    // Continued, it is written in the new layout.
    journal.update({ pid: 1 })
    expect(JSON.parse(readFileSync(join(base, id, 'run.json'), 'utf8'))).toMatchObject({
      system: 'recording',
      params: { backupId: 'prod-20261120T030010Z-9f8e' },
    })
    expect(listRuns(base).map((r) => r.system)).toEqual(['recording'])
  })

  it('opens a live run, its components (then `hosts`) as the live system’s params', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-runs-'))
    const components = ['system-controller', 'ingest', 'pipeline', 'control-panel']
    const id = earlierRun(base, {
      ...core,
      id: '20261120T030000Z-1a1b1c',
      system: 'live',
      previousVersions: Object.fromEntries(components.map((c) => [c, '5.2.0'])),
      hosts: components,
      batchSize: 1,
      maxFail: '0',
      acks: ['6.0.0/send-message'],
      tcpEndpoint: '10.0.0.1:7101',
    })
    const journal = Journal.open(id, base)
    expect(journal.run.system).toBe('live')
    const typed = withParams(journal.run, liveParamsSchema, 'the live production system')
    expect(typed.params).toEqual({
      components,
      previousVersions: Object.fromEntries(components.map((c) => [c, '5.2.0'])),
      acks: ['6.0.0/send-message'],
      tcpEndpoint: '10.0.0.1:7101',
      batchSize: 1,
      maxFail: '0',
    })
  })

  it('refuses params its system does not accept, naming the run and the field', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-runs-'))
    const id = earlierRun(base, { ...core, id: '20261120T030000Z-2a2b2c', hosts: 'rec-1', batchSize: 1, maxFail: '0' })
    expect(() => withParams(Journal.open(id, base).run, recordingParamsSchema, 'the recording service')).toThrow(
      /^Run 20261120T030000Z-2a2b2c: params\.hosts: .*; expected the facts of a run of the recording service\.$/,
    )
  })
})
