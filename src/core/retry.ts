/**
 * Bounded retries with exponential backoff and full jitter (the delay is random in
 * [0, min(max, base * 2^attempt)]), so a fleet of clients does not retry in lock-step.
 */
import { events } from './events.ts'
import { errorMessage } from './errors.ts'

export interface RetryOptions {
  /** Total attempts, including the first (default 4). */
  attempts?: number
  baseDelayMs?: number
  maxDelayMs?: number
  /** Whether an error is worth another attempt (default: every error). */
  shouldRetry?: (error: unknown) => boolean
  /** Injected for tests that must not sleep. */
  sleep?: (ms: number) => Promise<void>
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Delay before retry number `attempt` (1-based): random in [0, min(max, base * 2^(attempt-1))]. */
export function backoffDelay(attempt: number, baseDelayMs: number, maxDelayMs: number, random = Math.random): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1))
  return Math.round(random() * ceiling)
}

/** Runs `fn` until it succeeds, the error is not retryable, or the attempts are used up (then the last error is thrown). */
export async function retry<T>(what: string, fn: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 4
  const base = options.baseDelayMs ?? 200
  const max = options.maxDelayMs ?? 5_000
  const sleep = options.sleep ?? defaultSleep
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt)
    } catch (error) {
      const retryable = options.shouldRetry ? options.shouldRetry(error) : true
      if (!retryable || attempt >= attempts) throw error
      const delayMs = backoffDelay(attempt, base, max)
      events.emit({ kind: 'retry', what, attempt, delayMs, error: errorMessage(error) })
      await sleep(delayMs)
    }
  }
}
