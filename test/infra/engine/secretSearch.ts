/**
 * Looks for a secret, or something derived from it, anywhere a secret must not be: every value of
 * every registration outside a secret, the stack outputs, the engine log a user sees, and the
 * program's own stdout/stderr. "Derived" means the common ways: base64/base64url/hex of it, MD5/SHA-1/SHA-256/
 * SHA-512 of it (hex and base64; alone, with a newline or NUL, and after any other value of the
 * run — or the JSON of a Secret's other keys — with or without a NUL between, which is how
 * checksum annotations are usually built), the JSON-escaped form, and the lines of a PEM body.
 */
import { createHash } from 'node:crypto'
import type { EngineRun } from './engine.ts'
import { at, plain, splitStrings, type Value } from './wire.ts'

export interface Finding {
  /** Where: `<urn> <path>`, `stack output <path>`, `log`, `stdout`, `stderr`. */
  where: string
  /** How it was derived (`sha256-hex(value+NUL)` ...), never the secret. */
  how: string
}

const ALGORITHMS = ['md5', 'sha1', 'sha256', 'sha512'] as const

function digests(text: string, label: string, into: Map<string, string>): void {
  for (const alg of ALGORITHMS) {
    const d = createHash(alg).update(text).digest()
    into.set(d.toString('hex'), `${alg}-hex(${label})`)
    into.set(d.toString('base64'), `${alg}-base64(${label})`)
    into.set(d.toString('base64url'), `${alg}-base64url(${label})`)
  }
}

// Public by nature although they travel inside Secrets next to keys: certificates and public keys.
const PUBLIC_PEM = /^-----BEGIN (CERTIFICATE|CERTIFICATE REQUEST|PUBLIC KEY)-----/

/**
 * Every secret of the run: each string inside a secret wrapper, in inputs or outputs, plus
 * `extra`; minus what is public anyway: `publicValues` (the plain values of the stack file, such
 * as the database host that sits in the database Secret next to the password) and certificates.
 */
export function secretsOf(run: EngineRun, extra: string[] = [], publicValues: Set<string> = new Set()): string[] {
  const all = new Set(extra)
  for (const r of run.registrations) {
    for (const s of [...splitStrings(r.inputs).secrets, ...splitStrings(r.outputs).secrets]) all.add(s)
  }
  // Short values (a boolean as text, a port) are not secrets anyone could find by searching.
  return [...all].filter((s) => s.length >= 12 && !publicValues.has(s) && !PUBLIC_PEM.test(s))
}

/** Every string of a stack file's plain configuration (what anyone with the repository reads). */
export function publicValuesOf(config: Record<string, unknown>): Set<string> {
  return new Set(splitStrings(JSON.parse(JSON.stringify(config)) as Value).visible.map((v) => v.value))
}

/** Every place of the run where a secret or a value derived from it shows. */
export function findSecretDerivations(run: EngineRun, secrets: string[]): Finding[] {
  const visible: { where: string; value: string }[] = []
  for (const r of run.registrations) {
    for (const v of splitStrings(r.inputs).visible) visible.push({ where: `${r.urn} ${v.path}`, value: v.value })
    for (const v of splitStrings(r.outputs).visible) visible.push({ where: `${r.urn} (output) ${v.path}`, value: v.value })
  }
  for (const v of splitStrings(run.outputs).visible) visible.push({ where: `stack output ${v.path}`, value: v.value })
  // What the CLI shows without --debug. The SDK's own debug lines ("RegisterResource RPC finished
  // ... resp: ...") print responses with secret values; `pulumi up --debug` shows them (docs/deploy.md).
  for (const l of run.logs.filter((x) => x.severity !== 'debug')) visible.push({ where: `log (${l.severity})`, value: l.message })
  visible.push({ where: 'stdout', value: run.stdout }, { where: 'stderr', value: run.stderr })

  const texts = new Set(visible.map((v) => v.value))
  // A Secret's other keys as JSON: what a checksum of "the config plus the password" hashes first.
  for (const r of run.registrations.filter((x) => x.type === 'kubernetes:core/v1:Secret')) {
    const data = (at(plain(r.inputs), 'stringData') ?? at(plain(r.inputs), 'data') ?? {}) as Record<string, Value>
    for (const key of Object.keys(data)) texts.add(JSON.stringify(Object.fromEntries(Object.entries(data).filter(([k]) => k !== key))))
  }
  const findings: Finding[] = []
  secrets.forEach((secret, i) => {
    const name = `secret #${i + 1}`
    const contained = new Map<string, string>([
      [secret, name],
      [Buffer.from(secret).toString('base64'), `base64(${name})`],
      [Buffer.from(secret).toString('base64url'), `base64url(${name})`],
      [Buffer.from(secret).toString('hex'), `hex(${name})`],
      [JSON.stringify(secret).slice(1, -1), `json(${name})`],
    ])
    for (const line of secret.split('\n').filter((l) => l.length >= 16 && !l.startsWith('-----')))
      contained.set(line, `pem line of ${name}`)
    const derived = new Map<string, string>()
    for (const [suffix, label] of [
      ['', name],
      ['\n', `${name}+LF`],
      ['\0', `${name}+NUL`],
    ] as const)
      digests(secret + suffix, label, derived)
    for (const other of texts) {
      if (other.length > 4096) continue
      digests(`${other}\0${secret}\0`, `value+NUL+${name}+NUL`, derived)
      digests(`${other}${secret}`, `value+${name}`, derived)
    }
    for (const v of visible) {
      for (const [form, how] of contained) if (v.value.includes(form)) findings.push({ where: v.where, how })
      for (const token of v.value.match(/[A-Za-z0-9+/_=-]{22,}/g) ?? []) {
        const how = derived.get(token)
        if (how) findings.push({ where: v.where, how })
      }
    }
  })
  return findings
}
