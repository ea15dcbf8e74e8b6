/**
 * PromQL rewriting for `svcops migrate metrics`: renames a metric, or replaces a metric that was
 * split into audio and video variants by the sum of both. Works on tokens, so names inside string
 * literals, comments, label matchers and `by (...)` lists are never touched; everything outside
 * the rewritten selectors stays byte for byte.
 */
import { changesWithEffect, expandName } from './live.ts'
import type { Product } from './types.ts'

/** One rewrite or refusal inside an expression (offsets in the decoded expression). */
export interface PromqlEdit {
  rule: string
  start: number
  end: number
  from: string
  /** The replacement; absent when the selector could not be rewritten. */
  to?: string
  /** Why a person must look: the split sum, or why it was not rewritten. */
  note?: string
}

interface Token {
  kind: 'ident' | 'string' | 'punct' | 'other'
  text: string
  start: number
  end: number
}

const IDENT = /[A-Za-z_:][A-Za-z0-9_:]*/y

/** Splits PromQL into tokens, skipping comments and whitespace. */
export function tokenizePromql(expr: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < expr.length) {
    const ch = expr[i] ?? ''
    if (/\s/.test(ch)) {
      i++
    } else if (ch === '#') {
      while (i < expr.length && expr[i] !== '\n') i++
    } else if (ch === '"' || ch === "'" || ch === '`') {
      let j = i + 1
      while (j < expr.length && expr[j] !== ch) j += expr[j] === '\\' && ch !== '`' ? 2 : 1
      tokens.push({ kind: 'string', text: expr.slice(i, j + 1), start: i, end: Math.min(j + 1, expr.length) })
      i = j + 1
    } else if (/[0-9.]/.test(ch)) {
      // Numbers and durations (5m, 1h30m, 0.5) are one token, so modifiers can be skipped whole.
      const m = /[0-9.][0-9A-Za-z.]*/y
      m.lastIndex = i
      const text = m.exec(expr)?.[0] ?? ch
      tokens.push({ kind: 'other', text, start: i, end: i + text.length })
      i += text.length
    } else {
      IDENT.lastIndex = i
      const m = IDENT.exec(expr)
      if (m) {
        tokens.push({ kind: 'ident', text: m[0], start: i, end: i + m[0].length })
        i += m[0].length
      } else {
        tokens.push({ kind: /[(){}[\],]/.test(ch) ? 'punct' : 'other', text: ch, start: i, end: i + 1 })
        i++
      }
    }
  }
  return tokens
}

// Functions over a range vector that distribute over a sum: f(a + b) == f(a) + f(b).
const LINEAR_RANGE_FUNCTIONS = new Set([
  'rate',
  'irate',
  'increase',
  'delta',
  'idelta',
  'deriv',
  'sum_over_time',
  'avg_over_time',
  'last_over_time',
])
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right'])

interface Target {
  rule: string
  /** Exact metric name, or a predicate for names that end with a renamed suffix. */
  matches: (name: string) => boolean
  rename?: (name: string) => string
  split?: string[]
}

/** The metric rules of the majors crossed (already filtered by the caller), for `product`. */
export function metricTargets(majors: number[], product: Product): Target[] {
  const targets: Target[] = []
  for (const c of changesWithEffect('metric-rename')) {
    if (!majors.includes(c.major)) continue
    const from = expandName(c.effect.from, product)
    const to = expandName(c.effect.to, product)
    // The seed names this metric without the prefix; product metrics carry it before a component name.
    targets.push({
      rule: c.id,
      matches: (n) => n === from || (n.startsWith(`${product.prefix}_`) && n.endsWith(`_${from}`)),
      rename: (n) => n.slice(0, n.length - from.length) + to,
    })
  }
  for (const c of changesWithEffect('metric-split')) {
    if (!majors.includes(c.major)) continue
    const from = expandName(c.effect.from, product)
    targets.push({ rule: c.id, matches: (n) => n === from, split: c.effect.into.map((t) => expandName(t, product)) })
  }
  return targets
}

/** Index of the token closing the bracket opened at `open`, or -1. */
function closing(tokens: Token[], open: number): number {
  const pairs: Record<string, string> = { '(': ')', '{': '}', '[': ']' }
  const want = pairs[tokens[open]?.text ?? '']
  let depth = 0
  for (let k = open; k < tokens.length; k++) {
    const t = tokens[k]
    if (t?.kind !== 'punct') continue
    if (t.text === tokens[open]?.text) depth++
    else if (t.text === want && --depth === 0) return k
  }
  return -1
}

/** Finds the edits `targets` ask for in one expression. */
export function rewritePromql(expr: string, targets: Target[]): PromqlEdit[] {
  const tokens = tokenizePromql(expr)
  const edits: PromqlEdit[] = []
  let braceDepth = 0
  let labelListUntil = -1
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]
    if (!t) continue
    if (t.text === '{') braceDepth++
    if (t.text === '}') braceDepth--
    if (t.kind === 'ident' && LABEL_LIST_KEYWORDS.has(t.text) && tokens[k + 1]?.text === '(') labelListUntil = closing(tokens, k + 1)
    if (t.kind !== 'ident' || braceDepth > 0 || k <= labelListUntil) continue
    if (tokens[k + 1]?.text === '(') continue
    const target = targets.find((x) => x.matches(t.text))
    if (!target) continue
    if (target.rename) {
      edits.push({ rule: target.rule, start: t.start, end: t.end, from: t.text, to: target.rename(t.text) })
      continue
    }
    edits.push(splitSelector(expr, tokens, k, target))
  }
  return edits
}

/** Rewrites a split metric's selector (and its range function) as the sum of the variants. */
function splitSelector(expr: string, tokens: Token[], k: number, target: Target): PromqlEdit {
  const name = tokens[k]?.text ?? ''
  let last = k
  if (tokens[last + 1]?.text === '{') last = closing(tokens, last + 1)
  let range = false
  if (tokens[last + 1]?.text === '[') {
    last = closing(tokens, last + 1)
    range = true
  }
  // Modifiers: `offset 5m`, `offset -1h`, `@ 1609746000`, `@ start()`.
  for (;;) {
    const next = tokens[last + 1]
    if (next?.text === 'offset') {
      last += tokens[last + 2]?.text === '-' ? 3 : 2
    } else if (next?.text === '@') {
      last += tokens[last + 3]?.text === '(' ? 4 : 2
    } else break
  }
  const start = tokens[k]?.start ?? 0
  const end = tokens[last]?.end ?? start
  const selector = expr.slice(start, end)
  const variants = (target.split ?? []).map((v) => v + selector.slice(name.length))
  const base = { rule: target.rule, from: selector }
  const openParen = tokens[k - 1]?.text === '(' ? k - 1 : -1
  const fn = openParen > 0 && tokens[openParen - 1]?.kind === 'ident' ? tokens[openParen - 1] : undefined
  if (fn?.text === 'label_values') {
    return { ...base, start, end, note: 'label_values takes one metric name, not a sum; list the variants by hand' }
  }
  if (!range) {
    return {
      ...base,
      start,
      end,
      to: `(${variants.join(' + ')})`,
      note: 'rewritten to the sum of the audio and video variants; check the alert threshold or panel still means what it should',
    }
  }
  const closeParen = openParen >= 0 ? closing(tokens, openParen) : -1
  if (!fn || closeParen !== last + 1) {
    return {
      ...base,
      start,
      end,
      note: 'a range selector of a split metric is only rewritten as the sole argument of a function like rate(); rewrite this one by hand',
    }
  }
  if (!LINEAR_RANGE_FUNCTIONS.has(fn.text)) {
    return {
      ...base,
      start: fn.start,
      end: tokens[closeParen]?.end ?? end,
      from: expr.slice(fn.start, tokens[closeParen]?.end ?? end),
      note: `${fn.text}() of a sum is not the sum of ${fn.text}() of the variants; rewrite this one by hand`,
    }
  }
  const callEnd = tokens[closeParen]?.end ?? end
  const full = expr.slice(fn.start, callEnd)
  const inside = (v: string): string => full.slice(0, start - fn.start) + v + full.slice(end - fn.start)
  return {
    ...base,
    start: fn.start,
    end: callEnd,
    from: full,
    to: `(${variants.map(inside).join(' + ')})`,
    note: 'rewritten to the sum of the audio and video variants; check the alert threshold or panel still means what it should',
  }
}

/** Applies edits that have a replacement (non-overlapping, any order). */
export function applyEdits(text: string, edits: Array<{ start: number; end: number; to?: string }>): string {
  let out = text
  for (const e of [...edits].filter((x) => x.to !== undefined).sort((a, b) => b.start - a.start))
    out = out.slice(0, e.start) + (e.to ?? '') + out.slice(e.end)
  return out
}
