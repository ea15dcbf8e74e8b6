/**
 * The checks of a live component beyond "it runs and logged no error": first those on the seed's
 * own endpoints for the running release (an ingest's `GET <prefix>/ingests/{uuid}?expand=true`
 * with the release's ingest metric names, a pipeline's `GET <prefix>/pipelines/{uuid}?expand=true`,
 * a control panel's `GET <prefix>/controlpanels/{uuid}`), then the site's declared checks
 * (`svcops:live.checks`, src/config/checks.ts) for what the seed does not say. Each platform gives
 * the ways of reading (`CheckReader`); the judgement is here, once.
 */
import type { DeclaredCheck } from '../config/checks.ts'
import { containsValue, expositionLines, metricLine } from '../core/expectations.ts'
import { apiPrefix, liveMetricNames } from '../releases/versions.ts'
import type { LiveComponentName, LiveProduct } from './layout.ts'
import type { Answer, CheckResult } from './live-judge.ts'
import type { LiveUnit } from './live-placement.ts'

/** How a platform reads what the checks ask: the controller's and a component's HTTP answers, a command on a unit's host. */
export interface CheckReader {
  /** `GET <path>` (query included) of the system controller; never throws. */
  controllerGet(path: string): Promise<Answer>
  /** `GET <path>` on the unit's own port (its metrics port); never throws. */
  componentGet(unit: LiveUnit, path: string): Promise<Answer>
  /** The command on the unit's host; undefined where commands cannot run (then a command check says so). */
  run?: (unit: LiveUnit, argv: string[]) => Promise<{ code: number; output: string }>
  /** A lab host's sandbox root for `{root}` ('' on a real host). */
  rootOf(unit: LiveUnit): string
  /** Where the controller and the unit's port are, for the dry run's sentences. */
  describeController(): string
  describeComponent(unit: LiveUnit): string
}

/** What the checks of a unit read from the stack: the site's checks, the UUIDs, the product. */
export interface CheckPlan {
  checks: DeclaredCheck[]
  uuids: Record<string, string>
  product: LiveProduct
}

/** The seed's endpoint of a component type, by release (`{api}` and `{uuid}` filled later); the controller has none. */
const SEED_ENDPOINTS: Partial<Record<LiveComponentName, { path: string; section: string }>> = {
  ingest: { path: '{api}/ingests/{uuid}?expand=true', section: '6.0.0 "Ingest metrics"' },
  pipeline: { path: '{api}/pipelines/{uuid}?expand=true', section: '7.0.0 "Control receivers"' },
  'control-panel': { path: '{api}/controlpanels/{uuid}', section: '7.0.0 "Renames"' },
}

/** The seed's endpoint a unit is checked on, with its section, or undefined (the controller). */
export function seedEndpointOf(component: LiveComponentName): { path: string; section: string } | undefined {
  return SEED_ENDPOINTS[component]
}

/** Fills the placeholders of a declared text for one unit. */
export function fillPlaceholders(text: string, unit: LiveUnit, version: string, plan: CheckPlan, root = ''): string {
  const values: Record<string, string> = {
    api: apiPrefix(version),
    version,
    unit: unit.name,
    component: unit.component,
    product: plan.product.prefix,
    uuid: plan.uuids[unit.name] ?? '{uuid}',
    root,
  }
  return text.replace(/\{([a-z]+)\}/g, (whole, key: string) => values[key] ?? whole)
}

function fillValue(value: unknown, fill: (s: string) => string): unknown {
  if (typeof value === 'string') return fill(value)
  if (Array.isArray(value)) return value.map((v) => fillValue(v, fill))
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillValue(v, fill)]))
  return value
}

/** The declared checks that apply to a component type. */
export function declaredFor(plan: CheckPlan, component: LiveComponentName): DeclaredCheck[] {
  return plan.checks.filter((c) => !c.components || c.components.includes(component))
}

/** Whether the unit has a check on the seed's endpoint (its type has one and its UUID is given). */
function seedCheckable(plan: CheckPlan, unit: LiveUnit): boolean {
  return seedEndpointOf(unit.component) !== undefined && plan.uuids[unit.name] !== undefined
}

/** The seed's check of a unit, when its type has an endpoint and the stack gives its UUID. */
async function seedCheck(reader: CheckReader, plan: CheckPlan, unit: LiveUnit, version: string): Promise<CheckResult | undefined> {
  const endpoint = seedEndpointOf(unit.component)
  if (!endpoint) return undefined
  const path = fillPlaceholders(endpoint.path, unit, version, plan)
  const check = `GET ${path.replace(plan.uuids[unit.name] ?? '\0', '{uuid}')} answers (seed)`
  if (!plan.uuids[unit.name]) return { check, ok: true, detail: `not checked: svcops:live.uuids has no UUID for ${unit.name}` }
  const r = await reader.controllerGet(path)
  if ('error' in r) return { check, ok: false, detail: r.error }
  if (r.status !== 200) return { check, ok: false, detail: `GET ${path} answered ${r.status}` }
  if (unit.component !== 'ingest') return { check, ok: true }
  // The seed puts the ingest's metrics in this answer without showing its shape: each name must appear in it.
  const text = JSON.stringify(r.body)
  const names = liveMetricNames(version, 'ingest', plan.product.prefix)
  const missing = names.filter((n) => !text.includes(`"${n}"`))
  // The names found are said too: what was checked, in the report.
  return missing.length
    ? { check, ok: false, detail: `the answer names no ${missing.join(', ')}` }
    : { check, ok: true, detail: `naming ${names.join(', ')}` }
}

/** One declared check of one unit. */
export async function runDeclaredCheck(
  reader: CheckReader,
  plan: CheckPlan,
  check: DeclaredCheck,
  unit: LiveUnit,
  version: string,
): Promise<CheckResult> {
  const fill = (s: string): string => fillPlaceholders(s, unit, version, plan, reader.rootOf(unit))
  const name = check.name
  if (check.web) {
    const path = fill(check.web.path)
    const r = check.web.target === 'controller' ? await reader.controllerGet(path) : await reader.componentGet(unit, path)
    if ('error' in r) return { check: name, ok: false, detail: r.error }
    if (r.status !== check.web.status)
      return {
        check: name,
        ok: false,
        detail: `GET ${path} answered ${r.status}; expected ${check.web.status}`,
        ...(r.status === 404 ? { absent: true } : {}),
      }
    if (check.web.contains !== undefined && !containsValue(r.body, fillValue(check.web.contains, fill)))
      return {
        check: name,
        ok: false,
        detail: `GET ${path}: the answer does not contain ${JSON.stringify(fillValue(check.web.contains, fill))}`,
      }
    return { check: name, ok: true }
  }
  if (check.metric) {
    const m = check.metric
    const r = await reader.componentGet(unit, m.path)
    if ('error' in r) return { check: name, ok: false, detail: r.error }
    if (r.status !== 200)
      return { check: name, ok: false, detail: `GET ${m.path} answered ${r.status}`, ...(r.status === 404 ? { absent: true } : {}) }
    const lines = expositionLines(r.body)
    // The release's names, said when present too: what was checked, in the report.
    const names = m.releaseNames ? liveMetricNames(version, unit.component, plan.product.prefix) : []
    const missing = names.filter((n) => !metricLine(lines, n))
    if (missing.length) return { check: name, ok: false, detail: `missing ${missing.join(', ')}` }
    if (m.name !== undefined) {
      const metric = fill(m.name)
      const line = metricLine(lines, metric)
      if (!line) return { check: name, ok: false, detail: `${metric} is not exposed`, absent: true }
      const value = Number(line.split(/\s+/)[1])
      if (value !== m.equals)
        return { check: name, ok: false, detail: `${metric} is ${String(line.split(/\s+/)[1])}; expected ${m.equals}` }
    }
    return names.length ? { check: name, ok: true, detail: names.join(', ') } : { check: name, ok: true }
  }
  const argv = (check.command?.argv ?? []).map(fill)
  if (!reader.run) return { check: name, ok: false, detail: 'a command check runs on a host; this platform has none' }
  const result = await reader.run(unit, argv)
  return result.code === 0
    ? { check: name, ok: true }
    : {
        check: name,
        ok: false,
        detail: `${argv.join(' ')} exited ${result.code}${result.output ? `: ${result.output}` : ''}`,
        // The shell's "command not found".
        ...(result.code === 127 ? { absent: true } : {}),
      }
}

/**
 * The seed's check and every declared check of one unit of `version`, in that order. `only`:
 * the HTTP checks (the seed's, web and metric), which a waiting check asks again and again, or
 * the commands, asked once after the wait (each is a round trip over the host's transport).
 * `untilFailure`: stop at the first failed check (a wait only needs to know whether all pass).
 */
export async function runUnitChecks(
  reader: CheckReader,
  plan: CheckPlan,
  unit: LiveUnit,
  version: string,
  only?: 'http' | 'commands',
  untilFailure = false,
): Promise<CheckResult[]> {
  const results: CheckResult[] = []
  const seed = only === 'commands' ? undefined : await seedCheck(reader, plan, unit, version)
  if (seed) results.push(seed)
  for (const c of declaredFor(plan, unit.component)) {
    if (untilFailure && results.some((r) => !r.ok)) break
    if ((only === 'http' && c.command) || (only === 'commands' && !c.command)) continue
    results.push(await runDeclaredCheck(reader, plan, c, unit, version))
  }
  return results
}

/** What `runUnitChecks` asks, for the dry run. */
export function describeUnitChecks(reader: CheckReader, plan: CheckPlan, unit: LiveUnit, version: string): string[] {
  const fill = (s: string): string => fillPlaceholders(s, unit, version, plan, reader.rootOf(unit))
  const endpoint = seedEndpointOf(unit.component)
  const lines: string[] = []
  if (endpoint)
    lines.push(
      seedCheckable(plan, unit)
        ? `GET ${reader.describeController()}${fill(endpoint.path)} answers 200 (seed, ${endpoint.section})${unit.component === 'ingest' ? ` naming ${liveMetricNames(version, 'ingest', plan.product.prefix).join(', ')}` : ''}`
        : `no check on GET ${endpoint.path}: svcops:live.uuids has no UUID for ${unit.name}`,
    )
  for (const c of declaredFor(plan, unit.component)) {
    if (c.web)
      lines.push(
        `${c.name}: GET ${c.web.target === 'controller' ? reader.describeController() : reader.describeComponent(unit)}${fill(c.web.path)} answers ${c.web.status}${c.web.contains !== undefined ? ` containing ${JSON.stringify(fillValue(c.web.contains, fill))}` : ''}`,
      )
    else if (c.metric)
      lines.push(
        `${c.name}: GET ${reader.describeComponent(unit)}${c.metric.path}${c.metric.releaseNames ? `: the metric names of ${version}` : ''}${c.metric.name !== undefined ? `: ${fill(c.metric.name)} is ${String(c.metric.equals)}` : ''}`,
      )
    else lines.push(`${c.name}: on ${unit.host}: ${(c.command?.argv ?? []).map(fill).join(' ')} exits 0`)
  }
  return lines
}

/**
 * The declared checks of every unit asked against the release running now, and those whose
 * interface is not there (`absent`): what an upgrade can know is wrong with the stack's checks
 * before it stops anything. Checks failing for the system's state (a component down) are not
 * counted: the upgrade's own steps judge those.
 */
export async function absentDeclaredInterfaces(
  reader: CheckReader,
  plan: CheckPlan,
  units: LiveUnit[],
  version: string,
): Promise<Array<{ unit: LiveUnit; result: CheckResult }>> {
  const found: Array<{ unit: LiveUnit; result: CheckResult }> = []
  for (const unit of units)
    for (const c of declaredFor(plan, unit.component)) {
      const result = await runDeclaredCheck(reader, plan, c, unit, version)
      if (!result.ok && result.absent) found.push({ unit, result })
    }
  return found
}
