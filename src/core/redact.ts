/**
 * The one redaction layer. Every secret is registered the moment it is read (a password from a
 * file, a token from an HTTP answer, a PSK, a key passphrase), and every output — log lines,
 * events, journals, reports, error messages — passes through `redact` before it leaves the process.
 */

export const REDACTED = '[REDACTED]'

// Very short values would redact ordinary words; real secrets are longer than this.
const MIN_SECRET_LENGTH = 4

const secrets = new Set<string>()
let pattern: RegExp | undefined

/** Registers a secret so that it never appears in any output. Returns the value for chaining. */
export function registerSecret<T extends string | undefined>(value: T): T {
  if (typeof value === 'string' && value.length >= MIN_SECRET_LENGTH && !secrets.has(value)) {
    secrets.add(value)
    // Some outputs carry secrets encoded (URLs, JSON strings, base64 in headers).
    for (const variant of [encodeURIComponent(value), JSON.stringify(value).slice(1, -1), Buffer.from(value).toString('base64')]) {
      if (variant !== value && variant.length >= MIN_SECRET_LENGTH) secrets.add(variant)
    }
    pattern = undefined
  }
  return value
}

/** Forgets every registered secret. Only tests call this, between independent scenarios. */
export function clearSecretsForTests(): void {
  secrets.clear()
  pattern = undefined
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

function compiled(): RegExp | undefined {
  if (secrets.size === 0) return undefined
  if (!pattern) {
    // Longest first so a secret that contains another is replaced whole.
    const alternatives = [...secrets].sort((a, b) => b.length - a.length).map(escapeRegExp)
    pattern = new RegExp(alternatives.join('|'), 'g')
  }
  return pattern
}

// Shapes that are secrets whether or not they were registered: bearer tokens, JWTs, PEM private keys.
const SHAPES: [RegExp, string][] = [
  [/(Bearer\s+)[A-Za-z0-9\-._~+/]+=*/gi, `$1${REDACTED}`],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g, REDACTED],
  [/-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g, REDACTED],
]

// What every shape above contains (case aside): a text without any of these holds no shape. One
// test of this is a third of the cost of the three replaces that find nothing, and nearly every
// text redacted (each string of every event, journal entry and report) holds no shape.
const SHAPE_MARKS = /bearer|eyJ|-----BEGIN/i

/** Replaces every registered secret and every secret-shaped string in `text`. */
export function redact(text: string): string {
  let out = text
  const re = compiled()
  if (re) out = out.replace(re, REDACTED)
  if (SHAPE_MARKS.test(out)) for (const [shape, replacement] of SHAPES) out = out.replace(shape, replacement)
  return out
}

// Field names whose values are secrets even when nobody registered them.
const SECRET_KEYS = /^(password|passwd|secret|token|access_token|session_token|psk|passphrase|private_?key|authorization)$/i

/** Deep copy of a JSON-like value with secrets redacted in every string and secret-named field. */
export function redactDeep<T>(value: T): T {
  return walk(value, undefined) as T
}

function walk(value: unknown, key: string | undefined): unknown {
  if (typeof value === 'string') {
    return key !== undefined && SECRET_KEYS.test(key) && value.length > 0 ? REDACTED : redact(value)
  }
  if (Array.isArray(value)) return value.map((v) => walk(v, undefined))
  if (value instanceof Error) return redact(value.message)
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = walk(v, k)
    return out
  }
  return value
}
