/**
 * A soak's durations, written as `--window` is: `10m`, `30s`, `1h30m`. Apart from the settings'
 * schema so that the CLI's option table (read at start-up) parses `--soak` without loading zod.
 */
import { BadInputError } from '../core/errors.ts'

const DURATION = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/

/** A duration as milliseconds: "10m", "30s", "1h30m"; undefined when the text is not one. */
export function durationMs(text: string): number | undefined {
  const m = DURATION.exec(text.trim())
  if (!m) return undefined
  const ms = (Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0)) * 1000
  return ms > 0 ? ms : undefined
}

/** `--soak <duration>` as milliseconds; a bad value is refused in one sentence. */
export function parseSoak(text: string): number {
  const ms = durationMs(text)
  if (ms === undefined)
    throw new BadInputError(`--soak: '${text}' is not a duration; expected hours, minutes or seconds like 10m, 90s or 1h30m.`)
  return ms
}
