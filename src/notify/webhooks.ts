/**
 * Webhook notifications of a run (the Ansible callback plugins' job): on start, success, failure
 * and rollback, one message per webhook with the outcome in one sentence, the downtime and where
 * the report is. Two body shapes: svcops' own JSON, and `{ text }` that Slack, Microsoft Teams and
 * Mattermost incoming webhooks accept. Delivery is bounded: a few attempts within a few seconds in
 * all; a message that cannot be delivered is logged and never fails the run. What a message
 * quotes (environment, hosts, the outcome) is data: every string one line with its control
 * characters escaped, and in `{ text }` no mention syntax (`<!channel>`, `<@U…>`, `@here`) left live.
 */
import { errorMessage } from '../core/errors.ts'
import { sendRequest } from '../core/http.ts'
import { events, formatDuration } from '../core/events.ts'
import { redact, redactDeep } from '../core/redact.ts'
import { neutralizeMentions, sanitizeDeep, sanitizeLine, stringifyForTerminal } from '../core/sanitize.ts'

export type NotifyEvent = 'start' | 'success' | 'failure' | 'rollback'

export interface Webhook {
  /** The URL, read from its secret reference (registered with the redaction layer). */
  url: string
  format: 'json' | 'slack'
  events?: NotifyEvent[]
}

/** What every message says, whatever its shape. */
export interface RunMessage {
  event: NotifyEvent
  runId: string
  environment: string
  kind: string
  targetVersion: string
  phase: string
  /** The outcome in one sentence (or "started" for `start`). */
  summary: string
  /** Downtime per host in seconds (hosts that went down). */
  downtime: Array<{ host: string; seconds: number | null }>
  longestDowntimeSeconds: number | null
  /** The score (0-100) of the canary's analysis over its soak, when the run soaked its canary. */
  canaryScore?: number
  /** A link to report.html, or its path on the machine that ran it. */
  report: string
}

/** Total time all deliveries of one event may take. */
export const DELIVERY_BUDGET_MS = 4_000
const ATTEMPTS = 3

/** The body of `message` in `format` (redacted by the caller, sanitized here). */
export function webhookBody(original: RunMessage, format: Webhook['format']): unknown {
  const message = sanitizeDeep(original)
  if (format === 'json') return message
  const down = message.longestDowntimeSeconds !== null ? ` Longest downtime ${formatDuration(message.longestDowntimeSeconds * 1000)}.` : ''
  const icon = { start: ':arrow_forward:', success: ':white_check_mark:', failure: ':x:', rollback: ':leftwards_arrow_with_hook:' }[
    message.event
  ]
  return {
    text: `${icon} ${neutralizeMentions(sanitizeLine(`svcops ${message.kind} ${message.runId} (${message.environment}): ${message.summary}${down} Report: ${message.report}`))}`,
  }
}

async function deliver(hook: Webhook, body: string, deadline: number): Promise<void> {
  let lastError: unknown
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const left = deadline - Date.now()
    if (left <= 0) break
    try {
      // The URL carries the token: a redirect elsewhere is refused, never followed (src/core/http.ts).
      const answer = await sendRequest({
        peer: 'webhook',
        method: 'POST',
        url: hook.url,
        text: { content: body, type: 'application/json' },
        timeoutMs: left,
      })
      if (answer.status >= 200 && answer.status < 300) return
      lastError = new Error(`answered ${answer.status}`)
      // A 4xx other than 429 will not change on a retry.
      if (answer.status < 500 && answer.status !== 429) break
    } catch (error) {
      lastError = error
    }
    await new Promise((r) => setTimeout(r, Math.min(250 * attempt, Math.max(0, deadline - Date.now()))))
  }
  throw lastError instanceof Error ? lastError : new Error(String(lastError))
}

/**
 * Sends `message` to every webhook that wants its event, all at once, within DELIVERY_BUDGET_MS.
 * Never throws: an undelivered message is a warning naming the webhook's host (not its URL).
 */
export async function notifyWebhooks(hooks: Webhook[], message: RunMessage): Promise<void> {
  const deadline = Date.now() + DELIVERY_BUDGET_MS
  const wanted = hooks.filter((h) => !h.events || h.events.includes(message.event))
  await Promise.all(
    wanted.map(async (hook) => {
      const body = redact(stringifyForTerminal(webhookBody(redactDeep(message), hook.format)))
      try {
        await deliver(hook, body, deadline)
      } catch (error) {
        let where = 'a webhook'
        try {
          where = `the webhook at ${new URL(hook.url).host}`
        } catch {
          // An unparsable URL is named by nothing of it.
        }
        events.warn(`Could not notify ${redact(where)} of ${message.event} of run ${message.runId}: ${redact(errorMessage(error))}.`)
      }
    }),
  )
}
