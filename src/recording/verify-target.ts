/**
 * The seed's post-upgrade check, made strict: `GET /` answers; `GET /api/v1/content?limit=N`
 * lists; the site's declared checks pass (`svcops:recording.checks`); every recording of the snapshot is still there (a migration that silently drops rows is
 * caught here, not by a customer); a test recording marked with the run id is created and seen in
 * the list. The checks are events, so the report and the terminal show each one.
 */
import { OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { RecordingCheck } from '../config/checks.ts'
import { runRecordingChecks, type RecordingCheckReader } from './recording-checks.ts'
import { contentKey, identityKey, missingRecordings, TEST_CHANNEL, type ContentApi, type Recording } from './content-snapshot.ts'

/** One verification check and its outcome. */
export interface CheckResult {
  check: string
  ok: boolean
  detail?: string
}

/** What verifying one host found. */
export interface HostVerification {
  host: string
  ok: boolean
  checks: CheckResult[]
  /** Keys of snapshot recordings that are missing. */
  missing: string[]
  listed: number
  testRecording?: Recording
}

export interface VerifyOptions {
  /** Name of the host (for events and the test recording's title). */
  host: string
  limit: number
  /** Keys that must all be listed (the snapshot); omitted: no content check. */
  expectKeys?: string[]
  /** Run id the test recording is marked with; omitted: no test recording is created. */
  runId?: string
  /** The site's declared checks (`svcops:recording.checks`), asked after the content list, with their reader. */
  declared?: { reader: RecordingCheckReader; checks: RecordingCheck[] }
  /**
   * The slowest the list and the test write may answer, in ms (`recording.slowResponseMs`): a host
   * that answers but slower fails the check "response time", so the doctor looks for the seed's
   * causes of slow performance on it before the rollback. Omitted: not checked.
   */
  slowMs?: number
}

function record(host: string, checks: CheckResult[], check: string, ok: boolean, detail?: string): void {
  checks.push({ check, ok, ...(detail ? { detail } : {}) })
  events.emit({ kind: 'check', check, ok, host, ...(detail ? { detail } : {}) })
}

/** Runs the post-upgrade checks against one host's URL. Never throws for a failed check; see `ok`. */
export async function verifyHost(api: ContentApi, baseUrl: string, options: VerifyOptions): Promise<HostVerification> {
  const checks: CheckResult[] = []
  const result: HostVerification = { host: options.host, ok: false, checks, missing: [], listed: 0 }
  try {
    await api.health(baseUrl)
    record(options.host, checks, 'GET / (health)', true)
  } catch (error) {
    record(options.host, checks, 'GET / (health)', false, errorMessage(error))
    return result
  }
  let list: Recording[]
  const timings: Array<{ what: string; ms: number }> = []
  const timed = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    const started = performance.now()
    const value = await call()
    timings.push({ what, ms: Math.round(performance.now() - started) })
    return value
  }
  try {
    list = await timed(`GET /api/v1/content?limit=${options.limit}`, () => api.list(baseUrl, options.limit))
    result.listed = list.length
    record(options.host, checks, `GET /api/v1/content?limit=${options.limit}`, true, `${list.length} recordings`)
  } catch (error) {
    record(options.host, checks, `GET /api/v1/content?limit=${options.limit}`, false, errorMessage(error))
    return result
  }
  // The site's checks where the seed is silent, after the seed's own (docs/contract.md).
  for (const r of options.declared ? await runRecordingChecks(options.declared.reader, options.declared.checks) : [])
    record(options.host, checks, r.check, r.ok, r.detail)
  if (options.expectKeys) {
    result.missing = missingRecordings(options.expectKeys, list)
    record(
      options.host,
      checks,
      'every snapshot recording present',
      result.missing.length === 0,
      result.missing.length
        ? `${result.missing.length} of ${options.expectKeys.length} missing (${result.missing.slice(0, 5).join(', ')}${result.missing.length > 5 ? ', ...' : ''})`
        : `${options.expectKeys.length} present`,
    )
  }
  if (options.runId) {
    const now = Math.floor(Date.now() / 1000)
    const input = {
      channelName: TEST_CHANNEL,
      title: `svcops verify run ${options.runId} on ${options.host}`,
      startTime: now,
      stopTime: now + 1,
    }
    try {
      const created = await timed('POST /api/v1/content', () => api.create(baseUrl, input))
      result.testRecording = created
      const after = await api.list(baseUrl, options.limit)
      const seen = after.some((r) =>
        created.id !== undefined ? identityKey(r) === identityKey(created) : contentKey(r) === contentKey(input),
      )
      record(
        options.host,
        checks,
        'POST /api/v1/content (test recording) and seen in the list',
        seen,
        seen ? input.title : 'created but not listed',
      )
    } catch (error) {
      record(options.host, checks, 'POST /api/v1/content (test recording) and seen in the list', false, errorMessage(error))
    }
  }
  if (options.slowMs !== undefined && timings.length > 0) {
    const slowest = timings.reduce((a, b) => (b.ms > a.ms ? b : a))
    const slow = slowest.ms > options.slowMs
    record(
      options.host,
      checks,
      'response time',
      !slow,
      slow
        ? `${slowest.what} took ${slowest.ms} ms, over recording.slowResponseMs (${options.slowMs} ms): slow performance`
        : `slowest ${slowest.what} ${slowest.ms} ms (limit ${options.slowMs} ms)`,
    )
  }
  result.ok = checks.every((c) => c.ok)
  return result
}

/** Throws an OperationError naming the first failed check of a verification. */
export function assertVerified(v: HostVerification): void {
  const failed = v.checks.find((c) => !c.ok)
  if (failed) throw new OperationError(`Verification of ${v.host} failed: ${failed.check}${failed.detail ? ` — ${failed.detail}` : ''}.`)
  if (!v.ok) throw new OperationError(`Verification of ${v.host} did not complete.`)
}
