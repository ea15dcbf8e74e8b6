/**
 * What a run tells people: a `start` notification when it starts (or is resumed), and after its
 * report is written the notification of how it ended — webhooks from the run's stack file
 * (`svcops:notify`). An observer of run events (src/runs/run-events.ts), registered at the edge
 * (src/commands/run-systems.ts): the engine never calls it by name. Nothing here can fail a run:
 * every problem is a warning, and network calls are bounded to a few seconds.
 */
import { existsSync } from 'node:fs'
import { errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { loadEnvironmentFile } from '../config/load.ts'
import type { NotifyConfig } from '../config/schema.ts'
import { readSecret } from '../config/secrets.ts'
import type { RunReport } from '../reports/report-types.ts'
import { longestDowntime, outcomeSentence } from '../reports/timeline.ts'
import type { Journal } from '../runs/journal.ts'
import type { RunEvent } from '../runs/run-events.ts'
import type { RunPhase, RunRecord } from '../runs/run-record.ts'
import { canaryScoreOf } from '../analysis/soak-report.ts'
import { notifyWebhooks, type NotifyEvent, type RunMessage, type Webhook } from './webhooks.ts'

const EVENT_OF_PHASE: Readonly<Record<RunPhase, NotifyEvent | undefined>> = {
  running: undefined,
  'rolling-back': undefined,
  interrupted: 'failure',
  succeeded: 'success',
  failed: 'failure',
  'rollback-failed': 'failure',
  'rolled-back': 'rollback',
  'no-op': 'success',
}

/** The `svcops:notify` of a run's stack file, or undefined (none, or its stack file is gone: warned). */
export function notifyConfigOf(run: Pick<RunRecord, 'id' | 'envFile' | 'environment'>): NotifyConfig | undefined {
  const { envFile, environment } = run
  if (!existsSync(envFile)) return undefined
  try {
    return loadEnvironmentFile(envFile, environment).notify
  } catch (error) {
    events.warn(`Notifications and metrics of run ${run.id} skipped: ${errorMessage(error)}`)
    return undefined
  }
}

function webhooksOf(config: NotifyConfig | undefined): Webhook[] {
  return (config?.webhooks ?? []).flatMap((h, i) => {
    try {
      return [{ url: readSecret(h.url, `notify.webhooks[${i}].url`), format: h.format, ...(h.events ? { events: h.events } : {}) }]
    } catch (error) {
      events.warn(`Webhook notify.webhooks[${i}] skipped: ${errorMessage(error)}`)
      return []
    }
  })
}

function reportLink(journal: Journal, config: NotifyConfig | undefined): string {
  return config?.reportBaseUrl ? `${config.reportBaseUrl.replace(/\/+$/, '')}/${journal.run.id}/report.html` : journal.file('report.html')
}

function messageOf(
  journal: Journal,
  event: NotifyEvent,
  summary: string,
  config: NotifyConfig | undefined,
  report?: RunReport,
): RunMessage {
  const { run } = journal
  const longest = report ? longestDowntime(report) : undefined
  return {
    event,
    runId: run.id,
    environment: run.environment,
    kind: run.kind,
    targetVersion: run.targetVersion,
    phase: run.phase,
    summary,
    downtime: (report?.downtime ?? [])
      .filter((d) => d.stoppedAt)
      .map((d) => ({ host: d.host, seconds: d.downtimeMs !== undefined ? d.downtimeMs / 1000 : null })),
    longestDowntimeSeconds: longest?.downtimeMs !== undefined ? longest.downtimeMs / 1000 : null,
    ...(canaryScoreOf(report) !== undefined ? { canaryScore: canaryScoreOf(report) } : {}),
    report: reportLink(journal, config),
  }
}

/** The webhooks' observer of runs: a message when a run starts, and when it ends or is refused. */
export async function notifyOfRun(event: RunEvent): Promise<void> {
  const { journal } = event
  const config = notifyConfigOf(journal.run)
  const hooks = webhooksOf(config)
  if (!hooks.length) return
  const { run } = journal
  const what = `${run.kind}${run.targetVersion ? ` to ${run.targetVersion}` : ''} of ${run.environment}`
  if (event.kind === 'run-started') {
    const summary = `${event.resumed ? 'Resumed' : 'Started'} ${what} on ${event.targets.length} host(s) by ${run.holder}.`
    await notifyWebhooks(hooks, messageOf(journal, 'start', summary, config))
    return
  }
  if (event.kind === 'run-refused') {
    const message = messageOf(journal, 'failure', `Refused ${what} before anything changed: ${event.cause}`, config)
    // A refused run keeps no folder: there is no report to link.
    await notifyWebhooks(hooks, { ...message, phase: 'refused', report: 'none (the run was refused before it began)' })
    return
  }
  const ended = EVENT_OF_PHASE[run.phase]
  if (ended) await notifyWebhooks(hooks, messageOf(journal, ended, outcomeSentence(event.report), config, event.report))
}
