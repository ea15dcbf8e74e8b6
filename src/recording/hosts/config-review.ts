/**
 * "Review configuration changes" of the seed's upgrade steps. The package manager keeps a config
 * file the operator edited and leaves the package's new default beside it (`.dpkg-dist`,
 * `.dpkg-new`, `.rpmnew`). This finds those files, compares them with the active config option by option for the
 * report, syntax-checks the active config (the service reads JSON), and warns on options the active
 * config sets that the new default no longer has (likely obsolete or renamed).
 */
import { randomBytes } from 'node:crypto'
import type { RecordingHostConfig } from '../../config/schema.ts'
import { events } from '../../core/events.ts'
import { hostPath } from '../../drivers/transports.ts'
import { runCommand, type Transport } from '../../core/runner.ts'

type Host = Pick<RecordingHostConfig, 'root' | 'name'>

/** What the review found on one host. */
export interface ConfigReview {
  configPath: string
  /** New default files left by the package manager, with the diff against the active config. */
  newDefaults: Array<{ path: string; diff: string }>
  /** The active config parsed (true) or the parse error. */
  syntaxOk: boolean
  syntaxError?: string
  /** Options set in the active config that the new default does not have. */
  obsoleteOptions: string[]
  /** Options the new default has that the active config does not set (their defaults apply). */
  newOptions: string[]
}

/**
 * Option paths whose values the review may show (array indices written `[]`). Everything else —
 * passwords, tokens, keys, a credential nested anywhere, an option a later release adds — shows
 * only as "changed" with its value masked: a config file holds secrets under names no pattern
 * guesses (`mediaApi.baseUrl` with `user:password@`, `headers.X-Api`, ...).
 */
const SHOWN_VALUES = new Set([
  'listen.host',
  'listen.port',
  'database.host',
  'database.port',
  'database.name',
  'database.user',
  'database.passwordFile',
  'auth.jwksUrl',
  'auth.issuer',
  'auth.readScope',
  'auth.writeScope',
  'storage.path',
  'storage.locations[].name',
  'storage.locations[].path',
  'storage.defaultLocation',
  'mediaApi.baseUrl',
  'mediaApi.timeoutMs',
  'contentInfoCacheSize',
  'contentInfoCacheTtlSeconds',
  'writeRateLimit',
  'logLevel',
])

const MASKED = '[masked]'

// Key names that say "secret", matched by word (`apiKeys`, `client_secret`, `X-Auth-Token`).
const SECRET_WORD =
  /^(pass(word|wd|phrase)?s?|secrets?|tokens?|keys?|api_?keys?|credentials?|creds?|psks?|private|bearer|cookies?|sessions?)$/

/** The words of a key name: camelCase, snake_case, kebab-case and dotted parts apart, lower-cased. */
function wordsOf(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase())
}

/** True when a key name holds a secret-sounding word. */
function isSecretKey(key: string): boolean {
  return wordsOf(key).some((w) => SECRET_WORD.test(w))
}

/**
 * True for a string shaped like a token: long, one run of URL-safe characters, letters and digits
 * mixed (an API key, a JWT part, a hex digest) — not a word, a path segment or a version.
 */
export function looksLikeToken(text: string): boolean {
  if (text.length < 16 || !/^[A-Za-z0-9_\-.~+/=]+$/.test(text)) return false
  const digits = text.replace(/[^0-9]/g, '').length
  const letters = text.replace(/[^A-Za-z]/g, '').length
  return digits >= 3 && letters >= 3
}

// `user:password@` anywhere (a URL without a scheme, `//user:pass@nas/share`, an SMB or SSH spec).
const CREDENTIALS = /[^\s/:@]+:[^\s/@]*@/

/**
 * A URL without what may be a credential: `user:password@`, query values, the fragment
 * (`#access_token=...`) and path segments shaped like a token or following a secret-sounding one
 * (`/hooks/T0/B0/XyZ...`, `/token/abc...`). A scheme-less `//host/...` URL is treated alike. Any
 * other string comes back as it is; a string that cannot be shown safely comes back MASKED.
 */
export function withoutCredentials(value: string): string {
  const schemeLess = value.startsWith('//')
  if (!schemeLess && !/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return CREDENTIALS.test(value) ? MASKED : value
  let url: URL
  try {
    url = new URL(schemeLess ? `svcops:${value}` : value)
  } catch {
    return MASKED
  }
  if (!url.host && !schemeLess) return MASKED
  url.username = ''
  url.password = ''
  for (const key of [...url.searchParams.keys()]) url.searchParams.set(key, 'masked')
  if (url.hash) url.hash = 'masked'
  const segments = url.pathname.split('/')
  url.pathname = segments
    .map((segment, i) => {
      const decoded = safeDecode(segment)
      return looksLikeToken(decoded) || (i > 0 && isSecretKey(safeDecode(segments[i - 1] ?? '')) && decoded) ? 'masked' : segment
    })
    .join('/')
  const shown = url.href
  return schemeLess ? shown.slice('svcops:'.length) : shown
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/**
 * The string value of an allow-listed option as the review may show it, or MASKED when its shape
 * says it may hold a secret whatever its name: space around it (` https://user:PASS@...` is not
 * the URL it looks like), a control character, a credential, a token.
 */
export function shownString(value: string): string {
  if (value !== value.trim() || /[\p{Cc}\p{Cf}]/u.test(value)) return MASKED
  if (!value.includes('/') && looksLikeToken(value)) return MASKED
  return withoutCredentials(value)
}

/**
 * An option path as the review may show it (key names are data too): a key shaped like a token or
 * a credential, or any key inside a map whose name sounds secret (`apiKeys.sk_live_...`), becomes
 * MASKED — except on the paths the allow-list names.
 */
export function shownPath(path: string): string {
  if (SHOWN_VALUES.has(path.replace(/\[\d+\]/g, '[]'))) return path
  const keys = path.split('.')
  return keys
    .map((key, i) => {
      const name = key.replace(/(\[\d+\])+$/, '')
      const parent = (keys[i - 1] ?? '').replace(/(\[\d+\])+$/, '')
      const secret = looksLikeToken(name) || CREDENTIALS.test(name) || /[\p{Cc}\p{Cf}]/u.test(name) || (i > 0 && isSecretKey(parent))
      return secret ? MASKED + key.slice(name.length) : key
    })
    .join('.')
}

/** Every leaf of a JSON value by path (`a.b`, `a.list[0].c`); empty objects and arrays are leaves. */
export function leafValues(value: unknown, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  const entries: Array<[string, unknown]> = Array.isArray(value)
    ? value.map((v, i) => [`${prefix}[${i}]`, v])
    : value && typeof value === 'object'
      ? Object.entries(value as Record<string, unknown>).map(([k, v]) => [prefix ? `${prefix}.${k}` : k, v])
      : []
  if (entries.length === 0) out.set(prefix, value)
  for (const [path, v] of entries) leafValues(v, path, out)
  return out
}

function shown(path: string, value: unknown): string {
  if (!SHOWN_VALUES.has(path.replace(/\[\d+\]/g, '[]'))) return MASKED
  if (typeof value === 'string') {
    const text = shownString(value)
    return text === MASKED ? MASKED : JSON.stringify(text)
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return JSON.stringify(value)
  return MASKED
}

/**
 * The review's diff of two parsed configs, one line per changed option path, in unified-diff
 * signs: `+` set by the new default only, `-` set by the active config only, `~` both set, values
 * differ. Values only where the allow-list permits; never a line of either file.
 */
export function reviewDiff(active: unknown, dflt: unknown): string {
  const before = leafValues(active)
  const after = leafValues(dflt)
  const lines: string[] = []
  for (const path of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    const a = before.get(path)
    const b = after.get(path)
    const key = JSON.stringify(shownPath(path))
    if (!before.has(path)) lines.push(`+  ${key}: ${shown(path, b)}`)
    else if (!after.has(path)) lines.push(`-  ${key}: ${shown(path, a)}`)
    else if (JSON.stringify(a) !== JSON.stringify(b)) {
      const old = shown(path, a)
      const now = shown(path, b)
      if (old === MASKED || now === MASKED) lines.push(`~  ${key}: changed ${MASKED}`)
      else if (old === now) lines.push(`~  ${key}: ${now} (changed in masked parts: credentials or query)`)
      else lines.push(`~  ${key}: ${old} -> ${now}`)
    }
  }
  return lines.join('\n')
}

/** Dot-paths of every leaf key of a JSON object. */
export function optionPaths(value: unknown, prefix = ''): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return prefix ? [prefix] : []
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => optionPaths(v, prefix ? `${prefix}.${k}` : k))
}

/** Parses JSON; the error gives the place only — V8's message quotes the text, which may be a secret. */
function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (error) {
    const at = /position (\d+)/.exec((error as Error).message)
    if (!at?.[1]) return { ok: false, error: 'it ends early or is not JSON at all' }
    const before = text.slice(0, Number(at[1])).split('\n')
    return { ok: false, error: `error at line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}` }
  }
}

// One remote command reads the active config and every new default beside it, so the
// review adds one round trip to the downtime window, not one per file.
const READ_ALL = [
  'f="$1"; m="$2"; shift 2',
  'if [ -r "$f" ]; then printf "%s active\\n" "$m"; cat "$f"; else printf "%s missing\\n" "$m"; fi',
  'for s in "$@"; do if [ -f "$f$s" ]; then printf "\\n%s default %s\\n" "$m" "$s"; cat "$f$s"; fi; done',
  'true',
].join('\n')

/** Splits the output of READ_ALL into its sections: `active` and `default <suffix>`. */
function splitSections(text: string, marker: string): Map<string, string> {
  const out = new Map<string, string>()
  let key: string | undefined
  let lines: string[] = []
  const flush = () => {
    if (key !== undefined) out.set(key, lines.join('\n'))
  }
  for (const line of text.split('\n')) {
    if (line.startsWith(`${marker} `)) {
      flush()
      key = line.slice(marker.length + 1)
      lines = []
    } else lines.push(line)
  }
  flush()
  return out
}

/** Reviews the configuration on a host after an install. Read-only. */
export async function reviewConfig(
  transport: Transport,
  host: Host,
  configPath: string,
  suffixes: readonly string[],
): Promise<ConfigReview> {
  const active = hostPath(host, configPath)
  const review: ConfigReview = { configPath, newDefaults: [], syntaxOk: true, obsoleteOptions: [], newOptions: [] }
  const marker = `--svcops-${randomBytes(6).toString('hex')}--`
  const result = await runCommand(transport, ['sh', '-c', READ_ALL, 'sh', active, marker, ...suffixes], {
    check: false,
    display: `review ${active}{${suffixes.join(',')}}`,
  })
  const sections = splitSections(result.stdout, marker)
  const activeText = sections.get('active')
  if (result.code !== 0 || activeText === undefined) {
    review.syntaxOk = false
    review.syntaxError = `the active config ${configPath} cannot be read${result.stderr.trim() ? `: ${result.stderr.trim()}` : ''}`
    return review
  }
  const parsed = parseJson(activeText)
  if (!parsed.ok) {
    review.syntaxOk = false
    review.syntaxError = `${configPath} is not valid JSON: ${parsed.error}`
  }
  const activeKeys = new Set(parsed.ok ? optionPaths(parsed.value) : [])
  for (const suffix of suffixes) {
    const text = sections.get(`default ${suffix}`)
    if (text === undefined) continue
    const dflt = parseJson(text)
    review.newDefaults.push({
      path: configPath + suffix,
      diff:
        dflt.ok && parsed.ok
          ? reviewDiff(parsed.value, dflt.value)
          : `(no diff: ${parsed.ok ? configPath + suffix : configPath} is not valid JSON, and its lines may hold secrets)`,
    })
    if (dflt.ok && parsed.ok) {
      const defaultKeys = new Set(optionPaths(dflt.value))
      review.obsoleteOptions.push(
        ...[...activeKeys].filter((k) => !defaultKeys.has(k) && ![...defaultKeys].some((d) => d.startsWith(`${k}.`))),
      )
      review.newOptions.push(...[...defaultKeys].filter((k) => !activeKeys.has(k) && ![...activeKeys].some((a) => a.startsWith(`${k}.`))))
    }
  }
  review.obsoleteOptions = review.obsoleteOptions.map(shownPath)
  review.newOptions = review.newOptions.map(shownPath)
  for (const option of review.obsoleteOptions)
    events.warn(`${configPath}: option '${option}' is set but the new default configuration no longer has it.`, host.name)
  for (const d of review.newDefaults)
    events.info(`${d.path}: new default configuration left beside the kept ${configPath} (diff in the report).`, host.name)
  return review
}
