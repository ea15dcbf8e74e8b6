/**
 * What a live rehearsal found (`svcops rehearse live`): its verdict, the files the upgrade would
 * write or remove with why (never their content), the checks run on the copy and on production,
 * the REST prefix before and after, and what it does not rehearse — as the terminal shows it and
 * as its report's section (read from the journal by the `live-rehearsal` report value).
 */
import { z } from 'zod'
import { escapeHtml as esc, defineSection } from '../../reports/report-section.ts'
import { apiPrefix } from '../../releases/versions.ts'
import type { JournalEntry } from '../../runs/journal.ts'

/** The report value the record step journals. */
export const LIVE_REHEARSAL_REPORT = 'live-rehearsal'

/**
 * What a live rehearsal does not cover: the target's programs. svcops starts no controller of the
 * target against the moved files (a vendor's controller cannot be run beside production's on its
 * host without its packages installed there), so its reading of the moved settings file, its PSK
 * refusal and its REST prefix at run time are checked only by the real upgrade's canary and checks.
 */
export const NOT_REHEARSED =
  "the target's packages and processes: no system controller of the target is started on the copy, so its reading of the moved settings file, its PSK entropy refusal and its REST prefix at run time are left to the real upgrade's canary and checks"

const checkSchema = z.object({ check: z.string(), ok: z.boolean(), detail: z.string().optional() })

const liveRehearsalSchema = z.object({
  environment: z.string(),
  from: z.string(),
  to: z.string(),
  verdict: z.enum(['passed', 'failed']),
  /** Why it failed when the upgrade's plan itself refused (several endpoints, no settings file). */
  cause: z.string().optional(),
  changes: z.array(z.object({ host: z.string(), path: z.string(), change: z.enum(['written', 'removed']), why: z.array(z.string()) })),
  checks: z.array(checkSchema),
  /** The system controller's REST prefix before and after (its callers' saved requests are the upgrade's gates). */
  api: z.object({ from: z.string(), to: z.string() }),
  notRehearsed: z.string(),
})

/** What a live rehearsal found. */
export type LiveRehearsal = z.infer<typeof liveRehearsalSchema>

/** The rehearsal's finding from what its steps journaled: failed when the plan refused or a check failed. */
export function liveRehearsalOf(parts: {
  environment: string
  from: string
  to: string
  copied: { changes: LiveRehearsal['changes'] } | { refused: string } | undefined
  checks: LiveRehearsal['checks']
}): LiveRehearsal {
  const refused = parts.copied && 'refused' in parts.copied ? parts.copied.refused : undefined
  const changes = parts.copied && 'changes' in parts.copied ? parts.copied.changes : []
  return {
    environment: parts.environment,
    from: parts.from,
    to: parts.to,
    verdict: refused === undefined && parts.checks.every((c) => c.ok) ? 'passed' : 'failed',
    ...(refused !== undefined ? { cause: refused } : {}),
    changes,
    checks: parts.checks,
    api: { from: apiPrefix(parts.from), to: apiPrefix(parts.to) },
    notRehearsed: NOT_REHEARSED,
  }
}

/** Why a failed rehearsal failed, in one sentence. */
export function failureOf(r: LiveRehearsal): string {
  const failed = r.checks.filter((c) => !c.ok).map((c) => `${c.check}${c.detail ? ` (${c.detail})` : ''}`)
  return `The live rehearsal of ${r.from} -> ${r.to} failed: ${r.cause ?? `the copy fails ${failed.join('; ')}`}`
}

/** The rehearsal in lines, for a terminal and the report. */
export function describeLiveRehearsal(r: LiveRehearsal): string[] {
  return [
    `Live rehearsal of ${r.from} -> ${r.to} on a copy of ${r.environment}'s files: ${r.verdict.toUpperCase()}${r.cause ? ` — ${r.cause}` : ''}`,
    ...r.changes.map((c) => `  ${c.change} ${c.host}:${c.path}${c.why.length ? ` (${c.why.join('; ')})` : ''}`),
    ...r.checks.map((c) => `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.check}${c.detail ? `: ${c.detail}` : ''}`),
    `  API prefix ${r.api.from} -> ${r.api.to}${r.api.from === r.api.to ? '' : ' (callers move: the upgrade gates their saved requests, see svcops plan live)'}`,
    `Not rehearsed: ${r.notRehearsed}. Production's files were only read.`,
  ]
}

/** The finding a rehearsal run journaled, if it got that far. */
export function liveRehearsalIn(entries: readonly JournalEntry[]): LiveRehearsal | undefined {
  const entry = entries.filter((e) => e.report === LIVE_REHEARSAL_REPORT && e.status === 'ok').at(-1)
  // Read back from a store, the data may have any shape: only a rehearsal's finding is shown.
  const parsed = liveRehearsalSchema.safeParse(entry?.data)
  return parsed.success ? parsed.data : undefined
}

/** The live rehearsal's section of its run's report. */
export const liveRehearsalSection = defineSection<LiveRehearsal>({
  key: 'liveRehearsal',
  build: (entries) => liveRehearsalIn(entries),
  headline: (r) => `live rehearsal verdict: ${r.verdict}${r.cause ? ` — ${r.cause}` : ''}`,
  markdown: (r) => [
    '',
    '## Live rehearsal: the upgrade on a copy of the files',
    '',
    ...describeLiveRehearsal(r).map((l) => `- ${l.trim()}`),
  ],
  html: (r) => ({
    title: 'Live rehearsal: the upgrade on a copy of the files',
    body: `<ul id="live-rehearsal">${describeLiveRehearsal(r)
      .map((l) => `<li>${esc(l.trim())}</li>`)
      .join('')}</ul>`,
  }),
})
