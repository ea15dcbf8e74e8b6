/**
 * The system controller's pre-shared key: generation and strength check. The CLI (`svcops psk`),
 * `svcops migrate env` and the Pulumi program all call these, so one rule decides everywhere.
 *
 * Entropy estimate (conservative, documented in docs/releases.md):
 *  1. Character pool: the sum of the classes present (26 lower, 26 upper, 10 digits, 33 other
 *     printable ASCII; anything else counts as 64 more). A random character is worth at most
 *     log2(pool) bits.
 *  2. Observed spread: the Shannon entropy of the key's own character distribution, in bits per
 *     character. A random character is worth at most that much, which penalises keys that reuse
 *     few characters. Each free character counts min(1., 2.).
 *  3. Patterns count as what it costs to guess them, not per character: a dictionary word
 *     (after undoing common l33t substitutions) counts log2(dictionary size) + 1 bits; a run of
 *     one repeated character, an alphabet or digit sequence, or a keyboard walk counts
 *     log2(pool) + log2(length) bits; a key that is a shorter block repeated counts as the block.
 *  Refused (each reason one sentence, never the key): fewer than MIN_PSK_LENGTH characters,
 *  fewer than MIN_DISTINCT distinct characters, a repeated block, a run of 6 or more identical
 *  characters, a keyboard or alphabet sequence of 6 or more, a dictionary word of 5 or more
 *  letters, or an estimate below MIN_PSK_BITS (128).
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { BadInputError } from '../core/errors.ts'
import { registerSecret } from '../core/redact.ts'

/** Minimum estimated entropy of an accepted key, in bits. */
export const MIN_PSK_BITS = 128
/** Shortest accepted key. */
export const MIN_PSK_LENGTH = 24
/** Fewest distinct characters an accepted key has. */
export const MIN_DISTINCT = 10
/** Bits of a generated key unless asked for more. */
export const DEFAULT_PSK_BITS = 256

const KEYBOARD_ROWS = ['`1234567890-=', 'qwertyuiop[]\\', "asdfghjkl;'", 'zxcvbnm,./', 'abcdefghijklmnopqrstuvwxyz', '01234567890']

// Common passwords and words found in keys typed by people, plus this product's own vocabulary.
const WORDS = `password passw0rd secret secrets admin administrator root login letmein welcome changeme default
master dragon monkey shadow sunshine princess football baseball superman batman trustno1 iloveyou
qwerty azerty hello world test testing example sample demo guest user public private system
controller control panel ingest pipeline stream streams render rendering engine media video audio
production product studio camera broadcast live server service settings config token access
session secure security key keys shared preshared summer winter spring autumn january february
march april june july august september october november december monday friday weekend
love lovely happy flower orange purple yellow silver golden diamond computer internet network
pass word svcops change please open sesame alpha bravo charlie delta echo foxtrot tango whisky
zulu omega apple banana cherry lemon mango coffee pizza chocolate cookie cheese money
freedom dream tiger eagle falcon hunter killer ninja pirate wizard magic jordan michael
thomas jessica ashley daniel matthew andrew joshua robert charles william`
  .split(/\s+/)
  .filter((w) => w.length >= 4)
const DICTIONARY = new Set(WORDS)
const LONGEST_WORD = Math.max(...WORDS.map((w) => w.length))

const LEET: Record<string, string> = { '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', $: 's', '!': 'i', '|': 'l' }

export interface PskAssessment {
  /** True when the key may be used. */
  ok: boolean
  /** Estimated entropy in bits (rounded down). */
  bits: number
  /** Why it is refused, one sentence each; never contains the key. */
  reasons: string[]
}

/**
 * Generates a printable PSK from the operating system's CSPRNG (base64url: letters, digits,
 * `-` and `_`), at least 256 bits, and registers it for redaction before returning it.
 */
export function generatePsk(bits: number = DEFAULT_PSK_BITS): string {
  if (!Number.isInteger(bits) || bits < DEFAULT_PSK_BITS || bits > 4096) {
    throw new BadInputError(`The PSK size ${String(bits)} bits is not valid: expected a whole number from ${DEFAULT_PSK_BITS} to 4096.`)
  }
  // Rejection sampling: a random key that happens to spell a long word is drawn again, so every
  // generated key passes assessPsk (the loss of entropy is negligible).
  for (;;) {
    const key = randomBytes(Math.ceil(bits / 8)).toString('base64url')
    if (assessPsk(key).ok) return registerSecret(key)
  }
}

function poolSize(value: string): number {
  let pool = 0
  if (/[a-z]/.test(value)) pool += 26
  if (/[A-Z]/.test(value)) pool += 26
  if (/[0-9]/.test(value)) pool += 10
  if (/[!-/:-@[-`{-~]/.test(value)) pool += 33
  if (/[^\x21-\x7e]/.test(value)) pool += 64
  return Math.max(pool, 1)
}

function shannonPerChar(value: string): number {
  const counts = new Map<string, number>()
  for (const ch of value) counts.set(ch, (counts.get(ch) ?? 0) + 1)
  let h = 0
  for (const n of counts.values()) {
    const p = n / value.length
    h -= p * Math.log2(p)
  }
  return h
}

interface Pattern {
  start: number
  end: number
  kind: 'word' | 'run' | 'sequence'
  bits: number
}

function findRuns(chars: string[], pool: number): Pattern[] {
  const out: Pattern[] = []
  let i = 0
  while (i < chars.length) {
    let j = i + 1
    while (j < chars.length && chars[j] === chars[i]) j++
    if (j - i >= 3) out.push({ start: i, end: j, kind: 'run', bits: Math.log2(pool) + Math.log2(j - i) })
    i = j
  }
  return out
}

function findSequences(chars: string[], pool: number): Pattern[] {
  const lower = chars.map((c) => c.toLowerCase())
  const out: Pattern[] = []
  let i = 0
  while (i < lower.length - 2) {
    let best = 0
    for (const row of KEYBOARD_ROWS) {
      for (const dir of [1, -1]) {
        let len = 1
        let at = row.indexOf(lower[i] ?? '')
        while (at >= 0 && i + len < lower.length) {
          const next = row[at + dir]
          if (next === undefined || lower[i + len] !== next) break
          at += dir
          len++
        }
        best = Math.max(best, len)
      }
    }
    if (best >= 3) {
      out.push({ start: i, end: i + best, kind: 'sequence', bits: Math.log2(pool) + Math.log2(best) })
      i += best
    } else i++
  }
  return out
}

function findWords(chars: string[]): Pattern[] {
  const plain = chars.map((c) => LEET[c] ?? c.toLowerCase()).join('')
  const out: Pattern[] = []
  let i = 0
  while (i < plain.length) {
    let found = 0
    for (let len = Math.min(LONGEST_WORD, plain.length - i); len >= 4; len--) {
      if (DICTIONARY.has(plain.slice(i, i + len))) {
        found = len
        break
      }
    }
    if (found) {
      out.push({ start: i, end: i + found, kind: 'word', bits: Math.log2(DICTIONARY.size) + 1 })
      i += found
    } else i++
  }
  return out
}

/** The shortest block that, repeated, makes up the whole key (undefined when there is none). */
function repeatedBlock(value: string): number | undefined {
  for (let len = 1; len <= value.length / 2; len++) {
    if (value.length % len === 0 && value.slice(0, len).repeat(value.length / len) === value) return len
  }
  return undefined
}

/** Estimates a key's entropy by the method described at the top of this file. */
function estimateBits(chars: string[], patterns: Pattern[]): number {
  const pool = poolSize(chars.join(''))
  const perChar = Math.min(Math.log2(pool), shannonPerChar(chars.join('')))
  const covered = new Array<boolean>(chars.length).fill(false)
  let bits = 0
  // Longest patterns first; overlapping shorter ones add nothing.
  for (const p of [...patterns].sort((a, b) => b.end - b.start - (a.end - a.start))) {
    if (covered.slice(p.start, p.end).some(Boolean)) continue
    for (let k = p.start; k < p.end; k++) covered[k] = true
    bits += p.bits
  }
  bits += covered.filter((c) => !c).length * perChar
  return bits
}

/** Assesses a PSK: estimated bits and every reason it is refused. The key is never echoed. */
export function assessPsk(value: string): PskAssessment {
  const chars = [...value]
  const reasons: string[] = []
  if (chars.length < MIN_PSK_LENGTH) reasons.push(`The key has ${chars.length} characters; at least ${MIN_PSK_LENGTH} are required.`)
  const distinct = new Set(chars).size
  if (distinct < MIN_DISTINCT)
    reasons.push(`The key uses only ${distinct} distinct character${distinct === 1 ? '' : 's'}; at least ${MIN_DISTINCT} are required.`)
  const pool = poolSize(value)
  const block = repeatedBlock(value)
  const patterns = [...findRuns(chars, pool), ...findSequences(chars, pool), ...findWords(chars)]
  let bits = estimateBits(chars, patterns)
  if (block !== undefined) {
    reasons.push(`The key is a block of ${block} character${block === 1 ? '' : 's'} repeated ${chars.length / block} times.`)
    bits = Math.min(
      bits,
      estimateBits(
        chars.slice(0, block),
        patterns.filter((p) => p.end <= block),
      ) + Math.log2(chars.length / block),
    )
  }
  const longRun = patterns.find((p) => p.kind === 'run' && p.end - p.start >= 6)
  if (longRun) reasons.push(`The key repeats one character ${longRun.end - longRun.start} times in a row at position ${longRun.start + 1}.`)
  const longSeq = patterns.find((p) => p.kind === 'sequence' && p.end - p.start >= 6)
  if (longSeq)
    reasons.push(
      `The key contains a keyboard or alphabet sequence of ${longSeq.end - longSeq.start} characters at position ${longSeq.start + 1}.`,
    )
  const words = patterns.filter((p) => p.kind === 'word' && p.end - p.start >= 5)
  if (words.length)
    reasons.push(
      `The key contains ${words.length === 1 ? 'a dictionary word' : `${words.length} dictionary words`} (at position ${words.map((w) => w.start + 1).join(', ')}).`,
    )
  const rounded = Math.floor(bits)
  if (rounded < MIN_PSK_BITS) reasons.push(`The key's estimated entropy is ${rounded} bits; at least ${MIN_PSK_BITS} are required.`)
  return { ok: reasons.length === 0, bits: rounded, reasons }
}

/**
 * Throws a BadInputError naming `field` and the first reason when the key is refused. The message
 * never contains the key; the hint is the command that makes a good one.
 */
export function assertStrongPsk(value: string, field: string): void {
  const { ok, reasons, bits } = assessPsk(value)
  if (ok) return
  const first = (reasons[0] ?? `The key's estimated entropy is ${bits} bits.`).replace(/^The key/, 'the key').replace(/\.$/, '')
  throw new BadInputError(`${field}: the pre-shared key is too weak to use: ${first}.`, 'Generate a new one with: svcops psk generate')
}

/**
 * Reads a PSK to check: from the environment variable `envVar`, else from stdin (a pipe or a
 * file, never a terminal, so the key is not echoed). Only the final line break is removed.
 * The key is registered for redaction before it is returned.
 */
export async function readPskInput(envVar?: string): Promise<string> {
  if (envVar !== undefined) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(envVar))
      throw new BadInputError(`--env-var '${envVar}' is not an environment variable name; expected letters, digits and _.`)
    const value = process.env[envVar]
    if (!value) throw new BadInputError(`The environment variable ${envVar} is not set or empty; expected the pre-shared key in it.`)
    return registerSecret(value)
  }
  if (process.stdin.isTTY)
    throw new BadInputError(
      'No key on stdin: pipe the pre-shared key in (svcops psk check < FILE) or name a variable with --env-var; it is never read from the command line.',
    )
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Buffer))
  const value = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '')
  if (!value) throw new BadInputError('stdin is empty: expected the pre-shared key.')
  return registerSecret(value)
}

/** Writes a key to a new file with mode 0600; refuses to overwrite an existing file. */
export function writePskFile(path: string, key: string): void {
  try {
    writeFileSync(path, `${key}\n`, { mode: 0o600, flag: 'wx' })
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EEXIST') throw new BadInputError(`--out ${path} already exists; expected a new file (svcops never overwrites a key).`)
    throw new BadInputError(`--out ${path} cannot be written: ${code ?? String(error)}.`)
  }
}
