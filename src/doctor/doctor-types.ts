/**
 * The doctor's vocabulary, the same for every system it diagnoses: a cause (a thing to check, one
 * part of a known problem), what checking it found on one target, and why a check was skipped. A
 * system's causes and the view they read live in its own folder (the recording service's:
 * src/recording/doctor/).
 */

/** `error`: the service cannot work this way; `warning`: it works, badly. Both need a person. */
export type Severity = 'error' | 'warning'

/** One cause found on one target: what, the evidence (file, line, value, measurement), and the remedy made concrete. */
export interface Finding {
  cause: string
  host: string
  severity: Severity
  /** One sentence: what is wrong. */
  summary: string
  /** Where it shows: `file:line`, a value, a measurement. */
  evidence: string[]
  /** What to do, in concrete terms. */
  remedy: string
}

/** What a cause's check says: findings, nothing (fine), or why it could not be checked. */
export type CheckOutcome = { findings: Omit<Finding, 'cause' | 'host'>[]; checked: string } | { skipped: string }

/** A cause checked on a view `V` of a target (a host as its service sees it, a Deployment's pods), filed under its problem `P`. */
export interface DoctorCause<V, P extends string = string> {
  id: string
  problem: P
  /** What is checked, for the plan and the report. */
  check: string
  run(view: V): Promise<CheckOutcome>
}
