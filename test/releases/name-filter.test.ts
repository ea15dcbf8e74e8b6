/** The scanner's byte prefilter: it must never miss a name (a miss is a finding lost in CI). */
import { describe, expect, it } from 'vitest'
import { LONG_NAME, NameFilter } from '../../src/releases/name-filter.ts'

const NAMES = [
  'AlignedData',
  'mPTS',
  'IncomingRequest',
  'sendRequest',
  'PipelineSystemControllerInterfaceFactory',
  'getBuildInfo',
  'mDebugVideo',
  'mDebugAudio',
]

describe('NameFilter', () => {
  const filter = new NameFilter(NAMES)
  const cases: [string, string, boolean][] = [
    ['a long name alone', 'AlignedData', true],
    ['a long name at the very start', 'AlignedData::DataFrame f;', true],
    ['a long name at the very end', 'using X = AlignedData', true],
    ['the longest name', 'auto f = PipelineSystemControllerInterfaceFactory();', true],
    ['two long names sharing their last block', 'x.mDebugAudio = 1;', true],
    ['a short name (anchored on its capitals)', 'frame.mPTS = 0;', true],
    ['a short name at the start', 'mPTS', true],
    ['a short name whose anchor appears first without its prefix', 'PTS xPTS then mPTS', true],
    ['the anchor without its prefix only', 'uint64_t PTS = xPTS;', false],
    ['a long name cut short by the end', 'auto r = IncomingReques', false],
    ['a look-alike missing one letter', 'AlignedDat a; sendReqest(); getBuildInf();', false],
    ['nothing', 'int main() { return 0; }', false],
    ['empty', '', false],
  ]
  it.each(cases)('%s', (_name, text, expected) => {
    expect(filter.test(Buffer.from(text, 'latin1'))).toBe(expected)
  })

  it('looks only at the first `length` bytes of a reused buffer', () => {
    const buffer = Buffer.from('int x = 0;  frame.mPTS = 1; AlignedData d;', 'latin1')
    expect(filter.test(buffer, 10)).toBe(false)
    expect(filter.test(buffer, 22)).toBe(true)
    expect(filter.test(buffer, 21)).toBe(false) // `mPTS` cut after `mPT`
    expect(filter.test(Buffer.from('AlignedData', 'latin1'), 10)).toBe(false)
  })

  it('works with only short or only long names, and with none', () => {
    expect(new NameFilter(['mPTS']).test(Buffer.from('a.mPTS'))).toBe(true)
    expect(new NameFilter(['sendRequest']).test(Buffer.from('a.sendRequest()'))).toBe(true)
    expect(new NameFilter(['sendRequest']).test(Buffer.from('a.mPTS'))).toBe(false)
    expect(new NameFilter([]).test(Buffer.from('anything at all'))).toBe(false)
  })

  it(`agrees with a plain substring search on random text (names of 1 to 40 bytes, threshold ${LONG_NAME})`, () => {
    // A small alphabet makes near-misses and overlapping partial matches common.
    let seed = 7
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    const alphabet = 'abAB_:mP '
    const word = (n: number): string => Array.from({ length: n }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')
    for (let round = 0; round < 300; round++) {
      const names = Array.from({ length: 1 + Math.floor(random() * 5) }, () => word(1 + Math.floor(random() * (round % 3 === 0 ? 40 : 12))))
      const filter = new NameFilter(names)
      for (let t = 0; t < 20; t++) {
        let text = word(Math.floor(random() * 200))
        if (random() < 0.3) {
          const at = Math.floor(random() * (text.length + 1))
          text = text.slice(0, at) + (names[Math.floor(random() * names.length)] ?? '') + text.slice(at)
        }
        expect(filter.test(Buffer.from(text, 'latin1')), `${JSON.stringify(names)} in ${JSON.stringify(text)}`).toBe(
          names.some((n) => text.includes(n)),
        )
      }
    }
  })
})
