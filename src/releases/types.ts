/**
 * Types of the release catalog. A change listed in the seed's Versioning section is one
 * `LiveChange`: the facts (old and new form, what must be done) plus, where a version helper
 * depends on it, a typed `effect` — the helpers in versions.ts read effects, never literals.
 */

/** Major releases of the live production system that carry breaking changes. */
export const LIVE_MAJORS = [2, 3, 4, 5, 6, 7] as const
export type LiveMajor = (typeof LIVE_MAJORS)[number]

/** What changed, as the planners and migrators need to tell it apart. */
export type ChangeKind =
  | 'api-prefix'
  | 'api-path'
  | 'api-field'
  | 'api-required-field'
  | 'api-response'
  | 'removed-field'
  | 'removed-endpoint'
  | 'env-var'
  | 'secret'
  | 'settings-file'
  | 'startup'
  | 'metric'
  | 'sdk-symbol'
  | 'sdk-signature'
  | 'sdk-semantics'

/** Who has to act on a change. */
export type Actor = 'svcops' | 'operator' | 'api-client' | 'sdk'

/** The svcops command that handles a change by itself (or checks it), if any. */
export type Migrator = 'migrate-requests' | 'migrate-metrics' | 'migrate-env' | 'psk' | 'scan-sdk' | 'deploy'

/** The components of the live production system, in dependency order (the system controller first). */
export const LIVE_COMPONENTS = ['system-controller', 'ingest', 'pipeline', 'control-panel'] as const
export type LiveComponentName = (typeof LIVE_COMPONENTS)[number]

/**
 * Facts other features derive from. Names are templates: `{prefix}` is the product prefix
 * (`svc`), `{PREFIX}` the same upper-cased, `{product_dir}` the product's folder. A metric's
 * effect names the component that exposes it (the seed's table row: the rendering engine's queue,
 * the ingest's frame counters).
 */
export type Effect =
  | { type: 'api-prefix'; from: string; to: string }
  | { type: 'psk-required'; variable: string }
  | { type: 'psk-settings-file'; file: string }
  | { type: 'psk-entropy-enforced' }
  | { type: 'settings-search-path'; directories: string[]; flag: string }
  | { type: 'env-rename'; from: string; to: string; singleValue: boolean }
  | { type: 'metric-rename'; component: LiveComponentName; from: string; to: string }
  | { type: 'metric-split'; component: LiveComponentName; from: string; into: string[] }
  | { type: 'custom-ca-cert'; symbols: string[]; replacement: string }
  | { type: 'sdk-symbol'; symbols: string[]; replacement: string; except?: string[] }

/** One change of one major release, as listed in the seed. */
export interface LiveChange {
  /** Stable id `<release>/<slug>`, used in plans, migrator output and tests. */
  id: string
  /** The release that introduced it (`3.0.0`). */
  release: string
  /** The major number of `release`. */
  major: LiveMajor
  /** The "Area" column of the seed's table, verbatim. */
  area: string
  kind: ChangeKind
  actor: Actor
  /** Old form (path, field, variable, symbol), when there is one. */
  old?: string
  /** New form, when there is one. */
  new?: string
  /** What changed, one sentence. */
  summary: string
  /** What must be done by whoever `actor` names. */
  action: string
  /** The svcops command that does it or checks it; null when it stays manual. */
  automatic: Migrator | null
  /** A verbatim fragment of the seed's row (the catalog test checks it is there). */
  seed: string
  effect?: Effect
}

/** A major release: the version and the one it upgrades from. */
export interface LiveRelease {
  version: string
  from: string
  major: LiveMajor
  changes: LiveChange[]
}

/** The product prefix and folder from config (`env.product`). */
export interface Product {
  prefix: string
  dir: string
}

export const DEFAULT_PRODUCT: Product = { prefix: 'svc', dir: 'svc' }
