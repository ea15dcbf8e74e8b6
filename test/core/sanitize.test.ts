/**
 * The sanitizer, property-tested on generated text: strings built from printable text of several
 * scripts, emoji, C0 and C1 controls, DEL, bidi and zero-width format characters, tag characters,
 * line separators, real escape sequences (OSC 52, CSI, SGR) and chat mention syntax. Whatever goes
 * in, nothing a terminal acts on comes out, nothing printable is lost, and printable text is untouched.
 */
import { describe, expect, it } from 'vitest'
import {
  escapeJsonControls,
  neutralizeMentions,
  sanitizeDeep,
  sanitizeLine,
  sanitizeText,
  stringifyForTerminal,
} from '../../src/core/sanitize.ts'
import { random } from '../support/random.ts'

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String.fromCodePoint(from + i))
const PRINTABLE = [...range(0x20, 0x7e).filter((c) => c !== '\\'), 'é', 'ß', 'ž', 'Ω', 'ж', 'ש', 'ع', '中', '文', '𝄞', '😀', '🎬', '̀', '✓']
const C0 = range(0x00, 0x1f)
const C1 = [...range(0x7f, 0x9f)]
const FORMAT = [
  '\u00ad',
  '\u061c',
  '\u200b',
  '\u200c',
  '\u200d',
  '\u200e',
  '\u200f',
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2060',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\ufeff',
  '\u{e0001}',
  '\u{e0041}',
]
const SEPARATORS = ['\u2028', '\u2029']
const SEQUENCES = [
  '\x1b]52;c;cm0gLXJmIH4=\x07', // OSC 52: write the clipboard
  '\x1b]0;title\x07', // OSC 0: set the window title
  '\x1b[2K\r', // erase the line, back to its start
  '\x1b[32m✓ all good\x1b[0m',
  '\x1b[1A\x1b[999D',
  '\u009b31m', // C1 CSI
  '\x1bP+q\x07', // DCS
]
const MENTIONS = [
  '<!channel>',
  '<!here>',
  '<!everyone>',
  '<@U024BE7LH>',
  '<#C024BE7LR>',
  '<!subteam^S123>',
  '@channel',
  '@here',
  '@all',
  '@Everyone',
  '<https://evil.example|click>',
]

/** A string of up to `max` pieces drawn from every pool (no backslash of its own: see `decode`). */
function generate(next: () => number, max = 40): string {
  const pools = [PRINTABLE, PRINTABLE, PRINTABLE, C0, C1, FORMAT, SEPARATORS, SEQUENCES, MENTIONS]
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T
  let out = ''
  for (let n = Math.floor(next() * max); n > 0; n--) out += pick(pick(pools))
  return out
}

/** The inverse of the visible escapes, for text that had no backslash of its own. */
function decode(text: string): string {
  return text.replace(/\\(n|r|t|x[0-9a-f]{2}|u\{[0-9a-f]+\}|u[0-9a-f]{4})/g, (_, e: string) => {
    if (e === 'n') return '\n'
    if (e === 'r') return '\r'
    if (e === 't') return '\t'
    const hex = e.startsWith('u{') ? e.slice(2, -1) : e.slice(1)
    return String.fromCodePoint(parseInt(hex, 16))
  })
}

const ACTIVE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u
const ACTIVE_BUT_LINES = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u
const RUNS = 3000

describe('sanitizer, on generated input', () => {
  it.each([1, 2, 3])('sanitizeLine: no control character, one line, nothing lost, idempotent (seed %i)', (seed) => {
    const next = random(seed)
    for (let i = 0; i < RUNS; i++) {
      const input = generate(next)
      const out = sanitizeLine(input)
      expect(out, JSON.stringify(input)).not.toMatch(ACTIVE)
      expect(out).not.toContain('\n')
      expect(decode(out), JSON.stringify(input)).toBe(input)
      expect(sanitizeLine(out)).toBe(out)
    }
  })

  it.each([4, 5])('sanitizeText: lines and tabs kept, every other control escaped, nothing lost (seed %i)', (seed) => {
    const next = random(seed)
    for (let i = 0; i < RUNS; i++) {
      const input = generate(next)
      const out = sanitizeText(input)
      expect(out, JSON.stringify(input)).not.toMatch(ACTIVE_BUT_LINES)
      expect(out.split('\n').length).toBe(input.split('\n').length)
      expect(decode(out)).toBe(input)
    }
  })

  it('leaves printable text of any script as it is', () => {
    const next = random(6)
    for (let i = 0; i < RUNS; i++) {
      const pick = () => PRINTABLE[Math.floor(next() * PRINTABLE.length)] as string
      const input = Array.from({ length: Math.floor(next() * 40) }, pick).join('')
      expect(sanitizeLine(input)).toBe(input)
    }
    expect(sanitizeLine('C:\\path\\to')).toBe('C:\\path\\to')
  })

  it('escapes visibly, the way the issue shows them', () => {
    expect(sanitizeLine('a\x1b]52;c;eA==\x07b')).toBe('a\\x1b]52;c;eA==\\x07b')
    expect(sanitizeLine('x\u202ey\u009b\x7f\nz')).toBe('x\\u202ey\\x9b\\x7f\\nz')
    expect(sanitizeLine('tag\u{e0041}')).toBe('tag\\u{e0041}')
    expect(sanitizeText('one\r\ntwo\tthree')).toBe('one\\r\ntwo\tthree')
  })

  it.each([7, 8])('JSON for terminals: the same value for a parser, no raw control in the text (seed %i)', (seed) => {
    const next = random(seed)
    for (let i = 0; i < RUNS; i++) {
      const value = { [generate(next, 5)]: [generate(next), { nested: generate(next) }], n: i }
      const text = stringifyForTerminal(value, 2)
      expect(text).not.toMatch(ACTIVE_BUT_LINES)
      expect(JSON.parse(text)).toEqual(value)
      expect(escapeJsonControls(JSON.stringify(value))).toBe(stringifyForTerminal(value))
    }
  })

  it.each([9, 10])('chat text: no mention syntax survives (seed %i)', (seed) => {
    const next = random(seed)
    for (let i = 0; i < RUNS; i++) {
      const out = neutralizeMentions(sanitizeLine(generate(next)))
      expect(out).not.toMatch(/[<>]/)
      expect(out).not.toMatch(/@(channel|here|everyone|all)\b/i)
      expect(out).not.toMatch(ACTIVE)
    }
  })

  it('sanitizes every string of a value, keys included', () => {
    expect(sanitizeDeep({ 'host\n': ['a\x1b[2Kb', 3, null, { c: '\u202e' }] })).toEqual({
      'host\\n': ['a\\x1b[2Kb', 3, null, { c: '\\u202e' }],
    })
  })
})
