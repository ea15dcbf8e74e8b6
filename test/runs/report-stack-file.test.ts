/**
 * The report of a run on the Kubernetes platform says what the stack file holds and whether the
 * Deployment runs it: the file is the record, and a disagreement is never left unsaid.
 */
import { describe, expect, it } from 'vitest'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { buildReport, renderMarkdown } from '../../src/reports/report.ts'
import { Journal } from '../../src/runs/journal.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'

function journalWith(stackFile: Record<string, unknown>): Journal {
  const run = newRunRecord({
    kind: 'upgrade',
    system: 'recording',
    environment: 'prod',
    envFile: '/srv/svcops/stacks/Pulumi.prod.yaml',
    targetVersion: '2.0.0',
    params: { hosts: ['svc-recording'], previousVersions: {}, batchSize: 1, maxFail: '0' },
  })
  const journal = Journal.inMemory(run)
  journal.append({ step: 'check-logs', host: 'svc-recording', status: 'ok', data: { status: 'ok', stackFile } })
  return journal
}

describe('the report of a Kubernetes run', () => {
  it('says the stack file holds the version the Deployment runs, to be committed', () => {
    const report = buildReport(
      journalWith({ file: '/srv/svcops/stacks/Pulumi.prod.yaml', key: 'svcops:recording.version', version: '2.0.0', deployment: '2.0.0' }),
      recordingDescription,
    )
    expect(report.stackFile).toEqual({
      file: '/srv/svcops/stacks/Pulumi.prod.yaml',
      key: 'svcops:recording.version',
      version: '2.0.0',
      deployment: '2.0.0',
    })
    expect(renderMarkdown(report, recordingDescription)).toContain(
      '- stack file: /srv/svcops/stacks/Pulumi.prod.yaml holds svcops:recording.version = 2.0.0, the version the Deployment runs; commit it (docs/upgrade.md)',
    )
  })

  it('says so when the stack file and the Deployment disagree', () => {
    const report = buildReport(
      journalWith({ file: '/srv/svcops/stacks/Pulumi.prod.yaml', key: 'svcops:recording.version', version: '2.0.0', deployment: '1.5.0' }),
      recordingDescription,
    )
    expect(renderMarkdown(report, recordingDescription)).toContain(
      '- stack file: /srv/svcops/stacks/Pulumi.prod.yaml holds svcops:recording.version = 2.0.0, but the Deployment runs 1.5.0: they disagree',
    )
  })
})
