/**
 * The timeline of a run as data, built from its report (so from its journal alone): one lane per
 * host in rollout order plus one for the run's global steps, each step a bar coloured by its stage,
 * the canary and batches with the time they started, the maintenance window's end, and the downtime
 * of each host. The HTML report draws it as SVG and `svcops runs show` as one line per host; the
 * one-sentence outcome lives here too, for the report, the notifications and `runs list` (one line,
 * its control characters escaped: it quotes host and step names).
 */
import { formatDuration } from '../core/events.ts'
import { sanitizeLine } from '../core/sanitize.ts'
import type { JournalEntry } from '../runs/journal.ts'
import type { HostDowntime, RunReport } from './report-types.ts'
import { Phase, type PhasePrefix } from '../runs/step.ts'
import { PLAIN_WORDS, type SystemWords } from '../runs/system-description.ts'

/** How a bar is coloured: where a step sits between "stopped" and "verified", or the rollback's. */
export type Stage = 'stop' | 'install' | 'start' | 'healthy' | 'verified' | 'paused' | 'other'

/**
 * The stage of each host step, by step id: the one place a step id becomes a colour. Steps not
 * listed (preflight, backup, restore...) are drawn as `other`; the phase prefix (`rollback:`) is
 * read apart, so a rollback's stop is a stop drawn in the rollback's colour.
 */
export const STAGE_OF_STEP: Readonly<Record<string, Stage>> = {
  stop: 'stop',
  install: 'install',
  'review-config': 'install',
  start: 'start',
  'wait-healthy': 'healthy',
  'check-logs': 'healthy',
  'verify-host': 'verified',
  // The live system's: its settings written with the install, its check is its verification.
  'write-config': 'install',
  check: 'verified',
  // The wait after the canary for a person (--pause-after-canary): the run's own lane.
  pause: 'paused',
}

export const STAGES: readonly Stage[] = ['stop', 'install', 'start', 'healthy', 'verified', 'paused', 'other']

export interface Bar {
  /** The step's journal name (`rollback:stop`). */
  step: string
  /** Its id without the phase prefix. */
  id: string
  phase: PhasePrefix
  stage: Stage
  start: number
  end: number
  status: 'ok' | 'failed' | 'skipped' | 'unfinished'
  detail?: string
}

export interface Lane {
  /** Host name, or '' for the run's global steps. */
  host: string
  /** `canary`, `batch 1`... for a host lane. */
  batch?: string
  bars: Bar[]
  downtime?: HostDowntime
}

export interface BatchMark {
  label: string
  hosts: string[]
  /** When the batch's first stop started (undefined: the batch never started). */
  start?: number
}

export interface Timeline {
  start: number
  end: number
  lanes: Lane[]
  batches: BatchMark[]
  /** End of the maintenance window, when the run had one. */
  windowEnd?: number
}

const PREFIXES = (Object.values(Phase) as PhasePrefix[]).filter((p) => p !== Phase.run)

/** Splits a journal step name into its phase and its step id. */
export function splitStepName(step: string): { phase: PhasePrefix; id: string } {
  const phase = PREFIXES.find((p) => step.startsWith(p))
  return phase ? { phase, id: step.slice(phase.length) } : { phase: Phase.run, id: step }
}

/** Bars of `entries` (one lane's): each start paired with the step's next end. */
function barsOf(entries: JournalEntry[], runEnd: number): Bar[] {
  const bars: Bar[] = []
  entries.forEach((e, i) => {
    if (e.status !== 'start') return
    const end = entries.slice(i + 1).find((x) => x.step === e.step && x.status !== 'start')
    const { phase, id } = splitStepName(e.step)
    const bar: Bar = {
      step: e.step,
      id,
      phase,
      stage: STAGE_OF_STEP[id] ?? 'other',
      start: Date.parse(e.time),
      end: end ? Date.parse(end.time) : runEnd,
      status: end ? (end.status as Bar['status']) : 'unfinished',
    }
    if (end?.detail) bar.detail = end.detail
    bars.push(bar)
  })
  return bars
}

/** The timeline of a run's report. */
export function buildTimeline(report: RunReport): Timeline {
  const { run, view, timeline: entries } = report
  const times = entries.map((e) => Date.parse(e.time))
  const start = Math.min(Date.parse(run.startedAt), ...times)
  const end = Math.max(run.finishedAt ? Date.parse(run.finishedAt) : start, ...times, start + 1)
  const batches: BatchMark[] = view.batches.map((hosts, i) => {
    // A batch starts with its first stop (steps before it, like staging packages, run on every host at once).
    const first = entries.find(
      (e) => e.disruptive === true && e.host && hosts.includes(e.host) && splitStepName(e.step).phase === Phase.run,
    )
    return { label: view.batchLabels?.[i] ?? `group ${i + 1}`, hosts, ...(first ? { start: Date.parse(first.time) } : {}) }
  })
  const batchOf = new Map(batches.flatMap((b) => b.hosts.map((h) => [h, b.label] as const)))
  const lanes: Lane[] = [
    {
      host: '',
      bars: barsOf(
        entries.filter((e) => !e.host),
        end,
      ),
    },
  ]
  for (const host of view.targets) {
    const lane: Lane = {
      host,
      bars: barsOf(
        entries.filter((e) => e.host === host),
        end,
      ),
    }
    const batch = batchOf.get(host)
    if (batch) lane.batch = batch
    const downtime = report.downtime.find((d) => d.host === host)
    if (downtime) lane.downtime = downtime
    lanes.push(lane)
  }
  return { start, end, lanes, batches, ...(view.windowEnd ? { windowEnd: Date.parse(view.windowEnd) } : {}) }
}

/** "down 12.3 s", "down since 03:01:12, not verified", or undefined when the host never stopped. */
export function downtimeLabel(d: HostDowntime | undefined): string | undefined {
  if (!d?.stoppedAt) return undefined
  if (d.downtimeMs !== undefined) return `down ${formatDuration(d.downtimeMs)}`
  return `down since ${d.stoppedAt.slice(11, 19)}, not verified`
}

/** How the run's system calls its targets and groups. */
export function wordsOf(report: RunReport): SystemWords {
  return report.view.words ?? PLAIN_WORDS
}

/** The longest downtime of the run, if any host was down. */
export function longestDowntime(report: RunReport): HostDowntime | undefined {
  return report.downtime
    .filter((d) => d.downtimeMs !== undefined)
    .sort((a, b) => (b.downtimeMs ?? 0) - (a.downtimeMs ?? 0))
    .at(0)
}

const KIND_TITLE: Readonly<Record<RunReport['run']['kind'], string>> = {
  upgrade: 'Upgrade',
  rollback: 'Rollback',
  backup: 'Backup',
  verify: 'Verification',
  rehearse: 'Rehearsal',
  restore: 'Restore',
  delete: 'Deletion',
  prune: 'Prune',
  'psk-rotate': 'PSK rotation',
}

/** The run's kind as a title: "Upgrade". */
export function kindTitle(report: RunReport): string {
  return KIND_TITLE[report.run.kind] ?? report.run.kind
}

/**
 * The outcome in one sentence: what, where, how it ended, where it stopped, what the rollback did,
 * the longest downtime. "Upgrade of lab to 2.0.0 failed in batch 1 on rec-3 and was rolled back
 * (database restored); longest downtime 14.2 s on rec-1."
 */
export function outcomeSentence(report: RunReport): string {
  const { run } = report
  const what = `${kindTitle(report)} of ${run.environment}${run.targetVersion ? ` to ${run.targetVersion}` : ''}`
  const failedEntry = report.timeline.find((e) => e.status === 'failed' && splitStepName(e.step).phase === Phase.run)
  const timeline = buildTimeline(report)
  const failedBatch = failedEntry?.host ? timeline.lanes.find((l) => l.host === failedEntry.host)?.batch : undefined
  const where = failedEntry
    ? ` ${failedBatch ? `in ${failedBatch === 'canary' ? 'the canary' : failedBatch} ` : ''}${failedEntry.host ? `on ${failedEntry.host} ` : ''}at ${failedEntry.step}`
    : ''
  const restore = report.outcomeNote ?? ''
  // A person stopped it at the pause after the canary (svcops runs abort): that is the sentence, not "failed at pause".
  const aborted = failedEntry !== undefined && STAGE_OF_STEP[splitStepName(failedEntry.step).id] === 'paused'
  const waiting = run.pausedAt
    ? `is paused after the canary since ${run.pausedAt.slice(11, 19)} and keeps its lock (go on: svcops runs promote ${run.id}; roll back: svcops runs abort ${run.id})`
    : undefined
  const how: Record<RunReport['run']['phase'], string> = {
    running: waiting ?? 'is still running',
    'rolling-back': `failed${where} and is rolling back`,
    interrupted: `was interrupted (resume it: svcops resume ${run.id}; roll it back: svcops resume ${run.id} --rollback)`,
    succeeded: 'succeeded',
    failed: aborted ? 'was aborted after the canary' : `failed${where}`,
    'rolled-back':
      run.kind === 'rollback' || !failedEntry
        ? `rolled back${restore}`
        : aborted
          ? `was aborted after the canary and rolled back${restore}`
          : `failed${where} and was rolled back${restore}`,
    'rollback-failed': `failed${where}, and its rollback failed too`,
    'no-op': `changed nothing: already on ${run.targetVersion}`,
  }
  const longest = longestDowntime(report)
  const down = longest ? `; longest downtime ${formatDuration(longest.downtimeMs ?? 0)} on ${longest.host}` : ''
  return sanitizeLine(`${what} ${how[run.phase]}${down}.`)
}

/** The run's duration in milliseconds, when it finished. */
export function runDurationMs(report: RunReport): number | undefined {
  return report.run.finishedAt ? Date.parse(report.run.finishedAt) - Date.parse(report.run.startedAt) : undefined
}
