/**
 * The report of a run, built from its journal alone (so a resumed or rolled-back run gets the same
 * report as one that ran straight through): `report.json` for machines, `report.md` for people and
 * `report.html` for a browser, with the outcome and its cause, the timeline of every step, the
 * downtime of each target (from the start of its stop to its verified state), and the sections the
 * run's system contributes (report-section.ts). Every file passes through the redaction layer;
 * report.md through the sanitizer too (every value one line, control characters escaped: log lines
 * and recordings' names are data), and report.json keeps every value but writes the control
 * characters JSON leaves raw as `\u` escapes.
 */
import { writeFileAtomic } from '../core/atomic-write.ts'
import { formatDuration } from '../core/events.ts'
import { redact, redactDeep } from '../core/redact.ts'
import { sanitizeDeep, sanitizeText, stringifyForTerminal } from '../core/sanitize.ts'
import type { Journal, JournalEntry } from '../runs/journal.ts'
import type { SystemDescription } from '../runs/system-description.ts'
import { VERIFIED } from '../runs/step.ts'
import { renderFailureLines, summarizeFailure } from './failure-summary.ts'
import { renderHtml } from './report-html.ts'
import { fencedBlock } from './report-section.ts'
import { reportSystemOf } from './report-system.ts'
import { kindTitle, wordsOf } from './timeline.ts'
import type { HostDowntime, RunReport } from './report-types.ts'

export type { HostDowntime, RunReport } from './report-types.ts'

/** Downtime per host: stop (start) -> verification (ok), the window users could not reach it. */
export function downtimeOf(entries: JournalEntry[], hosts: string[]): HostDowntime[] {
  return hosts.map((host) => {
    const mine = entries.filter((e) => e.host === host)
    const stop = mine.find((e) => e.disruptive === true && e.status === 'start')
    const verified = mine.filter((e) => e.report === VERIFIED && e.status === 'ok').at(-1)
    const installs = mine.filter((e) => e.status === 'ok' && typeof e.data?.to === 'string')
    const lastInstall = installs.at(-1)
    const out: HostDowntime = { host }
    if (stop) out.stoppedAt = stop.time
    if (verified) out.verifiedAt = verified.time
    if (stop && verified) out.downtimeMs = Date.parse(verified.time) - Date.parse(stop.time)
    if (typeof lastInstall?.data?.to === 'string') out.endedOn = lastInstall.data.to
    return out
  })
}

/** Builds the report of a run from its journal (`system`: the run's system; none: no targets, no sections). */
export function buildReport(journal: Journal, system: SystemDescription | undefined): RunReport {
  const entries = journal.entries()
  const run = journal.run
  const of = reportSystemOf(run, system)
  const view = of.view(run)
  const kept = entries.filter((e) => e.step === 'keep-record' && e.status === 'ok' && e.data?.record).at(-1)
  const report: RunReport = {
    run,
    view,
    downtime: downtimeOf(entries, view.targets),
    timeline: entries,
    ...(kept ? { record: kept.data?.record as NonNullable<RunReport['record']> } : {}),
  }
  const notes: string[] = []
  for (const section of of.sections) {
    const value = section.build(entries, run)
    if (value === undefined) continue
    report[section.key] = value
    const note = section.outcome?.(value)
    if (note) notes.push(note)
  }
  if (notes.length) report.outcomeNote = notes.join('')
  const failure = summarizeFailure(report, (r) => of.next(r))
  if (failure) report.failure = failure
  return report
}

/** The readable report. Every value in it is one line with its control characters escaped. */
export function renderMarkdown(original: RunReport, system: SystemDescription | undefined): string {
  // Redacted before it is escaped: an escape must not split a secret's bytes out of reach.
  const redacted = redactDeep(original)
  const report = sanitizeDeep(redacted)
  const { run, view } = report
  const of = reportSystemOf(run, system)
  const present = of.sections.filter((s) => report[s.key] !== undefined)
  const lines: string[] = [`# ${kindTitle(report)} run ${run.id}`, '']
  // A failed run opens with what an on-call engineer needs first; the facts follow.
  if (report.failure) lines.push(...fencedBlock('', renderFailureLines(report.failure).join('\n')), '')
  lines.push(
    `- environment: ${run.environment}`,
    `- target version: ${run.targetVersion}`,
    `- previous versions: ${
      Object.entries(view.previousVersions)
        .map(([h, v]) => `${h} ${v}`)
        .join(', ') || 'unknown'
    }`,
    `- outcome: **${run.phase}**${run.cause ? ` — cause: ${run.cause}` : ''}`,
    `- started: ${run.startedAt}${run.finishedAt ? `, finished: ${run.finishedAt}` : ''}`,
    `- by: ${run.holder}`,
  )
  lines.push(...of.facts(run).map((f) => `- ${f}`))
  for (const s of present) {
    const line = s.headline?.(report[s.key] as never)
    if (line) lines.push(`- ${line}`)
  }
  if (report.record)
    lines.push(
      `- record: ${report.record.copy} is the stack file as this run left it (${report.record.file}); commit it to the project (docs/deploy.md, "Scheduled jobs")`,
    )
  for (const s of present.filter((x) => x.beforeDowntime))
    lines.push(...(s.markdown?.((s.multiline ? redacted : report)[s.key] as never) ?? []))
  const words = wordsOf(report)
  lines.push('', `## Downtime per ${words.target}`, '', `| ${words.target} | stopped | verified | downtime |`, '|---|---|---|---|')
  for (const d of report.downtime)
    lines.push(
      `| ${d.host} | ${d.stoppedAt ?? '—'} | ${d.verifiedAt ?? (d.stoppedAt ? 'not verified' : '—')} | ${d.downtimeMs !== undefined ? formatDuration(d.downtimeMs) : '—'} |`,
    )
  for (const s of present.filter((x) => !x.beforeDowntime))
    lines.push(...(s.markdown?.((s.multiline ? redacted : report)[s.key] as never) ?? []))
  lines.push('', '## Timeline', '', `| time | ${words.target} | step | outcome | what changed / detail |`, '|---|---|---|---|---|')
  for (const e of report.timeline.filter((x) => x.status !== 'start')) {
    const what = [...(e.changed ?? []), ...(e.detail ? [e.detail] : [])].join('; ').replace(/\|/g, '\\|').replace(/\n/g, ' ')
    lines.push(
      `| ${e.time} | ${e.host ?? ''} | ${e.step} | ${e.status}${e.durationMs !== undefined ? ` (${formatDuration(e.durationMs)})` : ''} | ${what} |`,
    )
  }
  return sanitizeText(redact(lines.join('\n') + '\n'))
}

/** Writes report.json, report.md and report.html into the run folder and returns the report. */
export function writeReport(journal: Journal, system: SystemDescription | undefined): RunReport {
  const report = redactDeep(buildReport(journal, system))
  writeFileAtomic(journal.file('report.json'), stringifyForTerminal(report, 2) + '\n')
  writeFileAtomic(journal.file('report.md'), renderMarkdown(report, system))
  writeFileAtomic(journal.file('report.html'), renderHtml(report, system))
  return report
}
