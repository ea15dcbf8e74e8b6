/**
 * What a confirmation prompt says before a run changes an environment: the run a rollback undoes
 * and the versions it goes back to, the versions an upgrade goes from and to, the hosts or
 * components, and the downtime to expect — the longest measured in the environment's last finished
 * run of that system, else "unknown".
 */
import { isBackupRun } from '../backup/held-by-runs.ts'
import { formatDuration } from '../core/events.ts'
import { buildReport } from '../reports/report.ts'
import { longestDowntime, wordsOf } from '../reports/timeline.ts'
import { Journal, listRuns } from '../runs/journal.ts'
import { isFinished, type RunRecord } from '../runs/run-record.ts'
import { systemIn, type Systems } from '../runs/system-description.ts'

/** The prompts of the upgrade and the rollback, reading earlier runs as their systems (of `systems`) describe them. */
export function promptsOver(systems: Systems) {
  return {
    upgradePrompt: (title: string, environment: string, system: string, targets: string[], to: string) =>
      upgradePrompt(systems, title, environment, system, targets, to),
    rollbackPrompt: (title: string, environment: string, system: string, runId?: string) =>
      rollbackPrompt(systems, title, environment, system, runId),
  }
}

/** The report of run `id` as its system describes it. */
function reportOf(systems: Systems, id: string) {
  const journal = Journal.open(id)
  return buildReport(journal, systemIn(systems, journal.run.system))
}

/** The environment's newest run of `system` matching `keep`, newest first as `runs list` shows them. */
function newestRun(environment: string, system: string, keep: (r: RunRecord) => boolean): RunRecord | undefined {
  return listRuns().find((r) => r.environment === environment && r.system === system && keep(r))
}

/** "expected downtime: about 12.3 s on the longest-down component (run ID)", or that it is unknown. */
export function expectedDowntimeText(systems: Systems, environment: string, system: string): string {
  const last = newestRun(environment, system, (r) => !isBackupRun(r) && r.phase !== 'running' && r.phase !== 'rolling-back')
  const report = last ? reportOf(systems, last.id) : undefined
  const longest = report ? longestDowntime(report) : undefined
  if (!report || !longest?.downtimeMs) return 'expected downtime: unknown (no earlier run measured it)'
  return `expected downtime: about ${formatDuration(longest.downtimeMs)} per ${wordsOf(report).target}, as measured in run ${report.run.id}`
}

/**
 * Where each target is now, as the environment's newest finished run of `system` left it: "rec-1,
 * rec-2 from 1.5.0 (as run ID left them)"; without such a run, the targets and that their versions are unknown.
 */
export function versionsFromText(systems: Systems, environment: string, system: string, targets: string[]): string {
  const names = targets.join(', ') || 'no targets listed'
  const last = newestRun(environment, system, (r) => !isBackupRun(r) && r.kind !== 'verify' && isFinished(r))
  if (!last) return `${names}, from versions no earlier run recorded`
  const report = reportOf(systems, last.id)
  const now = (t: string) => report.downtime.find((d) => d.host === t)?.endedOn ?? report.view.previousVersions[t]
  const byVersion = new Map<string, string[]>()
  for (const t of targets) byVersion.set(now(t) ?? 'unknown', [...(byVersion.get(now(t) ?? 'unknown') ?? []), t])
  const groups = [...byVersion].map(([v, ts]) => `${ts.join(', ')} from ${v}`)
  return `${groups.join('; ') || names} (as run ${last.id} left them)`
}

/** The prompt of an upgrade: "Upgrade the live production system of 'lab' to 7.0.0: a, b from 6.0.0 (as run ID left them); expected downtime: ...?" */
export function upgradePrompt(systems: Systems, title: string, environment: string, system: string, targets: string[], to: string): string {
  return `Upgrade ${title} of '${environment}' to ${to}: ${versionsFromText(systems, environment, system, targets)}; ${expectedDowntimeText(systems, environment, system)}?`
}

/** The prompt of a rollback: the run it undoes, its versions back, its targets, the downtime to expect. */
export function rollbackPrompt(systems: Systems, title: string, environment: string, system: string, runId?: string): string {
  const run = runId ? Journal.open(runId).run : newestRun(environment, system, (r) => r.kind === 'upgrade')
  if (!run) return `Roll back ${title} of '${environment}'?`
  const report = reportOf(systems, run.id)
  const back = Object.entries(report.view.previousVersions).map(([t, v]) => `${t} back to ${v}`)
  return `Roll back ${title} of '${environment}': run ${run.id} (to ${run.targetVersion}, ${run.phase}), ${back.join(', ') || `${wordsOf(report).targets} back to their versions before it`}; ${expectedDowntimeText(systems, environment, system)}?`
}
