/**
 * How a check of the live production system judges what it read — the controller's status, its
 * list of connected components, a component's metrics — the same on a host (read over HTTP,
 * src/live/hosts/live-host-checks.ts) and on Kubernetes (through the Service and the pod proxy,
 * src/live/kubernetes/live-cluster-handle.ts): one judgement, two ways of reading.
 */
import { apiPrefix, connectedMetricName, liveMetricNames } from '../releases/versions.ts'
import type { LiveComponentName, LiveProduct } from './layout.ts'

export interface CheckResult {
  check: string
  ok: boolean
  detail?: string
  /**
   * Set on a failed declared check whose interface itself is not there (a path answered 404, a
   * metric not exposed by an exposition that answered, a command not found): the stack's
   * assumption does not hold, whatever state the system is in.
   */
  absent?: boolean
}

/** An answer as the checks judge it: status and body, or why there was none. */
export type Answer = { status: number; body: unknown } | { error: string }

/**
 * The controller's `GET <prefix>/status` judged: 200 with its version and `ok`. The same judgement
 * for a host (the controller's URL) and for Kubernetes (its Service); `check` says which way.
 */
export function judgeControllerStatus(check: string, version: string, r: Answer): CheckResult {
  if ('error' in r) return { check, ok: false, detail: r.error }
  const body = r.body as { version?: unknown; status?: unknown } | undefined
  if (r.status !== 200) return { check, ok: false, detail: `GET ${apiPrefix(version)}/status answered ${r.status}` }
  if (body?.version !== version || body.status !== 'ok')
    return {
      check,
      ok: false,
      detail: `it reports version ${String(body?.version)}, status ${String(body?.status)}; expected ${version}, ok`,
    }
  return { check, ok: true, detail: `${version}, status ok` }
}

/**
 * The controller's `GET <prefix>/components` judged: `component` (a component's name, or an
 * instance's across hosts: `live-2/ingest`) listed, connected, at `version`.
 */
export function judgeConnection(component: string, version: string, r: Answer): CheckResult {
  const check = 'connected to the system controller'
  if ('error' in r) return { check, ok: false, detail: r.error }
  if (r.status !== 200 || !Array.isArray(r.body))
    return { check, ok: false, detail: `GET ${apiPrefix(version)}/components answered ${r.status}` }
  const entry = (r.body as Array<{ name?: unknown; version?: unknown; connected?: unknown }>).find((e) => e.name === component)
  if (!entry) return { check, ok: false, detail: `the controller does not list ${component}` }
  if (entry.connected !== true) return { check, ok: false, detail: `the controller lists ${component} as not connected` }
  if (entry.version !== version) return { check, ok: false, detail: `connected as ${String(entry.version)}; expected ${version}` }
  return { check, ok: true, detail: `as ${version}` }
}

/** The name of the metrics check of a component of `version`. */
export function metricsCheckName(product: LiveProduct, component: LiveComponentName, version: string): string {
  const wanted = liveMetricNames(version, component, product.prefix)
  return wanted.length ? `metrics of ${version} present (${wanted.join(', ')})` : 'metrics answer'
}

/**
 * A `/metrics` answer judged: every metric name of the component's release present, and (for a
 * component that connects) its connection metric at 1. `where` names the pod when there are several.
 */
export function judgeMetrics(product: LiveProduct, component: LiveComponentName, version: string, r: Answer, where = ''): CheckResult {
  const check = metricsCheckName(product, component, version)
  const at = where ? `${where}: ` : ''
  if ('error' in r) return { check, ok: false, detail: `${at}${r.error}` }
  if (r.status !== 200) return { check, ok: false, detail: `${at}GET /metrics answered ${r.status}` }
  const lines = (typeof r.body === 'string' ? r.body : '').split('\n')
  const has = (name: string): boolean => lines.some((l) => l === name || l.startsWith(`${name} `) || l.startsWith(`${name}{`))
  const missing = liveMetricNames(version, component, product.prefix).filter((n) => !has(n))
  if (missing.length) return { check, ok: false, detail: `${at}missing ${missing.join(', ')}` }
  const connected = `${connectedMetricName(product.prefix)} 1`
  if (component !== 'system-controller' && !lines.some((l) => l.trim() === connected))
    return { check, ok: false, detail: `${at}${connectedMetricName(product.prefix)} is not 1` }
  return { check, ok: true, ...(where ? { detail: where } : {}) }
}

/** The failed checks in one sentence. */
export function failedChecks(results: CheckResult[]): string {
  return results
    .filter((r) => !r.ok)
    .map((r) => `${r.check}: ${r.detail ?? 'no'}`)
    .join('; ')
}
