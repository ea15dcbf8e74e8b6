/**
 * Progress of a run on a terminal: one live line per host (its current step and how long it has
 * taken) under one line for the run's global steps, redrawn in place. Warnings, errors and failed
 * checks are printed above the live block so they stay on screen. Off a terminal, plain lines.
 * What an event carries (host names, step details from logs) is escaped (`sanitizeLine`): only the
 * escapes written here reach the terminal.
 */
import { consoleSink, formatDuration, formatEvent, type Sink, type SvcopsEvent } from '../core/events.ts'
import { sanitizeLine } from '../core/sanitize.ts'

interface Line {
  label: string
  text: string
  ok: boolean | undefined
}

/** A sink that redraws per-host progress on a TTY stream, or writes plain lines otherwise. */
export function progressSink(stream: NodeJS.WriteStream = process.stderr, options: { verbose?: boolean } = {}): Sink {
  if (!stream.isTTY) return consoleSink({ ...options, stream })
  const lines = new Map<string, Line>([['', { label: 'run', text: 'starting', ok: undefined }]])
  let drawn = 0
  const color = (ok: boolean | undefined, s: string) => (ok === undefined ? s : ok ? `\x1b[32m${s}\x1b[0m` : `\x1b[31m${s}\x1b[0m`)
  const redraw = (above?: string) => {
    if (drawn) stream.write(`\x1b[${drawn}F\x1b[0J`)
    if (above) stream.write(above + '\n')
    const width = Math.max(...[...lines.values()].map((l) => l.label.length))
    for (const l of lines.values()) stream.write(`${l.label.padEnd(width)}  ${color(l.ok, l.text)}\n`)
    drawn = lines.size
  }
  return (event: SvcopsEvent) => {
    if (event.kind === 'step') {
      const key = event.host ?? ''
      const mark = event.status === 'start' ? '…' : event.status === 'ok' ? '✓' : event.status === 'skipped' ? '·' : '✗'
      const took = event.durationMs !== undefined ? ` (${formatDuration(event.durationMs)})` : ''
      lines.set(key, {
        label: sanitizeLine(event.host ?? 'run'),
        text: sanitizeLine(`${mark} ${event.step}${took}${event.status === 'failed' && event.detail ? `: ${event.detail}` : ''}`),
        ok: event.status === 'failed' ? false : event.status === 'start' ? undefined : true,
      })
      redraw()
      return
    }
    if (
      event.kind === 'warn' ||
      event.kind === 'error' ||
      event.kind === 'info' ||
      (event.kind === 'check' && !event.ok) ||
      (options.verbose && event.kind !== 'progress')
    )
      redraw(formatEvent(event))
  }
}
