/**
 * Rollout order of a fleet that shares one database: the canary first (it runs the migration
 * alone, while the others still serve), then batches of `--batch N` hosts upgraded concurrently.
 * `--max-fail N|P%` is how many host failures the rollout tolerates before it stops; the canary's
 * failure always stops it, because every other host would fail the same way.
 */
import { BadInputError, InterruptedError } from '../core/errors.ts'

/** Rollout batches: `[[canary], [b1...], [b2...]]`. The canary is the marked host, else the first. */
export function planBatches<T extends { name: string; canary?: boolean }>(hosts: T[], batchSize: number): T[][] {
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new BadInputError(`--batch: '${batchSize}' is not valid; expected a whole number of hosts, at least 1.`)
  const canary = hosts.find((h) => h.canary) ?? hosts[0]
  if (!canary) return []
  const rest = hosts.filter((h) => h !== canary)
  const batches: T[][] = [[canary]]
  for (let i = 0; i < rest.length; i += batchSize) batches.push(rest.slice(i, i + batchSize))
  return batches
}

/** How many failed hosts `--max-fail` tolerates among `total`: "0", "2", "25%". */
export function parseMaxFail(text: string, total: number): number {
  const m = /^(\d+)(%?)$/.exec(text.trim())
  if (!m) throw new BadInputError(`--max-fail: '${text}' is not valid; expected a number of hosts (2) or a percentage (25%).`)
  const n = Number(m[1])
  if (m[2] === '%') {
    if (n > 100) throw new BadInputError(`--max-fail: '${text}' is more than 100%.`)
    return Math.floor((total * n) / 100)
  }
  return n
}

/** A maintenance window as milliseconds: "90m", "2h", "1h30m", "45s". */
export function parseWindow(text: string): number {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text.trim())
  const ms = m ? (Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0)) * 1000 : 0
  if (!m || ms <= 0)
    throw new BadInputError(`--window: '${text}' is not a duration; expected hours, minutes or seconds like 2h, 90m, 1h30m or 45s.`)
  return ms
}

/**
 * Whether the next batch may start inside the maintenance window: the deadline has not passed, and
 * judged by the longest batch so far (none yet: the canary only needs the window open) it ends before it.
 */
export function batchFitsWindow(now: number, deadline: number, longestBatchMs: number): boolean {
  return now < deadline && now + longestBatchMs <= deadline
}

/** Runs `fn` on every item at once, at most `limit` at a time; results in input order, never rejects. */
export async function runConcurrently<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array<PromiseSettledResult<R>>(items.length)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++
      try {
        results[i] = { status: 'fulfilled', value: await fn(items[i] as T) }
      } catch (reason) {
        results[i] = { status: 'rejected', reason }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker))
  return results
}

/**
 * Runs `fn` on every item at once and, once all have ended, throws the first failure (in input
 * order): nothing is left half-way unseen, and the error a person reads is the first host's.
 */
export async function allOrFirstFailure<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = await runConcurrently(items, items.length, fn)
  // A signal that stopped one item stops the whole: it is thrown rather than another item's failure.
  const failed =
    results.find((r) => r.status === 'rejected' && r.reason instanceof InterruptedError) ?? results.find((r) => r.status === 'rejected')
  if (failed?.status === 'rejected') throw failed.reason
  return results.map((r) => (r as PromiseFulfilledResult<R>).value)
}
