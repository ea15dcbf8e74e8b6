/**
 * The doctor's part of a run's report, "why it failed": for each diagnosis (the preflight's, or a
 * failed host's before its rollback) the findings — cause, evidence, fix — and every check it
 * made. Read from the journal entries its steps mark `report: 'diagnosis'`. A section of the
 * recording service's reports (recording-report.ts), so it lives with them: the doctor writes the
 * entries, the report reads them, and neither imports the other.
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
  /** The target's last log lines, read before the checks. */
  logs?: string[]
  /** Why they could not be read. */
  logsError?: string
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
        ...(Array.isArray(e.data?.logs) ? { logs: (e.data.logs as unknown[]).map(String) } : {}),
        ...(typeof e.data?.logsError === 'string' ? { logsError: e.data.logsError } : {}),
      })),
  markdown(diagnoses) {
    if (!diagnoses.length) return []
    const lines = ['', '## Why it failed (doctor)', '']
    for (const d of diagnoses) {
      lines.push(`### ${d.host ? `${d.host}: ` : ''}${d.step}${d.failure ? ` — after: ${d.failure}` : ''}`, '')
      const findings = d.findings as FindingView[]
      if (!findings.length) lines.push(noCauseSentence(d))
      for (const f of findings) {
        lines.push(`- **${f.severity}** \`${f.cause}\` on ${f.host}: ${f.summary}`)
        for (const e of f.evidence) lines.push(`  - evidence: ${e}`)
        lines.push(`  - fix: ${f.remedy}`)
      }
      // Only what did not pass gets a row: the passing checks are one line.
      const checks = d.checks as CheckView[]
      const passed = checks.filter((c) => c.status === 'ok')
      const rest = checks.filter((c) => c.status !== 'ok')
      if (passed.length) lines.push('', passedLine(passed))
      if (rest.length) {
        lines.push('', '| host | cause | check | result |', '|---|---|---|---|')
        for (const c of rest) lines.push(`| ${c.host} | ${c.cause} | ${c.check} | ${c.status}: ${c.detail.replace(/\|/g, '\\|')} |`)
      }
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
        items.length ? `<ul>${items.join('')}</ul>` : `<p>${esc(noCauseSentence(d))}</p>`,
      )
    }
    return { title: 'Why it failed (doctor)', body: `<div id="doctor">${out.join('\n')}</div>` }
  },
})

/** "12 checks passed: cause-a, cause-b, ..." — the passing checks collapsed to one line. */
function passedLine(passed: CheckView[]): string {
  return `${passed.length} check(s) passed: ${[...new Set(passed.map((c) => c.cause))].join(', ')}.`
}

/**
 * What a diagnosis without a finding says: never a bare "no cause found" — the failed target's
 * last log lines are at the top of the report, and it says where to look for them when none were read.
 */
function noCauseSentence(d: DiagnosisView): string {
  const logs = d.logs?.length ?? 0
  if (logs)
    return `No known cause among the doctor's checks; the last ${logs} log line(s) of ${d.host ?? 'the target'} are at the top of this report.`
  return `No known cause among the doctor's checks, and no log lines could be read${d.logsError ? ` (${d.logsError})` : ''}.`
}
