/**
 * A run leaves a copy of its record (on the Kubernetes platform, the stack file `pulumi config set`
 * rewrote) in its run folder, whatever its outcome, and the report says where it is and that it must
 * be committed: in a scheduled job the runs volume is the only thing that outlives the pod.
 */
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { collect } from '../../src/core/events.ts'
import { Journal } from '../../src/runs/journal.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'
import { startRun, type Playbook } from '../../src/runs/playbook.ts'
import { renderMarkdown } from '../../src/reports/report.ts'

const STACK_TEXT =
  'config:\n  svcops:recording:\n    version: 2.0.0\n  svcops:databasePassword:\n    secure: v1:AAAAAAAAAAAAAAAA:ciphertext\n'

function runIn(dir: string, stackFile: string): Journal {
  return Journal.create(
    newRunRecord({
      kind: 'upgrade',
      system: 'recording',
      environment: 'prod',
      envFile: stackFile,
      targetVersion: '2.0.0',
      params: { hosts: ['svc-recording'] },
    }),
    join(dir, 'runs'),
  )
}

function playbook(fail: boolean): Playbook<object> {
  return {
    kind: 'upgrade',
    what: () => 'Upgrade of prod to 2.0.0',
    rollbackCommand: () => 'svcops rollback recording --env prod',
    procedure: () => (fail ? Promise.reject(new Error('the preview shows another change')) : Promise.resolve()),
  }
}

describe('the record a run leaves in its run folder', () => {
  it.each([
    ['succeeded', false],
    ['failed', true],
  ] as const)('is the stack file as the run left it, owner-only, named in the report (%s)', async (phase, fail) => {
    const dir = mkdtempSync(join(tmpdir(), 'svcops-keep-record-'))
    const stackFile = join(dir, 'Pulumi.prod.yaml')
    writeFileSync(stackFile, STACK_TEXT)
    const journal = runIn(dir, stackFile)
    const log = collect()
    const outcome = await startRun({
      playbook: playbook(fail),
      journal,
      lock: { release: () => Promise.resolve() },
      open: () => Promise.resolve({ ctx: {}, close: () => Promise.resolve(), records: [stackFile] }),
    }).catch((e: unknown) => e)
    log.stop()
    expect(journal.run.phase).toBe(phase)
    const copy = journal.file('Pulumi.prod.yaml')
    expect(readFileSync(copy, 'utf8')).toBe(STACK_TEXT)
    expect(statSync(copy).mode & 0o777).toBe(0o600)
    const report = JSON.parse(readFileSync(journal.file('report.json'), 'utf8')) as { record?: unknown }
    expect(report.record).toEqual({ file: stackFile, copy })
    const markdown = readFileSync(journal.file('report.md'), 'utf8')
    expect(markdown).toContain(
      `- record: ${copy} is the stack file as this run left it (${stackFile}); commit it to the project (docs/deploy.md, "Scheduled jobs")`,
    )
    if (fail) expect(outcome).toBeInstanceOf(Error)
  })

  it('is journaled as not copied, and the run ends as it would have, when the file is gone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcops-keep-record-'))
    const stackFile = join(dir, 'Pulumi.prod.yaml')
    const journal = runIn(dir, stackFile)
    const outcome = await startRun({
      playbook: playbook(false),
      journal,
      lock: { release: () => Promise.resolve() },
      open: () => Promise.resolve({ ctx: {}, close: () => Promise.resolve(), records: [stackFile] }),
    })
    expect(outcome.phase).toBe('succeeded')
    expect(journal.entries().find((e) => e.step === 'keep-record')).toMatchObject({ status: 'failed' })
    expect(outcome.report.record).toBeUndefined()
    expect(renderMarkdown(outcome.report, undefined)).not.toContain('- record:')
  })

  it('is nothing on a run whose platform keeps no record (hosts)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcops-keep-record-'))
    const journal = runIn(dir, join(dir, 'Pulumi.prod.yaml'))
    const outcome = await startRun({
      playbook: playbook(false),
      journal,
      lock: { release: () => Promise.resolve() },
      open: () => Promise.resolve({ ctx: {}, close: () => Promise.resolve() }),
    })
    expect(journal.entries().map((e) => e.step)).not.toContain('keep-record')
    expect(outcome.report.record).toBeUndefined()
  })
})
