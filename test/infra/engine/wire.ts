/**
 * The values that cross the gRPC boundary between a Pulumi program and the engine, as plain data:
 * secrets, unknowns, output values and resource references are objects marked with the SDK's
 * signature keys (`@pulumi/pulumi/runtime/rpc.js` defines them; the engine uses the same ones).
 */

/** The key that marks a special value, and the signatures of the kinds of special value. */
export const SIG_KEY = '4dabf18193072939515e22adb298388d'
export const SECRET_SIG = '1b47061264138c4ac30d75fd1eb44270'
export const RESOURCE_SIG = '5cf8f73096256a8f31e491e813e4eb8e'
export const OUTPUT_SIG = 'd0e6a833031e9bbcd3f4e8bde6ca49a4'
/** What the engine sends for a value it does not know yet (a preview of a new resource). */
export const UNKNOWN = '04da6b54-80e4-46f7-96ec-b56ff0331ba9'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
export type Value = Json

function special(value: unknown, sig: string): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && (value as Record<string, unknown>)[SIG_KEY] === sig
}

/** Marks `value` secret, as the engine does for a provider's secret outputs. */
export function secret(value: Json): Json {
  return { [SIG_KEY]: SECRET_SIG, value }
}

export function isSecret(value: unknown): value is { value: Json } {
  return special(value, SECRET_SIG)
}

/** The value with every marker removed: secrets unwrapped, output values replaced by their value. */
export function plain(value: Json): Json {
  if (isSecret(value)) return plain(value.value)
  if (special(value, OUTPUT_SIG)) return value.value === undefined ? UNKNOWN : plain(value.value)
  if (Array.isArray(value)) return value.map(plain)
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v as Json)]))
  return value
}

/** Every string inside a secret (at any depth), and every string outside one, with its dot-path. */
export function splitStrings(value: Json, path = ''): { secrets: string[]; visible: { path: string; value: string }[] } {
  const secrets: string[] = []
  const visible: { path: string; value: string }[] = []
  const walk = (v: Json, p: string, inSecret: boolean): void => {
    if (isSecret(v) || (special(v, OUTPUT_SIG) && v.secret === true)) return walk((v as { value?: Json }).value ?? null, p, true)
    if (typeof v === 'string') {
      if (inSecret) secrets.push(v)
      else visible.push({ path: p, value: v })
    } else if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${p}[${i}]`, inSecret))
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, p ? `${p}.${k}` : k, inSecret)
  }
  walk(value, path, false)
  return { secrets, visible }
}

/** True when the value holds an unknown anywhere. */
export function hasUnknown(value: Json): boolean {
  if (value === UNKNOWN) return true
  if (special(value, OUTPUT_SIG) && value.value === undefined) return true
  if (Array.isArray(value)) return value.some(hasUnknown)
  if (value && typeof value === 'object') return Object.values(value).some(hasUnknown)
  return false
}

/** Reads a dot-path (`spec.template.metadata.annotations`) of a plain value. */
export function at(value: Json, path: string): Json | undefined {
  let v: Json | undefined = value
  for (const key of path.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined
    v = v[key]
  }
  return v
}
