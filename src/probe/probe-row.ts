/**
 * What `svcops probe` reports: one row per interface tried, and the report of an environment. Kept
 * apart so that each platform's probe (contract-probe.ts for hosts, cluster-probe.ts for
 * Kubernetes) writes the same rows.
 */

/** One interface tried: whether it holds (undefined: not tried), what showed it, and what to set when it does not. */
export interface ProbeRow {
  part: 'manager' | 'recording' | 'database' | 'live' | 'cluster'
  /** Where: a host, a unit, or the part itself. */
  where: string
  interface: string
  source: 'seed' | 'assumed'
  holds: boolean | undefined
  evidence: string
  /** The stack key that changes the assumption (or gives what is missing). */
  key?: string
}

export interface ProbeReport {
  environment: string
  rows: ProbeRow[]
  /** True when nothing tried failed: every interface a planned upgrade uses answered. */
  ok: boolean
}

/** A row, typed where it is written. */
export const row = (r: ProbeRow): ProbeRow => r
