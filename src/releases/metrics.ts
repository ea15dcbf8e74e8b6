/**
 * `svcops migrate metrics`: rewrites metric names in Prometheus rule files (YAML `expr`), Grafana
 * dashboards (JSON `expr`, `query`, `definition`) and bare PromQL across majors. Only the bytes of
 * the rewritten selectors change: each expression is decoded, rewritten by promql.ts and encoded
 * back in its own quoting style, and an expression whose quoting cannot be reproduced exactly is
 * reported instead of rewritten.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { extname } from 'node:path'
import { parseAllDocuments, isScalar, visit, Scalar } from 'yaml'
import { BadInputError, errorMessage } from '../core/errors.ts'
import { FIRST_LIVE_RELEASE } from './live.ts'
import { applyEdits, metricTargets, rewritePromql } from './promql.ts'
import { DEFAULT_PRODUCT, type Product } from './types.ts'
import { assertUpgradeRange, majorOf } from './versions.ts'

export type MetricFileFormat = 'prometheus-yaml' | 'grafana-json' | 'promql'

export interface MetricChange {
  line: number
  rule: string
  from: string
  to: string
  /** Set when a person must check the result (a split rewritten to a sum). */
  review?: string
}

export interface MetricRefusal {
  line: number
  rule: string
  from: string
  reason: string
}

export interface MetricFileResult {
  file: string
  format: MetricFileFormat
  changes: MetricChange[]
  notRewritten: MetricRefusal[]
  changed: boolean
  /** Unified diff (no context lines) of the rewrite; empty when nothing changed. */
  diff: string
  after: string
}

/** An expression inside a file: where its raw text is, its value, and how to encode a new value. */
interface Region {
  rawStart: number
  rawEnd: number
  value: string
  /** Line offset of the value's first line from the raw start (block scalars start on the next line). */
  firstLineOffset: number
  encode: (value: string) => string | undefined
}

const JSON_KEYS = new Set(['expr', 'query', 'definition'])
const YAML_KEYS = new Set(['expr'])

function jsonRegions(text: string, file: string): Region[] {
  try {
    JSON.parse(text)
  } catch (error) {
    throw new BadInputError(`${file} is not valid JSON: ${errorMessage(error)}`)
  }
  const regions: Region[] = []
  let lastKey: string | undefined
  let prev = ''
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] ?? ''
    if (ch !== '"') {
      if (!/\s/.test(ch)) prev = ch
      continue
    }
    let j = i + 1
    while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1
    const raw = text.slice(i, j + 1)
    const value = JSON.parse(raw) as string
    const after = /\S/.exec(text.slice(j + 1))?.[0]
    if (after === ':') lastKey = value
    else if (prev === ':' && lastKey !== undefined && JSON_KEYS.has(lastKey)) {
      regions.push({
        rawStart: i,
        rawEnd: j + 1,
        value,
        firstLineOffset: 0,
        encode: (v) => (JSON.stringify(value) === raw ? JSON.stringify(v) : undefined),
      })
    }
    prev = '"'
    i = j
  }
  return regions
}

function blockEncoder(raw: string, value: string): (v: string) => string | undefined {
  const header = raw.slice(0, raw.indexOf('\n') + 1)
  const indent = /\n([ ]+)\S/.exec(raw)?.[1] ?? ''
  const encode = (v: string): string =>
    header +
    v
      .split('\n')
      .map((l) => (l ? indent + l : l))
      .join('\n')
  const base = encode(value)
  // Chomping indicators and trailing blank lines decide whether the raw text ends in extra newlines.
  const tail = raw.startsWith(base) ? raw.slice(base.length) : undefined
  if (tail === undefined || /[^\n]/.test(tail)) return () => undefined
  return (v) => encode(v) + tail
}

function yamlRegions(text: string, file: string): Region[] {
  const regions: Region[] = []
  for (const doc of parseAllDocuments(text)) {
    if ('errors' in doc && doc.errors.length)
      throw new BadInputError(`${file} is not valid YAML: ${doc.errors[0]?.message.split('\n')[0] ?? 'parse error'}`)
    visit(doc, {
      Pair(_, pair) {
        if (
          !isScalar(pair.key) ||
          !YAML_KEYS.has(String(pair.key.value)) ||
          !isScalar(pair.value) ||
          typeof pair.value.value !== 'string' ||
          !pair.value.range
        )
          return
        const [start, end] = pair.value.range
        const raw = text.slice(start, end)
        const value = pair.value.value
        let encode: (v: string) => string | undefined = () => undefined
        switch (pair.value.type) {
          case Scalar.PLAIN:
            encode = (v) => (raw === value && !v.includes('\n') && !/: | #/.test(v) ? v : undefined)
            break
          case Scalar.QUOTE_DOUBLE:
            encode = (v) => (JSON.stringify(value) === raw ? JSON.stringify(v) : undefined)
            break
          case Scalar.QUOTE_SINGLE:
            encode = (v) => (`'${value.replaceAll("'", "''")}'` === raw ? `'${v.replaceAll("'", "''")}'` : undefined)
            break
          case Scalar.BLOCK_LITERAL:
            encode = blockEncoder(raw, value)
            break
          default:
            break
        }
        regions.push({ rawStart: start, rawEnd: end, value, firstLineOffset: pair.value.type === Scalar.BLOCK_LITERAL ? 1 : 0, encode })
      },
    })
  }
  return regions
}

/** The format of a file, by its extension. */
export function metricFileFormat(file: string): MetricFileFormat {
  const ext = extname(file).toLowerCase()
  if (ext === '.json') return 'grafana-json'
  if (ext === '.yml' || ext === '.yaml') return 'prometheus-yaml'
  return 'promql'
}

const lineAt = (text: string, offset: number): number => text.slice(0, offset).split('\n').length

/** Rewrites one file's text for an upgrade from `from` to `to` (versions already checked). */
export function migrateMetricsText(
  text: string,
  file: string,
  from: string,
  to: string,
  product: Product = DEFAULT_PRODUCT,
): MetricFileResult {
  const format = metricFileFormat(file)
  const majors: number[] = []
  for (let m = majorOf(from) + 1; m <= majorOf(to); m++) majors.push(m)
  const targets = metricTargets(majors, product)
  const regions: Region[] =
    format === 'grafana-json'
      ? jsonRegions(text, file)
      : format === 'prometheus-yaml'
        ? yamlRegions(text, file)
        : [{ rawStart: 0, rawEnd: text.length, value: text, firstLineOffset: 0, encode: (v) => v }]
  const changes: MetricChange[] = []
  const notRewritten: MetricRefusal[] = []
  const replacements: Array<{ start: number; end: number; to: string }> = []
  for (const region of regions) {
    const edits = rewritePromql(region.value, targets)
    if (!edits.length) continue
    const line = (e: { start: number }): number =>
      lineAt(text, region.rawStart) + region.firstLineOffset + (region.value.slice(0, e.start).match(/\n/g)?.length ?? 0)
    const encoded = region.encode(applyEdits(region.value, edits))
    for (const e of edits) {
      if (e.to === undefined) notRewritten.push({ line: line(e), rule: e.rule, from: e.from, reason: e.note ?? 'not rewritten' })
      else if (encoded === undefined)
        notRewritten.push({
          line: line(e),
          rule: e.rule,
          from: e.from,
          reason: 'the quoting of this expression cannot be reproduced byte for byte; rewrite it by hand',
        })
      else changes.push({ line: line(e), rule: e.rule, from: e.from, to: e.to, ...(e.note ? { review: e.note } : {}) })
    }
    if (encoded !== undefined && edits.some((e) => e.to !== undefined))
      replacements.push({ start: region.rawStart, end: region.rawEnd, to: encoded })
  }
  const after = applyEdits(text, replacements)
  return { file, format, changes, notRewritten, changed: after !== text, diff: unifiedDiff(file, text, after), after }
}

/** A unified diff without context lines (`diff -U0`); the rewrites never add or remove lines. */
export function unifiedDiff(file: string, before: string, after: string): string {
  if (before === after) return ''
  const a = before.split('\n')
  const b = after.split('\n')
  const shown = file.replace(/^\/+/, '')
  const out = [`--- a/${shown}`, `+++ b/${shown}`]
  if (a.length !== b.length) {
    out.push(`@@ -1,${a.length} +1,${b.length} @@`, ...a.map((l) => `-${l}`), ...b.map((l) => `+${l}`))
    return out.join('\n') + '\n'
  }
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue
    let j = i
    while (j < a.length && a[j] !== b[j]) j++
    out.push(`@@ -${i + 1},${j - i} +${i + 1},${j - i} @@`, ...a.slice(i, j).map((l) => `-${l}`), ...b.slice(i, j).map((l) => `+${l}`))
    i = j
  }
  return out.join('\n') + '\n'
}

/** Reads, rewrites and (with `write`) saves each file; nothing is written on bad input. */
export function migrateMetricFiles(
  files: string[],
  from: string,
  to: string,
  options: { write?: boolean; product?: Product } = {},
): MetricFileResult[] {
  assertUpgradeRange(from, to, FIRST_LIVE_RELEASE, 'svcops migrate metrics')
  if (!files.length)
    throw new BadInputError('No files given: expected one or more Prometheus rule files, Grafana dashboards or PromQL files.')
  const results = files.map((file) => {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (error) {
      throw new BadInputError(`The file '${file}' cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`)
    }
    return migrateMetricsText(text, file, from, to, options.product)
  })
  // Every file is checked before any is written, so bad input leaves all files untouched.
  if (options.write) for (const r of results) if (r.changed) writeFileSync(r.file, r.after)
  return results
}

/** The results as text: per file, each rewrite, each refusal, then the diff. */
export function formatMetricResults(results: MetricFileResult[], options: { diff: boolean; wrote: boolean }): string {
  const lines: string[] = []
  for (const r of results) {
    lines.push(
      `${r.file} (${r.format}): ${r.changes.length} rewritten, ${r.notRewritten.length} not rewritten${r.changed && options.wrote ? ', written' : ''}`,
    )
    for (const c of r.changes)
      lines.push(`  ${r.file}:${c.line} ${c.rule}: ${c.from} -> ${c.to}${c.review ? `\n    review: ${c.review}` : ''}`)
    for (const n of r.notRewritten) lines.push(`  ${r.file}:${n.line} ${n.rule}: NOT REWRITTEN ${n.from}: ${n.reason}`)
  }
  if (options.diff) for (const r of results) if (r.diff) lines.push('', r.diff.trimEnd())
  return lines.join('\n')
}
