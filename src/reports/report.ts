/**
 * The report of a run, built from its journal alone (so a resumed or rolled-back run gets the same
 * report as one that ran straight through): `report.json` for machines and `report.md` for people,
 * with the outcome and its cause, the timeline of every step, the downtime of each host (from the
 * start of its stop to its verified state), configuration reviews, and the recordings a rollback
 * re-created. Both files pass through the redaction layer.
 */
import { writeFileSync } from 'node:fs'
import { formatDuration } from '../core/events.ts'
import type { Journal, JournalEntry } from '../runs/journal.ts'
import type { CheckView, FindingView, HostDowntime, RunReport } from './report-types.ts'
import { redact, redactDeep } from '../core/redact.ts'
import { renderHtml } from './report-html.ts'

export type { HostDowntime, RunReport } from './report-types.ts'

/** Downtime per host: stop (start) -> verification (ok), the window users could not reach it. */
export function downtimeOf(entries: JournalEntry[], hosts: string[]): HostDowntime[] {
  return hosts.map((host) => {
    const mine = entries.filter((e) => e.host === host)
    const stop = mine.find((e) => e.disruptive === true && e.status === 'start')
    const verified = mine.filter((e) => e.report === 'verified' && e.status === 'ok').at(-1)
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

/** Builds the report of a run from its journal. */
export function buildReport(journal: Journal): RunReport {
  const entries = journal.entries()
  const run = journal.run
  const decide = entries.filter((e) => e.report === 'restore-decision' && e.status === 'ok').at(-1)
  const recreate = entries.filter((e) => e.report === 'recreated' && e.status === 'ok').at(-1)
  const record = entries.filter((e) => e.status === 'ok' && e.data?.stackFile && typeof e.data.stackFile === 'object').at(-1)
  const kept = entries.filter((e) => e.step === 'keep-record' && e.status === 'ok' && e.data?.record).at(-1)
  return {
    run,
    downtime: downtimeOf(entries, run.hosts),
    timeline: entries,
    configReviews: entries
      .filter((e) => e.report === 'config-review' && e.status === 'ok' && e.host)
      .map((e) => ({ host: e.host as string, review: e.data?.review })),
    recreated: (recreate?.data?.recreated as unknown[] | undefined) ?? [],
    diagnoses: entries
      .filter((e) => e.report === 'diagnosis' && e.status === 'ok' && e.data)
      .map((e) => ({
        step: e.step,
        ...(e.host ? { host: e.host } : {}),
        ...(typeof e.data?.failure === 'string' ? { failure: e.data.failure } : {}),
        findings: (e.data?.findings as unknown[] | undefined) ?? [],
        checks: (e.data?.checks as unknown[] | undefined) ?? [],
      })),
    ...(record ? { stackFile: record.data?.stackFile as NonNullable<RunReport['stackFile']> } : {}),
    ...(kept ? { record: kept.data?.record as NonNullable<RunReport['record']> } : {}),
    ...(decide?.data
      ? {
          rollback: {
            restore: decide.data.restore === true,
            reason: typeof decide.data.reason === 'string' ? decide.data.reason : '',
            hosts: (decide.data.hosts as string[] | undefined) ?? [],
          },
        }
      : {}),
  }
}

/** The readable report. */
export function renderMarkdown(report: RunReport): string {
  const { run } = report
  const lines: string[] = [`# ${run.kind === 'upgrade' ? 'Upgrade' : run.kind === 'backup' ? 'Backup' : 'Rollback'} run ${run.id}`, '']
  lines.push(
    `- environment: ${run.environment}`,
    `- target version: ${run.targetVersion}`,
    `- previous versions: ${
      Object.entries(run.previousVersions)
        .map(([h, v]) => `${h} ${v}`)
        .join(', ') || 'unknown'
    }`,
  )
  lines.push(
    `- outcome: **${run.phase}**${run.cause ? ` — cause: ${run.cause}` : ''}`,
    `- started: ${run.startedAt}${run.finishedAt ? `, finished: ${run.finishedAt}` : ''}`,
    `- by: ${run.holder}`,
  )
  if (run.deadline) lines.push(`- maintenance window until: ${run.deadline}`)
  if (run.backupId) lines.push(`- backup: ${run.backupId} (verified before anything stopped)`)
  const sf = report.stackFile
  if (sf)
    lines.push(
      sf.version === sf.deployment
        ? `- stack file: ${sf.file} holds ${sf.key} = ${sf.version ?? '?'}, the version the Deployment runs; commit it (docs/upgrade.md)`
        : `- stack file: ${sf.file} holds ${sf.key} = ${sf.version ?? 'nothing'}, but the Deployment runs ${sf.deployment ?? 'no known version'}: they disagree`,
    )
  if (report.record)
    lines.push(
      `- record: ${report.record.copy} is the stack file as this run left it (${report.record.file}); commit it to the project (docs/deploy.md, "Scheduled jobs")`,
    )
  if (run.fingerprintBefore)
    lines.push(
      `- schema fingerprint: before ${run.fingerprintBefore.slice(0, 16)}${run.fingerprintAfter ? `, after ${run.fingerprintAfter.slice(0, 16)}` : ''}`,
    )
  if (report.rollback) {
    lines.push(
      '',
      '## Rollback',
      '',
      `- database ${report.rollback.restore ? 'restored' : 'kept'}: ${report.rollback.reason}`,
      `- hosts: ${report.rollback.hosts.join(', ')}`,
    )
    if (report.recreated.length) {
      lines.push(`- recordings written after the backup, exported and re-created (${report.recreated.length}):`)
      for (const r of report.recreated as Array<Record<string, unknown>>)
        lines.push(`  - ${String(r.channelName)} — ${String(r.title)} (${String(r.startTime)}–${String(r.stopTime)})`)
    }
  }
  lines.push('', '## Downtime per host', '', '| host | stopped | verified | downtime |', '|---|---|---|---|')
  for (const d of report.downtime)
    lines.push(
      `| ${d.host} | ${d.stoppedAt ?? '—'} | ${d.verifiedAt ?? (d.stoppedAt ? 'not verified' : '—')} | ${d.downtimeMs !== undefined ? formatDuration(d.downtimeMs) : '—'} |`,
    )
  const reviews = report.configReviews.filter((c) => c.review && typeof c.review === 'object')
  if (reviews.length) {
    lines.push('', '## Configuration review', '')
    for (const { host, review } of reviews) {
      const r = review as {
        configPath: string
        newDefaults: Array<{ path: string; diff: string }>
        obsoleteOptions: string[]
        newOptions: string[]
      }
      lines.push(`### ${host}: ${r.configPath}`, '')
      if (!r.newDefaults.length) lines.push('No new default configuration was left beside the active one.')
      if (r.newOptions.length) lines.push(`New options (defaults apply): ${r.newOptions.join(', ')}`)
      if (r.obsoleteOptions.length) lines.push(`**Warning** — set but no longer in the new default: ${r.obsoleteOptions.join(', ')}`)
      for (const d of r.newDefaults) lines.push('', `\`${d.path}\`:`, '', '```diff', d.diff.trimEnd(), '```')
      lines.push('')
    }
  }
  lines.push(...diagnosisMarkdown(report))
  lines.push('', '## Timeline', '', '| time | host | step | outcome | what changed / detail |', '|---|---|---|---|---|')
  for (const e of report.timeline.filter((x) => x.status !== 'start')) {
    const what = [...(e.changed ?? []), ...(e.detail ? [e.detail] : [])].join('; ').replace(/\|/g, '\\|').replace(/\n/g, ' ')
    lines.push(
      `| ${e.time} | ${e.host ?? ''} | ${e.step} | ${e.status}${e.durationMs !== undefined ? ` (${formatDuration(e.durationMs)})` : ''} | ${what} |`,
    )
  }
  return redact(lines.join('\n') + '\n')
}

/** Writes report.json, report.md and report.html into the run folder and returns the report. */
export function writeReport(journal: Journal): RunReport {
  const report = redactDeep(buildReport(journal))
  writeFileSync(journal.file('report.json'), JSON.stringify(report, null, 2) + '\n', { mode: 0o600 })
  writeFileSync(journal.file('report.md'), renderMarkdown(report), { mode: 0o600 })
  writeFileSync(journal.file('report.html'), renderHtml(report), { mode: 0o600 })
  return report
}

/** "Why it failed": the doctor's findings (cause, evidence, fix), then every check it made. */
function diagnosisMarkdown(report: RunReport): string[] {
  if (!report.diagnoses.length) return []
  const lines = ['', '## Why it failed (doctor)', '']
  for (const d of report.diagnoses) {
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
}
