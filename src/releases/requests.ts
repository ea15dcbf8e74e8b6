/**
 * `svcops migrate requests`: translates saved system controller calls (method, path, JSON body,
 * fields read) across majors. Each translated call names the catalog rules applied; a call the
 * release notes do not allow to translate safely is returned untranslated with the reason.
 */
import { parse as parseYaml } from 'yaml'
import { BadInputError } from '../core/errors.ts'
import { Untranslatable, WorkingCall, type IdMap, type SavedCall } from './calls.ts'
import { changesWithEffect, FIRST_LIVE_RELEASE } from './live.ts'
import { migrateTo3, migrateTo4, migrateTo5, migrateTo6, migrateTo7 } from './requests-rules.ts'
import { DEFAULT_PRODUCT, type Product } from './types.ts'
import { apiPrefix, assertUpgradeRange, compareVersions, majorOf } from './versions.ts'

export type { IdMap, SavedCall } from './calls.ts'

export interface TranslatedCall extends SavedCall {
  /** Catalog change ids applied, in order. */
  rules: string[]
  /** Notes a person must check. */
  review?: string[]
}

export interface CallResult {
  index: number
  name?: string
  input: SavedCall
  /** The translated call; absent when it could not be translated. */
  output?: TranslatedCall
  untranslatable?: { rule: string; reason: string }
}

export interface RequestMigration {
  from: string
  to: string
  calls: CallResult[]
  translated: number
  untranslatable: number
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])

/** Parses a JSON or YAML list of calls (or `{ calls: [...] }`), checking each call's shape. */
export function parseCalls(text: string, source: string): SavedCall[] {
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (error) {
    throw new BadInputError(`${source} is not valid JSON or YAML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`)
  }
  const list = Array.isArray(doc)
    ? doc
    : doc && typeof doc === 'object' && Array.isArray((doc as { calls?: unknown }).calls)
      ? (doc as { calls: unknown[] }).calls
      : undefined
  if (!list) throw new BadInputError(`${source}: expected a list of calls, or an object with a list 'calls'.`)
  return list.map((raw, i) => {
    const at = `${source}: calls[${i}]`
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new BadInputError(`${at} is not an object with method and path.`)
    const c = raw as Record<string, unknown>
    if (typeof c.method !== 'string' || !METHODS.has(c.method.toUpperCase()))
      throw new BadInputError(`${at}.method is ${JSON.stringify(c.method)}: expected one of ${[...METHODS].join(', ')}.`)
    if (typeof c.path !== 'string' || !c.path.startsWith('/'))
      throw new BadInputError(`${at}.path is ${JSON.stringify(c.path)}: expected a path starting with /.`)
    if (c.reads !== undefined && (!Array.isArray(c.reads) || !c.reads.every((r) => typeof r === 'string' && r.length > 0))) {
      throw new BadInputError(`${at}.reads: expected a list of field paths like status.state.`)
    }
    if (c.name !== undefined && typeof c.name !== 'string') throw new BadInputError(`${at}.name: expected a string.`)
    return {
      ...(c.name !== undefined ? { name: c.name } : {}),
      method: c.method,
      path: c.path,
      ...(c.body !== undefined ? { body: c.body } : {}),
      ...(c.reads !== undefined ? { reads: c.reads as string[] } : {}),
    }
  })
}

/** Parses the id map: `{ streams: { <connection_id>: <stream_uuid> } }`. */
export function parseIdMap(text: string, source: string): IdMap {
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (error) {
    throw new BadInputError(`${source} is not valid JSON or YAML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`)
  }
  const streams = doc && typeof doc === 'object' ? (doc as { streams?: unknown }).streams : undefined
  const valid =
    streams === undefined ||
    (streams !== null &&
      typeof streams === 'object' &&
      !Array.isArray(streams) &&
      Object.values(streams).every((v) => typeof v === 'string'))
  if (!doc || typeof doc !== 'object' || !valid)
    throw new BadInputError(`${source}: expected { streams: { <connection_id>: <stream_uuid> } }.`)
  return streams ? { streams: streams as Record<string, string> } : {}
}

const STEPS: Record<number, (call: WorkingCall, product: Product) => void> = {
  3: migrateTo3,
  4: migrateTo4,
  5: migrateTo5,
  6: migrateTo6,
  7: migrateTo7,
}

/** Translates one call from `from` to `to` (versions already checked). */
function translateCall(call: SavedCall, from: string, to: string, ids: IdMap, product: Product): TranslatedCall {
  const origin = /^https?:\/\/[^/]+/.exec(call.path)?.[0] ?? ''
  const [pathname = '', query = ''] = call.path.slice(origin.length).split(/\?(.*)/s)
  const prefix = apiPrefix(from)
  if (pathname !== prefix && !pathname.startsWith(`${prefix}/`)) {
    const rule = changesWithEffect('api-prefix').find((c) => c.effect.to === prefix)?.id ?? changesWithEffect('api-prefix')[0]?.id ?? ''
    throw new Untranslatable(rule, `the path does not start with ${prefix}, the system controller prefix of ${from}`)
  }
  const work = new WorkingCall(call, pathname.slice(prefix.length) || '/', query, ids)
  for (let major = majorOf(from) + 1; major <= majorOf(to); major++) {
    for (const c of changesWithEffect('api-prefix')) if (c.major === major) work.apply(c.id)
    STEPS[major]?.(work, product)
  }
  const path = `${origin}${apiPrefix(to)}${work.rel === '/' ? '' : work.rel}${work.query ? `?${work.query}` : ''}`
  return {
    ...(call.name !== undefined ? { name: call.name } : {}),
    method: work.method,
    path,
    ...(work.body !== undefined ? { body: work.body } : {}),
    ...(call.reads !== undefined ? { reads: work.reads } : {}),
    rules: work.rules,
    ...(work.review.length ? { review: work.review } : {}),
  }
}

/** Translates every call; untranslatable ones carry the rule and the reason instead of an output. */
export function migrateRequests(
  calls: SavedCall[],
  from: string,
  to: string,
  options: { ids?: IdMap; product?: Product } = {},
): RequestMigration {
  assertUpgradeRange(from, to, FIRST_LIVE_RELEASE, 'svcops migrate requests')
  const results = calls.map((input, index): CallResult => {
    const base = { index, ...(input.name !== undefined ? { name: input.name } : {}), input }
    if (compareVersions(from, to) === 0) return { ...base, output: { ...structuredClone(input), rules: [] } }
    try {
      return { ...base, output: translateCall(input, from, to, options.ids ?? {}, options.product ?? DEFAULT_PRODUCT) }
    } catch (error) {
      if (error instanceof Untranslatable) return { ...base, untranslatable: { rule: error.rule, reason: error.reason } }
      throw error
    }
  })
  return {
    from,
    to,
    calls: results,
    translated: results.filter((r) => r.output).length,
    untranslatable: results.filter((r) => r.untranslatable).length,
  }
}

/** The migration as text: one line per call and what was done or why not. */
export function formatRequestMigration(m: RequestMigration): string {
  const lines = [`System controller calls: ${m.from} -> ${m.to}: ${m.translated} translated, ${m.untranslatable} untranslatable.`]
  for (const r of m.calls) {
    const label = `#${r.index + 1}${r.name ? ` ${r.name}` : ''}`
    if (r.output) {
      lines.push(
        `${label}: ${r.input.method.toUpperCase()} ${r.input.path} -> ${r.output.method} ${r.output.path}`,
        `    rules: ${r.output.rules.join(', ') || 'none'}`,
      )
      for (const note of r.output.review ?? []) lines.push(`    review: ${note}`)
    } else if (r.untranslatable) {
      lines.push(
        `${label}: ${r.input.method.toUpperCase()} ${r.input.path}: NOT TRANSLATED (${r.untranslatable.rule}): ${r.untranslatable.reason}.`,
      )
    }
  }
  return lines.join('\n')
}

/** The document to write: translated calls, and untranslated ones as they were with the reason. */
export function translatedDocument(m: RequestMigration): unknown[] {
  return m.calls.map((r) => r.output ?? { ...r.input, untranslatable: r.untranslatable })
}
