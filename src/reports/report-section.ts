/**
 * What a system adds to a run's report: facts for its head ("backup ..., verified before anything
 * stopped") and sections, each built from the journal's entries (found by the `report` value its
 * steps journal, never by a step's name) and rendered in report.md and report.html. The report
 * itself (report.ts) knows only what every run has: its record, its timeline and each target's downtime.
 */
import { sanitizeLine, sanitizeText } from '../core/sanitize.ts'
import type { ReportSection } from '../runs/report-contribution.ts'

export type { ReportContribution, ReportSection } from '../runs/report-contribution.ts'

/** Declares a section (typed: its value flows from `build` to its renderers). */
export function defineSection<V>(section: ReportSection<V>): ReportSection<never> {
  return section as unknown as ReportSection<never>
}

/** A value as HTML text: markup characters as entities, control characters as `\x1b`, `\u202e` (lines kept). */
export function escapeHtml(value: unknown): string {
  return sanitizeText(String(value)).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** A fenced block of `text` (each line sanitized) whose fence no backtick run inside it can close. */
export function fencedBlock(info: string, text: string): string[] {
  const clean = text
    .split('\n')
    .map((line) => sanitizeLine(line))
    .join('\n')
  const longest = Math.max(0, ...(clean.match(/`+/g) ?? []).map((run) => run.length))
  const fence = '`'.repeat(Math.max(3, longest + 1))
  return [`${fence}${info}`, clean, fence]
}
