/**
 * The run's timeline and the runs table on a terminal: `svcops runs show ID` draws one line per
 * host (the same lanes, stages and marks as report.html), `svcops runs list` one row per run with
 * its outcome, duration and longest downtime. Names in them (hosts, environments, versions) are
 * data: one line each, control characters escaped.
 */
import { formatDuration } from '../core/events.ts'
import { sanitizeDeep, sanitizeLine } from '../core/sanitize.ts'
import { renderFailureLines } from './failure-summary.ts'
import type { RunReport } from './report.ts'
import { isPaused } from '../runs/run-record.ts'
import { Phase } from '../runs/step.ts'
import {
  buildTimeline,
  downtimeLabel,
  longestDowntime,
  outcomeSentence,
  runDurationMs,
  wordsOf,
  type Stage,
  type Timeline,
} from './timeline.ts'

/** One character per stage; the rollback's steps in capitals, so the way back stands out. */
const CHAR_OF_STAGE: Readonly<Record<Stage, string>> = {
  stop: 'x',
  install: 'i',
  start: 's',
  healthy: 'h',
  verified: 'v',
  paused: 'p',
  other: '=',
}

export const TIMELINE_LEGEND =
  'x stop  i install  s start  h healthy  v verified  p paused  = other  CAPITALS rollback  ! failed  | batch start  ┃ window end'

/** The timeline as text: a marker line (batches, window end), then one line per lane. */
export function renderTimelineText(t: Timeline, columns = 60): string {
  const span = Math.max(1, t.end - t.start)
  const col = (ms: number) => Math.min(columns - 1, Math.max(0, Math.floor(((ms - t.start) / span) * columns)))
  const labels = t.lanes.map((l) => sanitizeLine(`${l.host || 'run'}${l.batch ? ` (${l.batch})` : ''}`))
  const width = Math.max(...labels.map((l) => l.length))
  const marks = Array.from({ length: columns }, () => ' ')
  const names: string[] = []
  for (const b of t.batches) {
    if (b.start === undefined) continue
    marks[col(b.start)] = '|'
    names.push(`${sanitizeLine(b.label)} ${new Date(b.start).toISOString().slice(11, 19)}`)
  }
  if (t.windowEnd !== undefined && t.windowEnd <= t.end) marks[col(t.windowEnd)] = '┃'
  const windowNote = t.windowEnd !== undefined ? `; window ends ${new Date(t.windowEnd).toISOString().slice(11, 19)}` : ''
  const lines = [`${''.padEnd(width)}  ${marks.join('')}  ${names.join(', ')}${windowNote}`]
  t.lanes.forEach((lane, i) => {
    const cells = Array.from({ length: columns }, () => '.')
    for (const bar of lane.bars) {
      const c = CHAR_OF_STAGE[bar.stage]
      const ch = bar.status === 'failed' ? '!' : bar.phase === Phase.run ? c : c.toUpperCase()
      for (let k = col(bar.start); k <= col(Math.max(bar.start, bar.end - 1)); k++) cells[k] = ch
    }
    lines.push(`${(labels[i] as string).padEnd(width)}  ${cells.join('')}  ${downtimeLabel(lane.downtime) ?? ''}`.trimEnd())
  })
  return lines.join('\n')
}

/** `svcops runs show`: the outcome, the timeline and its legend. */
export function renderRunText(report: RunReport, outcome: string, columns = 60): string {
  const failure = report.failure ? ['', ...sanitizeDeep(renderFailureLines(report.failure))] : []
  return [sanitizeLine(outcome), ...failure, '', renderTimelineText(buildTimeline(report), columns), '', TIMELINE_LEGEND].join('\n')
}

/**
 * The last line a run prints: its id, the outcome sentence (where it stopped, the longest
 * downtime), what changed — each target from its version before to the one it ended on — and
 * where its report is.
 */
export function renderClosingLine(report: RunReport, reportPath: string): string {
  const { run } = report
  const words = wordsOf(report)
  const before = report.view.previousVersions
  const moved = report.downtime
    .filter((d) => d.endedOn !== undefined && d.endedOn !== before[d.host])
    .map((d) => `${d.host} ${before[d.host] ?? '?'} -> ${d.endedOn ?? '?'}`)
  const changed = moved.length ? `Changed: ${moved.join(', ')}` : `Every ${words.target} on its version before the run`
  const down = report.downtime.filter((d) => d.downtimeMs !== undefined)
  const total = down.reduce((sum, d) => sum + (d.downtimeMs ?? 0), 0)
  const downtime = down.length
    ? `downtime ${formatDuration(total)} in all over ${down.length} ${down.length === 1 ? words.target : words.targets}`
    : 'no downtime'
  return sanitizeLine(`Run ${run.id}: ${outcomeSentence(report)} ${changed}; ${downtime}. Report: ${reportPath}`)
}

/** `svcops runs list`: one row per run. */
export function renderRunsTable(reports: RunReport[]): string {
  const rows = sanitizeDeep(reports).map((r) => {
    const duration = runDurationMs(r)
    const longest = longestDowntime(r)
    return [
      r.run.id,
      r.run.environment,
      r.run.system,
      r.run.kind,
      r.run.targetVersion || '—',
      // A stored record that failed its check (src/runs/run-mac.ts) is shown as refused, not as its phase.
      r.run.trust?.state === 'refused' ? 'refused' : isPaused(r.run) ? 'paused' : r.run.phase,
      duration !== undefined ? formatDuration(duration) : '—',
      longest ? `${formatDuration(longest.downtimeMs ?? 0)} ${longest.host}` : '—',
    ]
  })
  const head = ['ID', 'ENV', 'SYSTEM', 'KIND', 'TARGET', 'OUTCOME', 'DURATION', 'LONGEST DOWNTIME']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)))
  return [head, ...rows]
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i] as number))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}
