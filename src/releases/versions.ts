/**
 * Version helpers used everywhere (deploy flags, variable names, API prefix, planners). Each
 * answer is derived from the catalog's effects (live.ts, auth.ts): no other module compares
 * versions of the live production system by hand.
 */
import { BadInputError } from '../core/errors.ts'
import { authRevisionFacts, type AuthRevision } from './auth.ts'
import { changesWithEffect, expandName } from './live.ts'
import { DEFAULT_PRODUCT, type Effect, type LiveComponentName } from './types.ts'

export interface Version {
  major: number
  minor: number
  patch: number
}

const VERSION = /^v?(\d{1,6})\.(\d{1,6})\.(\d{1,6})(?:[-+][0-9A-Za-z.-]+)?$/

/** Parses `X.Y.Z` (an optional leading `v` and pre-release or build suffix are accepted and ignored). */
export function parseVersion(v: string): Version {
  const m = VERSION.exec(typeof v === 'string' ? v.trim() : '')
  if (!m) throw new BadInputError(`The version '${String(v)}' is not valid: expected MAJOR.MINOR.PATCH like 6.0.0.`)
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) }
}

/** Negative when a < b, zero when equal, positive when a > b. */
export function compareVersions(a: string, b: string): number {
  const x = parseVersion(a)
  const y = parseVersion(b)
  return x.major - y.major || x.minor - y.minor || x.patch - y.patch
}

/** The release (`7.0.0`) that introduced the first effect of this type, or undefined. */
function introducedIn(type: Effect['type']): string | undefined {
  return changesWithEffect(type)[0]?.release
}

/** True when `v` is at or after the release that introduced an effect of this type. */
function hasEffect(v: string, type: Effect['type']): boolean {
  const since = introducedIn(type)
  return since !== undefined && compareVersions(v, since) >= 0
}

export type ApiPrefix = '/api/v1' | '/api/v2' | '/api/v3'

/** The system controller's REST prefix for a version: each api-prefix change replaces the previous. */
export function apiPrefix(v: string): ApiPrefix {
  const changes = changesWithEffect('api-prefix')
  let prefix = changes[0]?.effect.from ?? '/api/v1'
  for (const c of changes) if (compareVersions(v, c.release) >= 0) prefix = c.effect.to
  return prefix as ApiPrefix
}

/** Components connecting to the system controller need the PSK variable. */
export function pskRequired(v: string): boolean {
  return hasEffect(v, 'psk-required')
}

/** The system controller refuses to start with a low-entropy PSK. */
export function pskEntropyEnforced(v: string): boolean {
  return hasEffect(v, 'psk-entropy-enforced')
}

/**
 * Directories the system controller searches for its settings file, `.` meaning its working
 * directory. Before the release that introduced the search path the seed names only "former
 * fixed application directories", so the answer is empty: callers must not guess them.
 */
export function settingsSearchPaths(v: string, productDir: string = DEFAULT_PRODUCT.dir): string[] {
  const change = changesWithEffect('settings-search-path')
    .filter((c) => compareVersions(v, c.release) >= 0)
    .at(-1)
  if (!change) return []
  return change.effect.directories.map((d) => expandName(d, { ...DEFAULT_PRODUCT, dir: productDir }))
}

/** The system controller accepts `--settings-path <PATH>`. */
export function supportsSettingsPathFlag(v: string): boolean {
  return hasEffect(v, 'settings-search-path')
}

/** The flag that points the system controller at its settings directory. */
export function settingsPathFlag(): string {
  return changesWithEffect('settings-search-path')[0]?.effect.flag ?? '--settings-path'
}

/** The rendering engine's TCP control panel variable for a version (`SVC_TCP_ENDPOINTS` / `SVC_TCP_ENDPOINT`). */
export function tcpEndpointVariable(v: string, prefix: string = DEFAULT_PRODUCT.prefix): string {
  const rename = changesWithEffect('env-rename').find((c) => c.effect.from.endsWith('_TCP_ENDPOINTS'))
  if (!rename) throw new Error('The catalog has no TCP endpoint rename.')
  const template = compareVersions(v, rename.release) >= 0 ? rename.effect.to : rename.effect.from
  return expandName(template, { ...DEFAULT_PRODUCT, prefix })
}

/** True when the TCP endpoint variable takes exactly one endpoint. */
export function tcpEndpointSingleValue(v: string): boolean {
  return changesWithEffect('env-rename').some(
    (c) => c.effect.singleValue && c.effect.from.endsWith('_TCP_ENDPOINTS') && compareVersions(v, c.release) >= 0,
  )
}

/** The variable every component reads the PSK from (`SVC_SYSTEM_CONTROLLER_PSK`). */
export function pskVariable(prefix: string = DEFAULT_PRODUCT.prefix): string {
  const change = changesWithEffect('psk-required')[0]
  if (!change) throw new Error('The catalog has no PSK variable.')
  return expandName(change.effect.variable, { ...DEFAULT_PRODUCT, prefix })
}

/** The system controller's settings file name (`svc_sc_settings.json`). */
export function settingsFileName(prefix: string = DEFAULT_PRODUCT.prefix): string {
  const change = changesWithEffect('psk-settings-file')[0]
  if (!change) throw new Error('The catalog has no settings file.')
  return expandName(change.effect.file, { ...DEFAULT_PRODUCT, prefix })
}

/**
 * The product metrics `component` of release `v` exposes on `/metrics`, from the catalog's metric
 * effects: the names of the first release with every rename and split up to `v` applied, in
 * order. The seed writes the rendering engine's queue metric without the prefix; the product
 * carries it like every other product metric (`svc_queueing_video_frames`), which is also how
 * `svcops migrate metrics` reads it. What the live playbook checks and what the lab's components
 * serve are both this list.
 */
export function liveMetricNames(v: string, component: LiveComponentName, prefix: string = DEFAULT_PRODUCT.prefix): string[] {
  const product = { ...DEFAULT_PRODUCT, prefix }
  const changes = [...changesWithEffect('metric-rename'), ...changesWithEffect('metric-split')]
    .filter((c) => c.effect.component === component)
    .sort((a, b) => compareVersions(a.release, b.release))
  const produced = new Set(changes.flatMap((c) => (c.effect.type === 'metric-rename' ? [c.effect.to] : c.effect.into)))
  let names = changes.map((c) => c.effect.from).filter((name) => !produced.has(name))
  for (const c of changes) {
    if (compareVersions(v, c.release) < 0) break
    const e = c.effect
    names = names.flatMap((name) => (name !== e.from ? [name] : e.type === 'metric-rename' ? [e.to] : e.into))
  }
  return names.map((template) => {
    const name = expandName(template, product)
    return name.startsWith(`${prefix}_`) ? name : `${prefix}_${name}`
  })
}

/**
 * The metric every component but the controller exposes for its connection to the system
 * controller (`svc_controller_connected`, 1 or 0). The seed's tables do not list it: it is the
 * name the live playbook checks and the lab's components serve, kept here beside the product's.
 */
export function connectedMetricName(prefix: string = DEFAULT_PRODUCT.prefix): string {
  return `${prefix}_controller_connected`
}

/** The SDK factory takes a custom CA certificate file. */
export function supportsCustomCaCert(v: string): boolean {
  return hasEffect(v, 'custom-ca-cert')
}

/** Example access token lifetime (`expires_in`, seconds) of an auth API revision. */
export function authTokenLifetime(revision: AuthRevision): number {
  return authRevisionFacts(revision).tokenLifetimeSeconds
}

/**
 * Refuses a version range that is not an upgrade: invalid versions, versions before `first`, and
 * `from` newer than `to` (one sentence each). Equal versions are allowed: the answer is "nothing".
 */
export function assertUpgradeRange(from: string, to: string, first: string, command: string): void {
  parseVersion(from)
  parseVersion(to)
  if (compareVersions(from, first) < 0)
    throw new BadInputError(`--from ${from} is older than the first release the catalog describes (${first}).`)
  if (compareVersions(from, to) > 0) {
    throw new BadInputError(
      `--from ${from} is newer than --to ${to}: svcops plans and migrates upgrades only, and a downgrade of the live production system is a restore of the older release.`,
      `${command} --from ${to} --to ${from}`,
    )
  }
}

/** The major number of a version. */
export function majorOf(v: string): number {
  return parseVersion(v).major
}

const SEMVER = /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/

/** Checks a requested version (`flag`: the option that gave it) before anything is planned or changed. */
export function assertVersion(version: string, flag = '--to'): void {
  if (!SEMVER.test(version)) throw new BadInputError(`${flag}: '${version}' is not a version; expected a version like 2.0.0.`)
}
