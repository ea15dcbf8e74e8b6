/**
 * The recording service's declared checks (`svcops:recording.checks`, src/config/checks.ts): what a
 * site says about its service where the seed is silent, asked after the seed's own checks (`GET /`,
 * the content list) — a request to the service with a status and what the answer contains, a
 * metric of its Prometheus text with its value, a command on its host. Each caller gives the way of
 * reading (`RecordingCheckReader`): the service's URL over HTTP, the host's transport where there is
 * one; the judgement is here, once.
 */
import type { RecordingCheck } from '../config/checks.ts'
import { errorMessage } from '../core/errors.ts'
import { containsValue, expositionLines, metricLine } from '../core/expectations.ts'
import { sendRequest } from '../core/http.ts'
import { runCommand, type Transport } from '../core/runner.ts'
import type { Environment } from '../config/schema.ts'
import type { RecordingPlatform, RecordingTarget } from './recording-platform.ts'

/** One check's outcome; `absent`: its interface is not there (a 404, a metric not exposed, a command not found). */
export interface RecordingCheckResult {
  check: string
  ok: boolean
  detail?: string
  absent?: boolean
}

/** How the checks of one target are read. */
export interface RecordingCheckReader {
  /** The target's name, for `{host}`. */
  name: string
  /** The service's base URL. */
  url: string
  /** The target's host, where commands run; none on Kubernetes, where the loader refuses command checks (one reaching here fails, saying so). */
  transport?: Transport
  /** A lab host's sandbox root for `{root}` ('' on a real host). */
  root: string
  /** The product prefix for `{product}`. */
  product: string
}

/** The longest output of a command check kept for its detail. */
const COMMAND_OUTPUT_CHARS = 200

function fillText(text: string, reader: RecordingCheckReader): string {
  const values: Record<string, string> = { product: reader.product, host: reader.name, root: reader.root }
  return text.replace(/\{([a-z]+)\}/g, (whole, key: string) => values[key] ?? whole)
}

function fillValue(value: unknown, reader: RecordingCheckReader): unknown {
  if (typeof value === 'string') return fillText(value, reader)
  if (Array.isArray(value)) return value.map((v) => fillValue(v, reader))
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillValue(v, reader)]))
  return value
}

async function getAnswer(url: string): Promise<{ status: number; body: unknown } | { error: string }> {
  try {
    const r = await sendRequest({ peer: 'recording-health', method: 'GET', url })
    return { status: r.status, body: r.body }
  } catch (error) {
    return { error: errorMessage(error) }
  }
}

/** One declared check of one target. Never throws: a failure is the result. */
export async function runRecordingCheck(reader: RecordingCheckReader, check: RecordingCheck): Promise<RecordingCheckResult> {
  const name = check.name
  const base = reader.url.replace(/\/+$/, '')
  if (check.web || check.metric) {
    const path = check.web ? fillText(check.web.path, reader) : (check.metric?.path ?? '/metrics')
    const r = await getAnswer(`${base}${path}`)
    if ('error' in r) return { check: name, ok: false, detail: r.error }
    const wanted = check.web?.status ?? 200
    if (r.status !== wanted)
      return {
        check: name,
        ok: false,
        detail: `GET ${path} answered ${r.status}; expected ${wanted}`,
        ...(r.status === 404 ? { absent: true } : {}),
      }
    if (check.web) {
      const contains = check.web.contains === undefined ? undefined : fillValue(check.web.contains, reader)
      if (contains !== undefined && !containsValue(r.body, contains))
        return { check: name, ok: false, detail: `GET ${path}: the answer does not contain ${JSON.stringify(contains)}` }
      return { check: name, ok: true }
    }
    const metric = fillText(check.metric?.name ?? '', reader)
    const line = metricLine(expositionLines(r.body), metric)
    if (!line) return { check: name, ok: false, detail: `${metric} is not exposed`, absent: true }
    const value = line.split(/\s+/)[1]
    return Number(value) === check.metric?.equals
      ? { check: name, ok: true }
      : { check: name, ok: false, detail: `${metric} is ${String(value)}; expected ${String(check.metric?.equals)}` }
  }
  const argv = (check.command?.argv ?? []).map((a) => fillText(a, reader))
  if (!reader.transport) return { check: name, ok: false, detail: 'a command check runs on a host; this target has none' }
  try {
    const r = await runCommand(reader.transport, argv, { check: false })
    const output = (r.stderr.trim() || r.stdout.trim()).slice(0, COMMAND_OUTPUT_CHARS)
    return r.code === 0
      ? { check: name, ok: true }
      : {
          check: name,
          ok: false,
          detail: `${argv.join(' ')} exited ${String(r.code)}${output ? `: ${output}` : ''}`,
          ...(r.code === 127 ? { absent: true } : {}),
        }
  } catch (error) {
    return { check: name, ok: false, detail: errorMessage(error) }
  }
}

/** Every declared check of one target, in the stack's order. */
export async function runRecordingChecks(reader: RecordingCheckReader, checks: RecordingCheck[]): Promise<RecordingCheckResult[]> {
  const results: RecordingCheckResult[] = []
  for (const c of checks) results.push(await runRecordingCheck(reader, c))
  return results
}

/** What the declared checks ask, for the dry run. */
export function describeRecordingChecks(
  reader: Pick<RecordingCheckReader, 'name' | 'url' | 'root' | 'product'>,
  checks: RecordingCheck[],
): string[] {
  const r = { ...reader } as RecordingCheckReader
  return checks.map((c) =>
    c.web
      ? `${c.name}: GET ${reader.url}${fillText(c.web.path, r)} answers ${c.web.status}${c.web.contains !== undefined ? ` containing ${JSON.stringify(fillValue(c.web.contains, r))}` : ''}`
      : c.metric
        ? `${c.name}: GET ${reader.url}${c.metric.path}: ${fillText(c.metric.name, r)} is ${c.metric.equals}`
        : `${c.name}: on ${reader.name}: ${(c.command?.argv ?? []).map((a) => fillText(a, r)).join(' ')} exits 0`,
  )
}

/** The reader of a target's checks: its URL, and its host's transport where the platform has hosts. */
export function recordingCheckReader(
  env: Environment,
  platform: Pick<RecordingPlatform, 'hostOf'>,
  target: RecordingTarget,
): RecordingCheckReader {
  const host = platform.hostOf?.(target)
  return {
    name: target.name,
    url: target.url,
    ...(host ? { transport: host.transport } : {}),
    root: host?.config.root ?? '',
    product: env.product.prefix,
  }
}
