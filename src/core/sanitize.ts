/**
 * The one sanitizer for text read from outside — service log lines, API answers, error messages,
 * version strings, names users gave — before it reaches a terminal, report.md, `runs show
 * --markdown`, a webhook or a metric label. Control characters are escaped visibly, as OpenSSH does
 * with what the remote side prints: C0 (ESC, so no CSI or OSC sequence such as an OSC 52
 * clipboard write), DEL, C1 (U+0080-U+009F, which a terminal may take as CSI), Unicode format
 * characters (bidi overrides like U+202E, zero-width characters, the BOM) and the line and paragraph
 * separators become `\x1b`, `\u202e`... A line stays one line: its newlines are escaped too. Text
 * that was printable comes out as it went in.
 *
 * Redaction (`redact`) runs first: a secret is replaced before its bytes could be split by an escape.
 */

// Cc: C0, DEL, C1. Cf: format characters (bidi embeddings, overrides and isolates, zero-width
// characters, BOM, soft hyphen, tags). Zl/Zp: U+2028/U+2029, line breaks to some readers.
// Cs: a lone surrogate, which no encoder writes as the character it was.
const CONTROL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu
const CONTROL_BUT_LINE_BREAKS = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/** The visible form of one control character: `\n`, `\x1b`, `\u202e`, `\u{e0041}`. */
export function escapeControl(char: string): string {
  const named = NAMED[char]
  if (named) return named
  const code = char.codePointAt(0) ?? 0
  if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`
  if (code <= 0xffff) return `\\u${code.toString(16).padStart(4, '0')}`
  return `\\u{${code.toString(16)}}`
}

/** One line of text for a terminal or a report: every control character escaped, newlines included. */
export function sanitizeLine(text: string): string {
  return text.replace(CONTROL, escapeControl)
}

/**
 * Text of several lines (a diff, a rendered report, an error with its hint): newlines and tabs kept,
 * every other control character escaped — a carriage return too, which would let a line overwrite
 * what came before it on a terminal.
 */
export function sanitizeText(text: string): string {
  return text.replace(CONTROL_BUT_LINE_BREAKS, escapeControl)
}

/** True when `text` holds a character `sanitizeLine` would escape. */
export function hasControl(text: string): boolean {
  return new RegExp(CONTROL.source, 'u').test(text)
}

// Characters JSON.stringify leaves raw inside strings that a terminal may still act on.
const JSON_RAW_CONTROL = /[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}]/gu

/**
 * JSON text (from `JSON.stringify`) with the control characters it leaves raw (DEL, C1, format
 * characters, U+2028/9) written as `\uXXXX` escapes: the same JSON value, decoded by any parser to
 * exactly the same strings, but safe to print on a terminal. JSON.stringify already escapes C0.
 */
export function escapeJsonControls(json: string): string {
  return json.replace(JSON_RAW_CONTROL, (char) => {
    const code = char.codePointAt(0) ?? 0
    if (code <= 0xffff) return `\\u${code.toString(16).padStart(4, '0')}`
    // Astral format characters (tags): as their UTF-16 surrogate pair, as JSON spells them.
    return char
      .split('')
      .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .join('')
  })
}

/** `JSON.stringify` for output people may read on a terminal (`--json`, report.json, webhooks). */
export function stringifyForTerminal(value: unknown, space?: number): string {
  return escapeJsonControls(JSON.stringify(value, null, space))
}

/** Every string in a JSON-like value through `sanitizeLine` (a copy; keys too). */
export function sanitizeDeep<T>(value: T): T {
  return walk(value) as T
}

function walk(value: unknown): unknown {
  if (typeof value === 'string') return sanitizeLine(value)
  if (Array.isArray(value)) return value.map(walk)
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [sanitizeLine(k), walk(v)]))
  }
  return value
}

// Slack's mention syntax (`<!channel>`, `<!here>`, `<@U123>`, `<#C123>`, `<!subteam^S1>`, links
// `<url|text>`) lives in angle brackets; Mattermost and Teams also notify on a bare @channel.
const BROADCAST = /@(channel|here|everyone|all)\b/gi

/**
 * Text for a chat webhook (Slack, Microsoft Teams, Mattermost `{ text }`): `&`, `<` and `>`
 * escaped as Slack's message formatting asks, so no `<!channel>` or `<@U…>` in data mentions
 * anyone, and a bare `@channel`/`@here`/`@all`/`@everyone` defused with a full-width at sign.
 */
export function neutralizeMentions(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(BROADCAST, '＠$1')
}
