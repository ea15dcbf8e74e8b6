/**
 * What every playbook run tells the outside world, called by the engine (src/runs/playbook.ts):
 * a `start` notification when the run starts, and after its report is written the notification of
 * how it ended plus the environment's metrics (textfile and Pushgateway). Settings come from the
 * run's stack file (`svcops:notify`) and `--metrics-file`. Nothing here can fail a run: every
 * problem is a warning, and network calls are bounded to a few seconds.
 */
import { existsSync } from 'node:fs'
import { dirname } from 'node:path'
import { errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { loadEnvironmentFile } from '../config/load.ts'
import type { NotifyConfig } from '../config/schema.ts'
import { readSecret } from '../config/secrets.ts'
import { environmentMetrics } from '../metrics/exposition.ts'
import { pushMetrics, textfilePath, writeTextfile } from '../metrics/publish.ts'
import { listRuns, type Journal, type RunPhase } from '../runs/journal.ts'
import type { RunReport } from '../reports/report.ts'
import { longestDowntime, outcomeSentence } from '../reports/timeline.ts'
import { notifyWebhooks, type NotifyEvent, type RunMessage, type Webhook } from './webhooks.ts'

/** Options of the command line that started the run (`--metrics-file`). */
export interface RunOutputOptions {
  metricsFile?: string
}

let commandLine: RunOutputOptions = {}

/** Set by the CLI before a run: where `--metrics-file` writes. */
export function setRunOutputOptions(options: RunOutputOptions): void {
  commandLine = options
}

const EVENT_OF_PHASE: Readonly<Record<RunPhase, NotifyEvent | undefined>> = {
  running: undefined,
  'rolling-back': undefined,
  succeeded: 'success',
  failed: 'failure',
  'rollback-failed': 'failure',
  'rolled-back': 'rollback',
}

/** The run's `svcops:notify`, or undefined (none, or its stack file is gone: warned). */
function notifyConfigOf(journal: Journal): NotifyConfig | undefined {
  const { envFile, environment } = journal.run
  if (!existsSync(envFile)) return undefined
  try {
    return loadEnvironmentFile(envFile, environment).notify
  } catch (error) {
    events.warn(`Notifications and metrics of run ${journal.run.id} skipped: ${errorMessage(error)}`)
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
    report: reportLink(journal, config),
  }
}

/** Tells the webhooks that run `journal` started (or was resumed). */
export async function announceStart(journal: Journal, options: { resumed?: boolean } = {}): Promise<void> {
  const config = notifyConfigOf(journal)
  const hooks = webhooksOf(config)
  if (!hooks.length) return
  const { run } = journal
  const what = `${run.kind}${run.targetVersion ? ` to ${run.targetVersion}` : ''} of ${run.environment}`
  const summary = `${options.resumed ? 'Resumed' : 'Started'} ${what} on ${run.hosts.length} host(s) by ${run.holder}.`
  await notifyWebhooks(hooks, messageOf(journal, 'start', summary, config))
}

/** After the report: the notification of how the run ended, and the environment's metrics. */
export async function announceEnd(journal: Journal, report: RunReport): Promise<void> {
  const config = notifyConfigOf(journal)
  const event = EVENT_OF_PHASE[journal.run.phase]
  const hooks = webhooksOf(config)
  const notifying =
    event && hooks.length ? notifyWebhooks(hooks, messageOf(journal, event, outcomeSentence(report), config, report)) : undefined
  await Promise.all([notifying, publishMetrics(journal, config)])
}

async function publishMetrics(journal: Journal, config: NotifyConfig | undefined): Promise<void> {
  const file =
    commandLine.metricsFile ??
    (config?.metrics?.textfileDir ? textfilePath(config.metrics.textfileDir, journal.run.environment) : undefined)
  const gateway = config?.metrics?.pushgateway
  if (!file && !gateway) return
  try {
    const base = dirname(journal.dir)
    const text = environmentMetrics(journal.run.environment, listRuns(base), base)
    if (file) writeTextfile(file, text)
    if (gateway) await pushMetrics(gateway, journal.run.environment, text)
  } catch (error) {
    events.warn(`Metrics of run ${journal.run.id} not published: ${errorMessage(error)}`)
  }
}
