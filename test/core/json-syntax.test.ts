/** The position of a JSON syntax error is ours, computed from the text, whatever V8's message says. */
import { describe, expect, it } from 'vitest'
import { describeJsonSyntaxError, findJsonSyntaxError } from '../../src/core/json-syntax.ts'

describe('findJsonSyntaxError', () => {
  it.each([
    ['{\n  "listen": {,\n}', { line: 2, column: 14, found: '","', expected: "a property name or '}'" }],
    ['{"a": 1,}', { line: 1, column: 9, found: '"}"', expected: "a property name or '}'" }],
    ['{"a" 1}', { line: 1, column: 6, found: '"1"', expected: "':' after the property name" }],
    ['[1, 2', { line: 1, column: 6, found: 'the end of the text', expected: "',' or ']'" }],
    ['{"a": tru}', { line: 1, column: 10, found: '"}"', expected: '"true"' }],
    ['{"a": 01}', { line: 1, column: 8, found: '"1"', expected: "',' or '}'" }],
    ['{"a": "x\ty"}', { line: 1, column: 9, found: '"\\t"', expected: 'an escaped control character (\\n, \\t, \\u00XX)' }],
    ['{"a": "\\q"}', { line: 1, column: 9, found: '"q"', expected: 'an escape character (" \\ / b f n r t u)' }],
    ['{} x', { line: 1, column: 4, found: '"x"', expected: 'the end of the text' }],
    ['', { line: 1, column: 1, found: 'the end of the text', expected: 'a value' }],
  ])('%j: %j', (text, error) => {
    expect(() => JSON.parse(text) as unknown).toThrow(SyntaxError)
    expect(findJsonSyntaxError(text)).toEqual(error)
  })

  it.each(['{}', '[]', ' {"a": [1, -2.5e+3, true, false, null, "\\u00e9\\n"]} ', '"x"', '0'])('accepts %j, as JSON.parse does', (text) => {
    expect(() => JSON.parse(text) as unknown).not.toThrow()
    expect(findJsonSyntaxError(text)).toBeUndefined()
  })

  it('says it in one sentence', () => {
    expect(describeJsonSyntaxError('{\n  "listen": {,\n}')).toBe(`line 2, column 14: expected a property name or '}', found ","`)
  })
})
