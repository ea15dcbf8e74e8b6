/**
 * The doctor's part of a run's report, "why it failed": for each diagnosis (the preflight's, or a
 * failed host's before its rollback) the findings — cause, evidence, fix — and every check it
 * made. Read from the journal entries its steps mark `report: 'diagnosis'`.
 */
import { defineSection, escapeHtml as esc } from '../reports/report-section.ts'

/** A finding as the report shows it (the doctor writes these into a step's data). */
export interface FindingView {
  cause: string
  host: string
  severity: string
  summary: string
  evidence: string[]
  remedy: string
}

/** One check the doctor made, as the report shows it. */
export interface CheckView {
  cause: string
  host: string
  status: string
  check: string
  detail: string
}

/** One diagnosis: the step that made it, the host, the failure it followed, its findings and checks. */
export interface DiagnosisView {
  step: string
  host?: string
  failure?: string
  findings: unknown[]
  checks: unknown[]
}

/** The report's `diagnoses`. */
export const diagnosisSection = defineSection<DiagnosisView[]>({
  key: 'diagnoses',
  beforeDowntime: true,
  build: (entries) =>
    entries
      .filter((e) => e.report === 'diagnosis' && e.status === 'ok' && e.data)
      .map((e) => ({
        step: e.step,
        ...(e.host ? { host: e.host } : {}),
        ...(typeof e.data?.failure === 'string' ? { failure: e.data.failure } : {}),
        findings: (e.data?.findings as unknown[] | undefined) ?? [],
        checks: (e.data?.checks as unknown[] | undefined) ?? [],
      })),
  markdown(diagnoses) {
    if (!diagnoses.length) return []
    const lines = ['', '## Why it failed (doctor)', '']
    for (const d of diagnoses) {
      lines.push(`### ${d.host ? `${d.host}: ` : ''}${d.step}${d.failure ? ` — after: ${d.failure}` : ''}`, '')
      const findings = d.findings as FindingView[]
      if (!findings.length) lines.push('No cause found.')
      for (const f of findings) {
        lines.push(`- **${f.severity}** \`${f.cause}\` on ${f.host}: ${f.summary}`)
        for (const e of f.evidence) lines.push(`  - evidence: ${e}`)
        lines.push(`  - fix: ${f.remedy}`)
      }
      lines.push('', '| host | cause | check | result |', '|---|---|---|---|')
      for (const c of d.checks as CheckView[])
        lines.push(`| ${c.host} | ${c.cause} | ${c.check} | ${c.status}: ${c.detail.replace(/\|/g, '\\|')} |`)
    }
    return lines
  },
  // The findings (cause, evidence, fix) per diagnosed host; the checks it made are in report.md.
  html(diagnoses) {
    if (!diagnoses.length) return undefined
    const out: string[] = []
    for (const d of diagnoses) {
      const items = (d.findings as FindingView[]).map(
        (f) =>
          `<li data-cause="${esc(f.cause)}"><strong>${esc(f.severity)}</strong> <code>${esc(f.cause)}</code> on ${esc(f.host)}: ${esc(f.summary)}` +
          `<ul>${f.evidence.map((e) => `<li>evidence: ${esc(e)}</li>`).join('')}<li>fix: ${esc(f.remedy)}</li></ul></li>`,
      )
      out.push(
        `<h3>${esc(d.host ? `${d.host}: ` : '')}${esc(d.step)}${d.failure ? ` — after: ${esc(d.failure)}` : ''}</h3>`,
        items.length ? `<ul>${items.join('')}</ul>` : '<p>No cause found.</p>',
      )
    }
    return { title: 'Why it failed (doctor)', body: `<div id="doctor">${out.join('\n')}</div>` }
  },
})
