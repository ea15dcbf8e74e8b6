/**
 * report.html: the run's report as one self-contained page (inline CSS and SVG, no script, nothing
 * fetched) built from the same `RunReport` as report.md. At its top the timeline picture: one lane
 * per host, each step a bar coloured by its stage (the rollback's steps in their own colour), the
 * canary and batches marked where they started, the maintenance window's end as a line, and each
 * host's downtime written at the end of its lane. Below it the outcome in one sentence, the run's
 * facts, the sections its system contributes (the rollback, the configuration review...), the
 * downtime table and the step table. The whole
 * page passes through the redaction layer; every value in it is HTML-escaped with its control
 * characters escaped visibly too (`escapeHtml`); it prints on white and follows the reader's dark mode.
 */
import { formatDuration } from '../core/events.ts'
import { redact } from '../core/redact.ts'
import { Phase } from '../runs/step.ts'
import { buildTimeline, downtimeLabel, kindTitle, outcomeSentence, STAGES, wordsOf, type Bar, type Timeline } from './timeline.ts'
import type { SystemDescription } from '../runs/system-description.ts'
import { escapeHtml } from './report-section.ts'
import { reportSystemOf } from './report-system.ts'
import type { FailureSummary, RunReport } from './report-types.ts'

const WIDTH = 1000
const LABEL = 150
const RIGHT = 170
const LANE = 30
const TOP = 38

const esc = escapeHtml
/** Room between two batch labels, in the picture's units. */
const LABEL_GAP = 8

/** A generous width of `text` in the timeline's 12 px bold font (no script measures it: the page has none). */
function textWidth(text: string): number {
  return text.length * 8
}

function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19)
}

/** The timeline picture as inline SVG. */
export function renderTimelineSvg(t: Timeline): string {
  const plot = WIDTH - LABEL - RIGHT
  // A window ending soon after the run widens the picture to show it; one ending long after is
  // drawn at the plot's right edge, labelled with its time.
  const runSpan = Math.max(1, t.end - t.start)
  const inView = t.windowEnd !== undefined && t.windowEnd <= t.end + runSpan / 2
  const span = inView && t.windowEnd !== undefined ? Math.max(runSpan, t.windowEnd - t.start) : runSpan
  const x = (ms: number) => LABEL + ((Math.min(t.start + span, Math.max(t.start, ms)) - t.start) / span) * plot
  const windowX = t.windowEnd === undefined ? undefined : inView ? t.windowEnd : t.start + span
  const height = TOP + t.lanes.length * LANE + 24
  const out: string[] = [
    `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${height}" width="100%" role="img" aria-label="Timeline of the run">`,
  ]
  for (let i = 0; i <= 4; i++) {
    const ms = t.start + (span * i) / 4
    out.push(
      `<line class="tick" x1="${x(ms)}" x2="${x(ms)}" y1="${TOP - 6}" y2="${height - 20}"/>`,
      `<text class="axis" x="${x(ms)}" y="${height - 6}" text-anchor="middle">${clock(ms)}</text>`,
    )
  }
  t.lanes.forEach((lane, i) => {
    const y = TOP + i * LANE
    const name = lane.host || 'run'
    out.push(
      `<g class="lane" data-host="${esc(name)}"${lane.batch ? ` data-batch="${esc(lane.batch)}"` : ''}>`,
      `<rect class="lane-bg" x="0" y="${y}" width="${WIDTH}" height="${LANE}"/>`,
      `<text class="lane-label" x="6" y="${y + 19}">${esc(name)}${lane.batch ? ` <tspan class="lane-batch">${esc(lane.batch)}</tspan>` : ''}</text>`,
    )
    const d = lane.downtime
    // The span users could not reach the host, behind its bars: first stop to last verification.
    if (d?.stoppedAt) {
      const from = x(Date.parse(d.stoppedAt))
      const to = x(d.verifiedAt ? Date.parse(d.verifiedAt) : t.end)
      out.push(`<rect class="down-band" x="${from}" y="${y + 3}" width="${Math.max(1, to - from)}" height="${LANE - 6}"/>`)
    }
    for (const bar of lane.bars) out.push(renderBar(bar, x, y))
    const label = downtimeLabel(lane.downtime)
    if (label) out.push(`<text class="downtime" data-host="${esc(name)}" x="${WIDTH - RIGHT + 8}" y="${y + 19}">${esc(label)}</text>`)
    out.push('</g>')
  })
  // Labels of batches that started close together are moved right, past the one before, so that
  // they never overlap; their dashed lines stay where each batch started.
  let labelEnd = -Infinity
  for (const b of t.batches) {
    if (b.start === undefined) continue
    const labelX = Math.max(x(b.start) + 3, labelEnd + LABEL_GAP)
    labelEnd = labelX + textWidth(b.label)
    out.push(
      `<g class="batch-marker" data-batch="${esc(b.label)}"><line x1="${x(b.start)}" x2="${x(b.start)}" y1="${TOP - 14}" y2="${height - 20}"/>` +
        `<text x="${labelX}" y="${TOP - 16}">${esc(b.label)}</text></g>`,
    )
  }
  if (windowX !== undefined && t.windowEnd !== undefined)
    out.push(
      `<g class="window-end"><line x1="${x(windowX)}" x2="${x(windowX)}" y1="${TOP - 30}" y2="${height - 20}"/>` +
        `<text x="${x(windowX) - 3}" y="${TOP - 28}" text-anchor="end">window ends ${clock(t.windowEnd)}${inView ? '' : ' →'}</text></g>`,
    )
  out.push('</svg>')
  return out.join('\n')
}

function renderBar(bar: Bar, x: (ms: number) => number, y: number): string {
  const rollback = bar.phase !== Phase.run
  const x1 = x(bar.start)
  const w = Math.max(2, x(bar.end) - x1)
  const cls = ['bar', `stage-${bar.stage}`, rollback ? 'rollback' : '', `status-${bar.status}`].filter(Boolean).join(' ')
  const title = `${bar.step} ${clock(bar.start)}–${clock(bar.end)} (${formatDuration(bar.end - bar.start)}) ${bar.status}${bar.detail ? `: ${bar.detail}` : ''}`
  const mark = bar.status === 'failed' ? `<text class="fail-mark" x="${x1 + w + 2}" y="${y + 20}">✗</text>` : ''
  return `<rect class="${cls}" data-step="${esc(bar.step)}" x="${x1}" y="${y + 7}" width="${w}" height="${LANE - 14}" rx="2"><title>${esc(title)}</title></rect>${mark}`
}

const CSS = `
:root { color-scheme: light dark; --fg:#1d2330; --bg:#ffffff; --muted:#667085; --lane:#f3f5f8; --grid:#d0d5dd;
  --stop:#d92d20; --install:#f79009; --start:#2e90fa; --healthy:#12b76a; --verified:#067647; --paused:#fdb022; --other:#98a2b3; --rollback:#7a5af8; --window:#b42318; --failed:#f04438; }
@media (prefers-color-scheme: dark) { :root { --fg:#e4e7ec; --bg:#101828; --muted:#98a2b3; --lane:#1d2939; --grid:#344054; --other:#667085; --window:#f97066; } }
@media print { :root { --fg:#000; --bg:#fff; --lane:#f3f5f8; } body { margin: 0; } }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 24px auto; max-width: 1040px; padding: 0 16px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 6px; }
.outcome { font-size: 16px; font-weight: 600; margin: 12px 0; } .outcome.bad { color: var(--stop); }
.meta, .muted { color: var(--muted); }
svg.timeline { font: 12px system-ui, sans-serif; display: block; margin: 8px 0; }
svg text { fill: var(--fg); } .axis { fill: var(--muted); } .tick { stroke: var(--grid); stroke-width: 1; }
.lane-bg { fill: var(--lane); stroke: var(--bg); stroke-width: 2; } .lane-batch { fill: var(--muted); font-size: 11px; }
.bar { stroke: none; } .stage-stop { fill: var(--stop); } .stage-install { fill: var(--install); } .stage-start { fill: var(--start); }
.stage-healthy { fill: var(--healthy); } .stage-verified { fill: var(--verified); } .stage-paused { fill: var(--paused); } .stage-other { fill: var(--other); }
.bar.rollback { fill: var(--rollback); opacity: .85; } .bar.rollback.stage-stop { opacity: 1; }
.status-failed { stroke: var(--window); stroke-width: 2; } .bar.status-failed, .bar.rollback.status-failed { fill: var(--failed); opacity: 1; } .fail-mark { fill: var(--window); font-weight: 700; }
.batch-marker line { stroke: var(--fg); stroke-dasharray: 4 3; } .batch-marker text { font-weight: 600; }
.window-end line { stroke: var(--window); stroke-width: 2; } .window-end text { fill: var(--window); }
.downtime { font-weight: 600; } .down-band { fill: var(--stop); opacity: .12; }
.legend span { display: inline-block; margin-right: 14px; } .legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; border-radius: 2px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; } th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--grid); vertical-align: top; }
.failure { border-left: 4px solid var(--stop); padding: 2px 12px; margin: 8px 0 12px; } .failure p { margin: 4px 0; }
pre { background: var(--lane); padding: 8px; overflow-x: auto; } .failed { color: var(--stop); font-weight: 600; }
`

function legend(): string {
  const items = STAGES.map((s) => `<span><i style="background:var(--${s})"></i>${s}</span>`)
  items.push(
    '<span><i style="background:var(--rollback)"></i>rollback</span>',
    '<span><i style="background:var(--failed)"></i>failed</span>',
    '<span><i style="background:var(--window)"></i>window end</span>',
  )
  return `<p class="legend">${items.join('')}</p>`
}

function section(title: string, body: string): string {
  return `<h2>${esc(title)}</h2>\n${body}`
}

/** The whole report page. */
export function renderHtml(report: RunReport, system: SystemDescription | undefined): string {
  const { run } = report
  const timeline = buildTimeline(report)
  const bad = run.phase !== 'succeeded' && run.phase !== 'running'
  const parts: string[] = [
    `<h1>${esc(kindTitle(report))} run ${esc(run.id)}</h1>`,
    ...(report.failure ? [failureBox(report.failure)] : []),
    `<p class="meta">environment ${esc(run.environment)}${run.targetVersion ? ` · target ${esc(run.targetVersion)}` : ''} · started ${esc(run.startedAt)}${run.finishedAt ? ` · finished ${esc(run.finishedAt)}` : ''} · by ${esc(run.holder)}</p>`,
    renderTimelineSvg(timeline),
    legend(),
    `<p class="outcome${bad ? ' bad' : ''}" id="outcome">${esc(outcomeSentence(report))}</p>`,
  ]
  if (run.cause) parts.push(`<p>Cause: ${esc(run.cause)}</p>`)
  const of = reportSystemOf(run, system)
  const present = of.sections.filter((x) => report[x.key] !== undefined)
  const previous = Object.entries(report.view.previousVersions).map(([h, v]) => `${h} ${v}`)
  const facts = [
    ...of.facts(run),
    ...present.flatMap((x) => x.headline?.(report[x.key] as never) ?? []),
    ...(previous.length ? [`previous versions: ${previous.join(', ')}`] : []),
  ]
  if (facts.length) parts.push(section('Backup and versions', `<ul id="backup">${facts.map((f) => `<li>${esc(f)}</li>`).join('')}</ul>`))
  const sectionsOf = (before: boolean) =>
    present
      .filter((x) => !!x.beforeDowntime === before)
      .flatMap((x) => {
        const part = x.html?.(report[x.key] as never)
        return part ? [section(part.title, part.body)] : []
      })
  parts.push(...sectionsOf(true))
  parts.push(section(`Downtime per ${wordsOf(report).target}`, downtimeTable(report)))
  parts.push(...sectionsOf(false))
  parts.push(section('Every step', stepTable(report)))
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(kindTitle(report))} run ${esc(run.id)} — ${esc(run.phase)}</title>
<style>${CSS}</style></head>
<body>
${parts.join('\n')}
</body></html>
`
  return redact(html)
}

/** A failed run's first lines: what, where, status, the last log lines, the doctor's finding, the next command. */
function failureBox(s: FailureSummary): string {
  const rows = [`<p class="failed" id="failure-what">Failed: ${esc(s.what)}</p>`]
  if (s.where) rows.push(`<p id="failure-where">Where: ${esc(s.where)}${s.status ? ` (status: ${esc(s.status)})` : ''}</p>`)
  if (s.logs.length)
    rows.push(`<p>Last log lines${s.where ? ` of ${esc(s.where)}` : ''}:</p><pre id="failure-logs">${s.logs.map(esc).join('\n')}</pre>`)
  else if (s.logsNote) rows.push(`<p id="failure-logs">Log lines: ${esc(s.logsNote)}.</p>`)
  if (s.finding) rows.push(`<p id="failure-finding">Doctor: ${esc(s.finding)}</p>`)
  else if (s.doctorChecks !== undefined) rows.push(`<p id="failure-finding">Doctor: no known cause among its ${s.doctorChecks} checks.</p>`)
  rows.push(`<p id="failure-next">Next: <code>${esc(s.next)}</code></p>`)
  return `<section id="failure" class="failure">${rows.join('\n')}</section>`
}

function downtimeTable(report: RunReport): string {
  const rows = report.downtime.map(
    (d) =>
      `<tr data-host="${esc(d.host)}"><td>${esc(d.host)}</td><td>${esc(d.stoppedAt ?? '—')}</td><td>${esc(d.verifiedAt ?? (d.stoppedAt ? 'not verified' : '—'))}</td><td>${d.downtimeMs !== undefined ? esc(formatDuration(d.downtimeMs)) : '—'}</td><td>${esc(d.endedOn ?? '')}</td></tr>`,
  )
  return `<table id="downtime"><thead><tr><th>${esc(wordsOf(report).target)}</th><th>stopped</th><th>verified</th><th>downtime</th><th>ended on</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
}

function stepTable(report: RunReport): string {
  const rows = report.timeline
    .filter((e) => e.status !== 'start')
    .map((e) => {
      const what = [...(e.changed ?? []), ...(e.detail ? [e.detail] : [])].join('; ')
      return `<tr><td>${esc(e.time)}</td><td>${esc(e.host ?? '')}</td><td>${esc(e.step)}</td><td class="${e.status === 'failed' ? 'failed' : ''}">${esc(e.status)}${e.durationMs !== undefined ? ` (${esc(formatDuration(e.durationMs))})` : ''}</td><td>${esc(what)}</td></tr>`
    })
  return `<table id="steps"><thead><tr><th>time</th><th>${esc(wordsOf(report).target)}</th><th>step</th><th>outcome</th><th>what changed / detail</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
}
