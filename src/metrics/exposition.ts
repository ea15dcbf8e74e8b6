/**
 * The runs of an environment as Prometheus text exposition, so a monitoring system sees what the
 * reports say: when each kind of run last ran, how it ended and how long it took, each host's
 * downtime in the last run, and — like Velero's and pgBackRest's — when the last successful backup
 * was made, how big it was, and when a restore of one was last tested. Built from the run folders
 * (the journal is the source), so a failed backup never erases the time of the last good one.
 *
 * Names follow Prometheus' conventions: `svcops_` prefix, base units (`_seconds`, `_bytes`),
 * `_timestamp_seconds` for Unix times, one series per outcome (1 for the last run's, 0 for others).
 */
import { canaryScoreOf } from '../analysis/soak-report.ts'
import { sanitizeLine } from '../core/sanitize.ts'
import { buildReport, type RunReport } from '../reports/report.ts'
import { systemIn, type Systems } from '../runs/system-description.ts'
import { Journal } from '../runs/journal.ts'
import type { RunPhase, RunRecord } from '../runs/run-record.ts'

const OUTCOMES: readonly RunPhase[] = [
  'running',
  'rolling-back',
  'interrupted',
  'succeeded',
  'failed',
  'rolled-back',
  'rollback-failed',
  'no-op',
]

// Older runs than this are not read for the backup facts: the newest ones always hold them.
const HISTORY = 200

interface Family {
  name: string
  help: string
  type: 'gauge'
  samples: Array<{ labels: Record<string, string>; value: number }>
}

/** A label value: control characters escaped visibly first (names are data), then the format's own escapes. */
function escapeLabel(value: string): string {
  return sanitizeLine(value).replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}

/** Text exposition format 0.0.4 of `families` (families without samples are left out). */
export function formatExposition(families: Family[]): string {
  const out: string[] = []
  for (const f of families) {
    if (!f.samples.length) continue
    out.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`)
    for (const s of f.samples) {
      const labels = Object.entries(s.labels)
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',')
      out.push(`${f.name}{${labels}} ${Number.isInteger(s.value) ? s.value : s.value.toFixed(3)}`)
    }
  }
  return out.join('\n') + '\n'
}

const seconds = (iso: string) => Date.parse(iso) / 1000

/** The last successful backup and restore test among `reports` (newest first). */
function backupFacts(reports: RunReport[]): { backupAt?: number; bytes?: number; restoreTestAt?: number } {
  const facts: { backupAt?: number; bytes?: number; restoreTestAt?: number } = {}
  for (const r of reports) {
    for (const e of [...r.timeline].reverse()) {
      if (e.status !== 'ok' || !e.data) continue
      if (facts.restoreTestAt === undefined && e.data.restoreTest === true) facts.restoreTestAt = seconds(e.time)
      // A backup step's entry names the backup it made; a backup run's counts once the run verified
      // and pruned it, an upgrade's backup is verified by its own step.
      const good = r.run.kind !== 'backup' || r.run.phase === 'succeeded'
      // A rehearsal that reused an earlier backup names it without making one.
      const made = e.data.restoreTest !== true && e.data.reused !== true
      if (facts.backupAt === undefined && good && typeof e.data.backupId === 'string' && made) {
        facts.backupAt = seconds(e.time)
        if (typeof e.data.bytes === 'number') facts.bytes = e.data.bytes
      }
    }
    if (facts.backupAt !== undefined && facts.restoreTestAt !== undefined) break
  }
  return facts
}

/** The metrics of `environment` from the run records in `base` (see `listRuns`), each read as its system (of `systems`) sees it. */
export function environmentMetrics(environment: string, runs: RunRecord[], base: string, systems: Systems): string {
  const mine = runs.filter((r) => r.environment === environment).slice(0, HISTORY)
  const reports = mine.map((r) => buildReport(Journal.open(r.id, base), systemIn(systems, r.system)))
  const kinds = [...new Set(mine.map((r) => r.kind))].sort()
  const last = new Map(kinds.map((k) => [k, reports.find((r) => r.run.kind === k) as RunReport]))
  const family = (name: string, help: string): Family => ({ name, help, type: 'gauge', samples: [] })
  const lastTime = family('svcops_run_last_timestamp_seconds', 'When the last run of this kind ended (or started, while running).')
  const outcome = family('svcops_run_last_outcome', 'Outcome of the last run of this kind: 1 for its outcome, 0 for the others.')
  const duration = family('svcops_run_last_duration_seconds', 'How long the last finished run of this kind took.')
  const success = family('svcops_run_last_success_timestamp_seconds', 'When the last successful run of this kind ended.')
  const downtime = family('svcops_host_last_downtime_seconds', 'Downtime of each host in the last run of this kind (stop to verified).')
  const canary = family(
    'svcops_canary_analysis_last_score',
    'Score (0-100) of the canary analysis over the soak of the last run of this kind.',
  )
  for (const [kind, r] of last) {
    const labels = { environment, kind }
    lastTime.samples.push({ labels, value: seconds(r.run.finishedAt ?? r.run.startedAt) })
    for (const o of OUTCOMES) outcome.samples.push({ labels: { ...labels, outcome: o }, value: r.run.phase === o ? 1 : 0 })
    if (r.run.finishedAt) duration.samples.push({ labels, value: seconds(r.run.finishedAt) - seconds(r.run.startedAt) })
    const ok = reports.find((x) => x.run.kind === kind && x.run.phase === 'succeeded' && x.run.finishedAt)
    if (ok?.run.finishedAt) success.samples.push({ labels, value: seconds(ok.run.finishedAt) })
    for (const d of r.downtime)
      if (d.downtimeMs !== undefined) downtime.samples.push({ labels: { ...labels, host: d.host }, value: d.downtimeMs / 1000 })
    const score = canaryScoreOf(r)
    if (score !== undefined) canary.samples.push({ labels, value: score })
  }
  const facts = backupFacts(reports)
  const backupAt = family('svcops_backup_last_success_timestamp_seconds', 'When the last successful, verified backup was made.')
  const backupSize = family('svcops_backup_last_success_size_bytes', 'Size of the last successful backup as stored (encrypted).')
  const restore = family('svcops_restore_test_last_success_timestamp_seconds', 'When a test restore of a backup last passed.')
  if (facts.backupAt !== undefined) backupAt.samples.push({ labels: { environment }, value: facts.backupAt })
  if (facts.bytes !== undefined) backupSize.samples.push({ labels: { environment }, value: facts.bytes })
  if (facts.restoreTestAt !== undefined) restore.samples.push({ labels: { environment }, value: facts.restoreTestAt })
  return formatExposition([lastTime, outcome, duration, success, downtime, canary, backupAt, backupSize, restore])
}
