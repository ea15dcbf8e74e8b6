/**
 * Structured events. Playbooks and ops emit events (`step`, `command`, `retry`, `check`, ...);
 * the terminal display, the JSON output, the journal and the report are all views of them.
 * Every event is redacted once, here, before any sink sees it; its text for people is one line with
 * every control character escaped (`formatEvent`: log lines and answers carry terminal escapes).
 */
import { redactDeep } from './redact.ts'
import { errorMessage } from './errors.ts'
import { sanitizeLine } from './sanitize.ts'

export type StepStatus = 'start' | 'ok' | 'failed' | 'skipped'

export type EventBody =
  | { kind: 'step'; step: string; status: StepStatus; host?: string; detail?: string; durationMs?: number }
  | { kind: 'command'; host: string; command: string; code: number | null; durationMs: number; stderrTail?: string }
  | { kind: 'retry'; what: string; attempt: number; delayMs: number; error: string }
  | { kind: 'check'; check: string; ok: boolean; host?: string; detail?: string }
  | { kind: 'http'; method: string; url: string; status: number | null; durationMs: number }
  | { kind: 'info'; message: string; host?: string }
  | { kind: 'warn'; message: string; host?: string }
  | { kind: 'error'; message: string; host?: string }
  | { kind: 'progress'; what: string; done: number; total?: number; unit?: string }

export type SvcopsEvent = EventBody & { time: string; runId?: string }
export type Sink = (event: SvcopsEvent) => void

/** An event stream with any number of sinks. */
export class EventLog {
  private readonly sinks = new Set<Sink>()
  runId: string | undefined

  /** Adds a sink; returns a function that removes it. */
  subscribe(sink: Sink): () => void {
    this.sinks.add(sink)
    return () => this.sinks.delete(sink)
  }

  emit(body: EventBody): SvcopsEvent {
    const event: SvcopsEvent = redactDeep<SvcopsEvent>({
      ...body,
      time: new Date().toISOString(),
      ...(this.runId ? { runId: this.runId } : {}),
    })
    for (const sink of this.sinks) sink(event)
    return event
  }

  info(message: string, host?: string): void {
    this.emit({ kind: 'info', message, ...(host ? { host } : {}) })
  }

  warn(message: string, host?: string): void {
    this.emit({ kind: 'warn', message, ...(host ? { host } : {}) })
  }

  /** Runs `fn` as a named step: emits start, then ok or failed with its duration. */
  async step<T>(step: string, fn: () => Promise<T>, host?: string): Promise<T> {
    const started = Date.now()
    const at = host ? { host } : {}
    this.emit({ kind: 'step', step, status: 'start', ...at })
    try {
      const result = await fn()
      this.emit({ kind: 'step', step, status: 'ok', durationMs: Date.now() - started, ...at })
      return result
    } catch (error) {
      const detail = errorMessage(error)
      this.emit({ kind: 'step', step, status: 'failed', durationMs: Date.now() - started, detail, ...at })
      throw error
    }
  }
}

/** The process-wide event log that ops and clients emit to. */
export const events = new EventLog()

/** Collects events in memory (for reports and tests). */
export function collect(log: EventLog = events): { events: SvcopsEvent[]; stop: () => void } {
  const list: SvcopsEvent[] = []
  const stop = log.subscribe((e) => list.push(e))
  return { events: list, stop }
}

const formatters: { [K in SvcopsEvent['kind']]: (e: Extract<SvcopsEvent, { kind: K }>) => string } = {
  step: (e) =>
    `${e.status === 'start' ? '→' : e.status === 'ok' ? '✓' : e.status === 'skipped' ? '·' : '✗'} ${e.step}${e.durationMs !== undefined ? ` (${formatDuration(e.durationMs)})` : ''}${e.detail ? `: ${e.detail}` : ''}`,
  command: (e) => `$ ${e.command}  [exit ${e.code ?? 'signal'}, ${formatDuration(e.durationMs)}]`,
  retry: (e) => `retry ${e.attempt} of ${e.what} in ${formatDuration(e.delayMs)}: ${e.error}`,
  check: (e) => `${e.ok ? 'ok  ' : 'FAIL'} ${e.check}${e.detail ? `: ${e.detail}` : ''}`,
  http: (e) => `${e.method} ${e.url} -> ${e.status ?? 'no answer'} (${formatDuration(e.durationMs)})`,
  info: (e) => e.message,
  warn: (e) => `warning: ${e.message}`,
  error: (e) => `error: ${e.message}`,
  progress: (e) => `${e.what}: ${e.done}${e.total !== undefined ? `/${e.total}` : ''}${e.unit ? ` ${e.unit}` : ''}`,
}

/**
 * One line of text for an event, prefixed with its host when it has one: control characters and
 * newlines in what it carries (a log line, an answer, an error) escaped visibly (`sanitizeLine`).
 */
export function formatEvent(event: SvcopsEvent): string {
  const format = formatters[event.kind] as (e: SvcopsEvent) => string
  const host = 'host' in event && event.host ? `[${event.host}] ` : ''
  return sanitizeLine(host + format(event))
}

/** "850 ms", "12.3 s", "2 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  return `${Math.floor(s / 60)} min ${s % 60} s`
}

/**
 * A sink for humans: plain lines on stderr. `verbose` adds command and http events, which are
 * otherwise only in the journal and the JSON output.
 */
export function consoleSink(options: { verbose?: boolean; stream?: NodeJS.WritableStream } = {}): Sink {
  const stream = options.stream ?? process.stderr
  return (event) => {
    if (!options.verbose && (event.kind === 'command' || event.kind === 'http' || event.kind === 'progress')) return
    stream.write(formatEvent(event) + '\n')
  }
}
