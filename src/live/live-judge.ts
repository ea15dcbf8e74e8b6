/**
 * What a check of the live production system gives: its result, and the answer it judged. The
 * judgement itself is src/live/live-checks.ts, the same on a host (read over HTTP and the host's
 * transport, src/live/hosts/live-host-checks.ts) and on Kubernetes (through the Service and the pod
 * proxy, src/live/kubernetes/controller-service.ts): one judgement, two ways of reading.
 */

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

/** The failed checks in one sentence. */
export function failedChecks(results: CheckResult[]): string {
  return results
    .filter((r) => !r.ok)
    .map((r) => `${r.check}: ${r.detail ?? 'no'}`)
    .join('; ')
}
