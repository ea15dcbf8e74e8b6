/**
 * "Review configuration changes" of the seed's upgrade steps. The package manager keeps a config
 * file the operator edited and leaves the package's new default beside it (`.dpkg-dist`,
 * `.dpkg-new`, `.rpmnew`). This finds those files, diffs them against the active config for the
 * report, syntax-checks the active config (the service reads JSON), and warns on options the active
 * config sets that the new default no longer has (likely obsolete or renamed).
 */
import { randomBytes } from 'node:crypto'
import type { RecordingHostConfig } from '../config/schema.ts'
import { events } from '../core/events.ts'
import { hostPath } from '../drivers/transports.ts'
import { runCommand, type Transport } from '../core/runner.ts'

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

const SECRETISH = /pass|secret|token|psk|key/i

/** Masks values of secret-looking keys in a diff, whatever the redaction registry knows. */
function maskSecrets(diff: string): string {
  return diff
    .split('\n')
    .map((line) => (SECRETISH.test(line) && /[:=]/.test(line) ? line.replace(/([:=]\s*).*$/, '$1[REDACTED]') : line))
    .join('\n')
}

/** Dot-paths of every leaf key of a JSON object. */
export function optionPaths(value: unknown, prefix = ''): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return prefix ? [prefix] : []
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => optionPaths(v, prefix ? `${prefix}.${k}` : k))
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (error) {
    return { ok: false, error: (error as Error).message }
  }
}

// One remote command reads the active config, every new default beside it and their diffs, so the
// review adds one round trip to the downtime window, not one per file.
const READ_ALL = [
  'f="$1"; m="$2"; shift 2',
  'if [ -r "$f" ]; then printf "%s active\\n" "$m"; cat "$f"; else printf "%s missing\\n" "$m"; fi',
  'for s in "$@"; do if [ -f "$f$s" ]; then printf "\\n%s default %s\\n" "$m" "$s"; cat "$f$s"; printf "\\n%s diff %s\\n" "$m" "$s"; diff -u "$f" "$f$s"; fi; done',
  'true',
].join('\n')

/** Splits the output of READ_ALL into its sections: `active`, `default <suffix>`, `diff <suffix>`. */
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
    review.newDefaults.push({ path: configPath + suffix, diff: maskSecrets(sections.get(`diff ${suffix}`) ?? '') })
    const dflt = parseJson(text)
    if (dflt.ok && parsed.ok) {
      const defaultKeys = new Set(optionPaths(dflt.value))
      review.obsoleteOptions.push(
        ...[...activeKeys].filter((k) => !defaultKeys.has(k) && ![...defaultKeys].some((d) => d.startsWith(`${k}.`))),
      )
      review.newOptions.push(...[...defaultKeys].filter((k) => !activeKeys.has(k) && ![...activeKeys].some((a) => a.startsWith(`${k}.`))))
    }
  }
  for (const option of review.obsoleteOptions)
    events.warn(`${configPath}: option '${option}' is set but the new default configuration no longer has it.`, host.name)
  for (const d of review.newDefaults)
    events.info(`${d.path}: new default configuration left beside the kept ${configPath} (diff in the report).`, host.name)
  return review
}
