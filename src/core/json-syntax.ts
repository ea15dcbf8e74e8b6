/**
 * Where a JSON text first breaks the grammar, found by a scan of our own: the message JSON.parse
 * throws is V8's, and its wording changes between Node versions (Node 24 appends its own line and
 * column), so an error shown to a person is built from this instead.
 */

/** The first syntax error of a JSON text: 1-based line and column, what was found and what was expected. */
export interface JsonSyntaxError {
  line: number
  column: number
  /** The character found there, quoted, or "the end of the text". */
  found: string
  expected: string
}

class Stop extends Error {
  readonly at: number
  readonly expected: string
  constructor(at: number, expected: string) {
    super(expected)
    this.at = at
    this.expected = expected
  }
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r'])
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't'])

/** The first syntax error of `text` (RFC 8259), or undefined when it is valid JSON. */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let i = 0
  const skip = (): void => {
    while (i < text.length && WHITESPACE.has(text[i] as string)) i++
  }
  const expect = (char: string, expected: string): void => {
    if (text[i] !== char) throw new Stop(i, expected)
    i++
  }
  const literal = (word: string): void => {
    for (const char of word) expect(char, `"${word}"`)
  }
  const digits = (): void => {
    if (!/[0-9]/.test(text[i] ?? '')) throw new Stop(i, 'a digit')
    while (/[0-9]/.test(text[i] ?? '')) i++
  }
  const number = (): void => {
    if (text[i] === '-') i++
    if (text[i] === '0') i++
    else digits()
    if (text[i] === '.') {
      i++
      digits()
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++
      if (text[i] === '+' || text[i] === '-') i++
      digits()
    }
  }
  const string = (): void => {
    expect('"', 'a string')
    for (;;) {
      const char = text[i]
      if (char === undefined) throw new Stop(i, "the closing '\"' of the string")
      if (char === '"') break
      if (char < ' ') throw new Stop(i, 'an escaped control character (\\n, \\t, \\u00XX)')
      if (char === '\\') {
        i++
        if (text[i] === 'u') {
          i++
          for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(text[i] ?? '')) throw new Stop(i, 'a hexadecimal digit of a \\u escape')
          continue
        }
        if (!ESCAPES.has(text[i] ?? '')) throw new Stop(i, 'an escape character (" \\ / b f n r t u)')
      }
      i++
    }
    i++
  }
  const value = (): void => {
    skip()
    const char = text[i]
    if (char === '{') {
      i++
      skip()
      if (text[i] === '}') {
        i++
        return
      }
      for (;;) {
        skip()
        if (text[i] !== '"') throw new Stop(i, "a property name or '}'")
        string()
        skip()
        expect(':', "':' after the property name")
        value()
        skip()
        if (text[i] === '}') break
        expect(',', "',' or '}'")
      }
      i++
    } else if (char === '[') {
      i++
      skip()
      if (text[i] === ']') {
        i++
        return
      }
      for (;;) {
        value()
        skip()
        if (text[i] === ']') break
        expect(',', "',' or ']'")
      }
      i++
    } else if (char === '"') string()
    else if (char === 't') literal('true')
    else if (char === 'f') literal('false')
    else if (char === 'n') literal('null')
    else if (char === '-' || /[0-9]/.test(char ?? '')) number()
    else throw new Stop(i, 'a value')
  }
  try {
    value()
    skip()
    if (i < text.length) throw new Stop(i, 'the end of the text')
    return undefined
  } catch (error) {
    if (!(error instanceof Stop)) throw error
    const before = text.slice(0, error.at).split('\n')
    const found = text[error.at]
    return {
      line: before.length,
      column: (before.at(-1)?.length ?? 0) + 1,
      found: found === undefined ? 'the end of the text' : JSON.stringify(found),
      expected: error.expected,
    }
  }
}

/** One sentence for a person: `line 2, column 14: expected a property name or '}', found ","`. */
export function describeJsonSyntaxError(text: string): string {
  const error = findJsonSyntaxError(text)
  if (!error) return 'the text is valid JSON'
  return `line ${error.line}, column ${error.column}: expected ${error.expected}, found ${error.found}`
}
