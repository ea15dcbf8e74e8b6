/**
 * The diagnose loop, the same for every system: each cause checked on a target's view, and what each
 * check found, passed or skipped kept, so the report lists every item with its check.
 */
import { errorMessage } from '../core/errors.ts'
import type { CheckOutcome, DoctorCause, Finding } from './doctor-types.ts'

/** One cause on one target: what was checked, and what it found or why it was skipped. */
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

/**
 * Runs each of `causes` on `view` (a host's, or a Deployment's pods'), named `target` in the
 * findings: what each found, passed, or why it was skipped (a check that throws is skipped, saying
 * why). `seedOf` gives the words of a cause's problem where the system's rules state it.
 */
export async function runCauses<V, P extends string>(
  view: V,
  target: string,
  causes: readonly DoctorCause<V, P>[],
  seedOf: (problem: P) => string,
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

/** Adds `more` to `all`, in order. */
export function addDiagnosis(all: Diagnosis, more: Diagnosis): void {
  all.findings.push(...more.findings)
  all.checks.push(...more.checks)
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
