/**
 * What the recording service adds to its runs' reports: the maintenance window, the verified
 * backup and the schema fingerprints in the head; the rollback's decision and the recordings it
 * re-created; the stack file as the record on Kubernetes; each host's configuration review; and
 * the doctor's diagnosis (diagnosis-report.ts). Each section is read from the journal by
 * the `report` value its steps journal.
 */
import { soakSection } from '../analysis/soak-report.ts'
import { diagnosisSection, type DiagnosisView } from './diagnosis-report.ts'
import type { RunReport } from '../reports/report-types.ts'
import { sanitizeLine } from '../core/sanitize.ts'
import { defineSection, escapeHtml as esc, fencedBlock, type ReportContribution } from '../reports/report-section.ts'
import type { RunRecord } from '../runs/run-record.ts'
import type { RecordingParams } from './recording-params.ts'
import { rehearsalSection } from './rehearse/rehearsal-report.ts'

/** The rollback's decision as the report shows it. */
export interface RollbackView {
  restore: boolean
  reason: string
  hosts: string[]
}

/** The stack file at the run's last check, and what the Deployment runs (Kubernetes: the file is the record). */
export interface StackFileView {
  file: string
  key: string
  version: string | null
  deployment: string | null
}

interface ReviewView {
  configPath: string
  newDefaults: Array<{ path: string; diff: string }>
  obsoleteOptions: string[]
  newOptions: string[]
}

const rollback = defineSection<RollbackView>({
  key: 'rollback',
  beforeDowntime: true,
  build(entries) {
    const decide = entries.filter((e) => e.report === 'restore-decision' && e.status === 'ok').at(-1)
    if (!decide?.data) return undefined
    const d = decide.data
    return {
      restore: d.restore === true,
      reason: typeof d.reason === 'string' ? d.reason : '',
      // Read back from a store, a field may have any type: only a list of names is one.
      hosts: Array.isArray(d.hosts) ? d.hosts.map(String) : [],
    }
  },
  markdown: (rb) => [
    '',
    '## Rollback',
    '',
    `- database ${rb.restore ? 'restored' : 'kept'}: ${rb.reason}`,
    `- hosts: ${rb.hosts.join(', ')}`,
  ],
  html: (rb) => ({
    title: 'Rollback',
    body: `<ul id="rollback"><li>database ${rb.restore ? 'restored' : 'kept'}: ${esc(rb.reason)}</li><li>hosts: ${esc(rb.hosts.join(', '))}</li></ul>`,
  }),
  outcome: (rb) => ` (database ${rb.restore ? 'restored' : 'kept'})`,
})

const recreated = defineSection<Array<Record<string, unknown>>>({
  key: 'recreated',
  beforeDowntime: true,
  build(entries) {
    const recreate = entries.filter((e) => e.report === 'recreated' && e.status === 'ok').at(-1)
    const list = recreate?.data?.recreated
    return Array.isArray(list) ? list.filter((r): r is Record<string, unknown> => !!r && typeof r === 'object') : []
  },
  markdown: (list) =>
    list.length
      ? [
          `- recordings written after the backup, exported and re-created (${list.length}):`,
          ...list.map((r) => `  - ${String(r.channelName)} — ${String(r.title)} (${String(r.startTime)}–${String(r.stopTime)})`),
        ]
      : [],
  html: (list) =>
    list.length
      ? {
          title: `Recordings re-created (${list.length})`,
          body: `<ul id="recreated">${list.map((r) => `<li>${esc(r.channelName)} — ${esc(r.title)} (${esc(r.startTime)}–${esc(r.stopTime)})</li>`).join('')}</ul>`,
        }
      : undefined,
})

const stackFile = defineSection<StackFileView>({
  key: 'stackFile',
  build(entries) {
    const record = entries.filter((e) => e.status === 'ok' && e.data?.stackFile && typeof e.data.stackFile === 'object').at(-1)
    return record?.data?.stackFile as StackFileView | undefined
  },
  headline: (sf) =>
    sf.version === sf.deployment
      ? `stack file: ${sf.file} holds ${sf.key} = ${sf.version ?? '?'}, the version the Deployment runs; commit it (docs/upgrade.md)`
      : `stack file: ${sf.file} holds ${sf.key} = ${sf.version ?? 'nothing'}, but the Deployment runs ${sf.deployment ?? 'no known version'}: they disagree`,
})

const configReviews = defineSection<Array<{ host: string; review: unknown }>>({
  key: 'configReviews',
  multiline: true,
  build: (entries) =>
    entries
      .filter((e) => e.report === 'config-review' && e.status === 'ok' && e.host)
      .map((e) => ({ host: e.host as string, review: e.data?.review })),
  markdown(list) {
    const reviews = list.filter((c) => c.review && typeof c.review === 'object')
    if (!reviews.length) return []
    const lines = ['', '## Configuration review', '']
    for (const { host, review } of reviews) {
      // The value keeps its lines (multiline) for the diff; everything else is made one line here.
      const r = review as ReviewView
      const one = (text: string): string => sanitizeLine(String(text))
      lines.push(`### ${one(host)}: ${one(r.configPath)}`, '')
      if (!r.newDefaults.length) lines.push('No new default configuration was left beside the active one.')
      if (r.newOptions.length) lines.push(`New options (defaults apply): ${one(r.newOptions.join(', '))}`)
      if (r.obsoleteOptions.length) lines.push(`**Warning** — set but no longer in the new default: ${one(r.obsoleteOptions.join(', '))}`)
      for (const d of r.newDefaults) lines.push('', `\`${one(d.path)}\`:`, '', ...fencedBlock('diff', String(d.diff).trimEnd()))
      lines.push('')
    }
    return lines
  },
  html(list) {
    const out: string[] = []
    for (const { host, review } of list) {
      if (!review || typeof review !== 'object') continue
      const r = review as Partial<ReviewView>
      out.push(`<h3>${esc(host)}: ${esc(r.configPath ?? '')}</h3>`)
      if (r.newOptions?.length) out.push(`<p>New options (defaults apply): ${esc(r.newOptions.join(', '))}</p>`)
      if (r.obsoleteOptions?.length)
        out.push(`<p class="failed">Set but no longer in the new default: ${esc(r.obsoleteOptions.join(', '))}</p>`)
      if (!r.newDefaults?.length) out.push('<p class="muted">No new default configuration was left beside the active one.</p>')
      for (const d of r.newDefaults ?? []) out.push(`<p><code>${esc(d.path)}</code></p><pre>${esc(d.diff)}</pre>`)
    }
    return out.length ? { title: 'Configuration review', body: `<div id="config-review">${out.join('\n')}</div>` } : undefined
  },
})

/** The recording service's facts and sections of its runs' reports. */
export const recordingReport: ReportContribution = {
  facts(record) {
    const run = (record as RunRecord<RecordingParams>).params
    return [
      ...(run.deadline ? [`maintenance window until: ${run.deadline}`] : []),
      ...(run.promotion
        ? [
            run.promotion.skipped
              ? `promotion gate from '${run.promotion.from}': SKIPPED (--skip-promotion-gate; ${run.promotion.finding ?? ''})`
              : `promotion gate from '${run.promotion.from}': passed with run ${run.promotion.run ?? '?'} (ended ${run.promotion.at ?? '?'})`,
          ]
        : []),
      ...(run.backupId ? [`backup: ${run.backupId} (verified before anything stopped)`] : []),
      ...(run.fingerprintBefore
        ? [
            `schema fingerprint: before ${run.fingerprintBefore.slice(0, 16)}${run.fingerprintAfter ? `, after ${run.fingerprintAfter.slice(0, 16)}` : ''}`,
          ]
        : []),
    ]
  },
  sections: [rollback, recreated, stackFile, diagnosisSection, configReviews, rehearsalSection, soakSection],
  // After an upgrade rolled back by the failure policy: find the cause, then the same target again.
  next: (run) =>
    run.kind === 'upgrade' && run.phase === 'rolled-back'
      ? `svcops doctor recording --env ${run.environment}, then svcops resume ${run.id} --retry`
      : undefined,
}

/** The recording service's sections of a report, typed (for code and tests reading report.json). */
export function recordingSectionsOf(report: RunReport): {
  rollback?: RollbackView
  recreated: Array<Record<string, unknown>>
  stackFile?: StackFileView
  configReviews: Array<{ host: string; review: unknown }>
  diagnoses: DiagnosisView[]
} {
  return {
    ...(report.rollback ? { rollback: report.rollback as RollbackView } : {}),
    recreated: (report.recreated as Array<Record<string, unknown>> | undefined) ?? [],
    ...(report.stackFile ? { stackFile: report.stackFile as StackFileView } : {}),
    configReviews: (report.configReviews as Array<{ host: string; review: unknown }> | undefined) ?? [],
    diagnoses: (report.diagnoses as DiagnosisView[] | undefined) ?? [],
  }
}
