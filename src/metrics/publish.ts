/**
 * Where the exposition goes: a file for node_exporter's textfile collector (written whole, then
 * renamed, so the collector never reads half a file), and a Pushgateway for runs with no
 * node_exporter beside them (a CronJob). A push is bounded in time: metrics never hold up a run.
 */
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { writeFileAtomic } from '../core/atomic-write.ts'
import { OperationError } from '../core/errors.ts'
import { sendRequest } from '../core/http.ts'

/** How long a push may take before it is given up. */
export const PUSH_TIMEOUT_MS = 5_000

/** The textfile collector's file of `environment` in `dir`. */
export function textfilePath(dir: string, environment: string): string {
  return join(dir, `svcops_${environment.replace(/[^A-Za-z0-9_-]/g, '_')}.prom`)
}

/**
 * Writes `text` to `file` atomically, never through a link planted in a directory others may write
 * (`writeFileAtomic`); the collector reads only `*.prom`, so the hidden temporary file is skipped.
 */
export function writeTextfile(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true })
  writeFileAtomic(file, text, { mode: 0o644 })
}

/**
 * Replaces the group `job=svcops, environment=<environment>` on the Pushgateway at `url` with
 * `text` (PUT: series of an earlier push that are gone now are removed with it).
 */
export async function pushMetrics(url: string, environment: string, text: string): Promise<void> {
  const target = `${url.replace(/\/+$/, '')}/metrics/job/svcops/environment/${encodeURIComponent(environment)}`
  const answer = await sendRequest({
    peer: 'pushgateway',
    method: 'PUT',
    url: target,
    text: { content: text, type: 'text/plain; version=0.0.4' },
    timeoutMs: PUSH_TIMEOUT_MS,
  })
  if (answer.status < 200 || answer.status >= 300)
    throw new OperationError(`The Pushgateway at ${url} answered ${answer.status}: ${shown(answer.body)}`)
}

/** The start of an answer's body, for an error. */
function shown(body: unknown): string {
  return (typeof body === 'string' ? body : JSON.stringify(body ?? '')).slice(0, 300).trim()
}
