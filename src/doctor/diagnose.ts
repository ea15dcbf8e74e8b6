/**
 * Runs causes on hosts: each host's view is opened once, every cause checked on it, and what each
 * check found, passed or skipped is kept, so the report lists every item with its check.
 */
import { errorMessage } from '../core/errors.ts'
import type { RecordingHost } from '../recording/recording-platform.ts'
import { runConcurrently } from '../runs/rollout.ts'
import { CAUSES, seedOf } from './causes.ts'
import { openHostView, type DoctorSettings } from './host-view.ts'
import type { Cause, CheckOutcome, Finding, ProblemId } from './doctor-types.ts'

/** One cause on one host: what was checked, and what it found or why it was skipped. */
export interface CheckResult {
  cause: string
  problem: string
  seed: string
  check: string
  host: string
  status: 'ok' | 'found' | 'skipped'
  detail: string
}

export interface Diagnosis {
  findings: Finding[]
  checks: CheckResult[]
}

/** Checks `causes` on one host as its service sees it. */
export async function diagnoseHost(host: RecordingHost, settings: DoctorSettings, causes: readonly Cause[] = CAUSES): Promise<Diagnosis> {
  const view = await openHostView(host, settings)
  try {
    return await runCauses(view, host.name, causes)
  } finally {
    await view.close()
  }
}

/**
 * Runs each of `causes` on `view` (a host's, or a Deployment's pods'), named `target` in the
 * findings: what each found, passed, or why it was skipped (a check that throws is skipped, saying why).
 */
export async function runCauses<V>(
  view: V,
  target: string,
  causes: readonly { id: string; problem: ProblemId; check: string; run(view: V): Promise<CheckOutcome> }[],
): Promise<Diagnosis> {
  const out: Diagnosis = { findings: [], checks: [] }
  for (const cause of causes) {
    const base = { cause: cause.id, problem: cause.problem, seed: seedOf(cause.problem), check: cause.check, host: target }
    let outcome: CheckOutcome
    try {
      outcome = await cause.run(view)
    } catch (error) {
      outcome = { skipped: `the check failed: ${errorMessage(error)}` }
    }
    if ('skipped' in outcome) {
      out.checks.push({ ...base, status: 'skipped', detail: outcome.skipped })
      continue
    }
    out.checks.push({ ...base, status: outcome.findings.length ? 'found' : 'ok', detail: outcome.checked })
    out.findings.push(...outcome.findings.map((f) => ({ cause: cause.id, host: target, ...f })))
  }
  return out
}

/**
 * Hosts checked at once. Each check is a few round trips and a database connection (so not all of a
 * large fleet at once: the server's max_connections); one host after the other, a 50-host upgrade
 * waited ~1 s per host in its preflight before the first stop.
 */
const HOSTS_AT_ONCE = 10

/** Checks every host, `HOSTS_AT_ONCE` at a time; findings and checks in the hosts' order, so the report reads in order. */
export async function diagnoseHosts(
  hosts: RecordingHost[],
  settings: DoctorSettings,
  causes: readonly Cause[] = CAUSES,
): Promise<Diagnosis> {
  const all: Diagnosis = { findings: [], checks: [] }
  for (const result of await runConcurrently(hosts, HOSTS_AT_ONCE, (h) => diagnoseHost(h, settings, causes))) {
    if (result.status === 'rejected') throw result.reason
    all.findings.push(...result.value.findings)
    all.checks.push(...result.value.checks)
  }
  return all
}

/** The findings as lines for a person. */
export function formatDiagnosis(d: Diagnosis): string {
  if (!d.findings.length) return `No problem found (${d.checks.filter((c) => c.status === 'ok').length} checks passed).`
  return d.findings
    .map((f) =>
      [
        `${f.severity.toUpperCase()} ${f.host} ${f.cause}: ${f.summary}`,
        ...f.evidence.map((e) => `    evidence: ${e}`),
        `    fix: ${f.remedy}`,
      ].join('\n'),
    )
    .join('\n')
}
