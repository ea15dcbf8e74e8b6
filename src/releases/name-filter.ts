/**
 * Whether raw bytes contain any of a set of names, without decoding them into a string: the
 * scanner's first question for every file, which most files answer with no.
 *
 * Names of at least `LONG_NAME` bytes are found together by Wu–Manber: a shift table over 2-byte
 * blocks lets the search jump up to (shortest long name - 1) bytes at a time, and only windows ending
 * in a block that ends some name are compared. A shorter name would shrink every jump, so each short
 * name is searched alone (`Buffer.indexOf`, native) from its rarest byte on: `mPTS` is searched as
 * `PTS`, then the `m` before it is checked, because capitals are far rarer than `m` in C++ source.
 */

/** Names this long or longer go into the shared Wu–Manber search. */
export const LONG_NAME = 8

/** How common a byte is in source code: 2 lower-case letters and blanks, 1 punctuation and the rest, 0 capitals and digits. */
function commonness(byte: number): number {
  if ((byte >= 0x61 && byte <= 0x7a) || byte === 0x20 || byte === 0x09 || byte === 0x0a) return 2
  if ((byte >= 0x41 && byte <= 0x5a) || (byte >= 0x30 && byte <= 0x39)) return 0
  return 1
}

interface ShortName {
  /** The bytes from the rarest one to the end: what is searched. */
  anchor: Buffer
  /** The bytes before the anchor, compared where the anchor is found. */
  before: Buffer
}

export class NameFilter {
  /** Shortest long name: the window of the search. */
  private readonly window: number
  /** Per 2-byte block: how far the window may move when its last two bytes are that block. */
  private readonly shift: Uint8Array
  /** Per block that ends some long name's first `window` bytes: those names. */
  private readonly ending = new Map<number, Buffer[]>()
  private readonly short: ShortName[] = []

  constructor(names: readonly string[]) {
    const long = names.filter((n) => n.length >= LONG_NAME).map((n) => Buffer.from(n, 'latin1'))
    this.window = long.length ? Math.min(...long.map((n) => n.length)) : 0
    this.shift = new Uint8Array(1 << 16).fill(Math.max(0, this.window - 1))
    for (const name of long) {
      for (let j = 1; j < this.window; j++) {
        const block = ((name[j - 1] ?? 0) << 8) | (name[j] ?? 0)
        this.shift[block] = Math.min(this.shift[block] ?? 0, this.window - 1 - j)
      }
      const last = ((name[this.window - 2] ?? 0) << 8) | (name[this.window - 1] ?? 0)
      this.ending.set(last, [...(this.ending.get(last) ?? []), name])
    }
    for (const name of names.filter((n) => n.length > 0 && n.length < LONG_NAME)) {
      const bytes = Buffer.from(name, 'latin1')
      let rarest = 0
      for (let i = 1; i < bytes.length; i++) if (commonness(bytes[i] ?? 0) < commonness(bytes[rarest] ?? 0)) rarest = i
      this.short.push({ anchor: bytes.subarray(rarest), before: bytes.subarray(0, rarest) })
    }
  }

  /** Whether the first `length` bytes of `bytes` contain one of the names. */
  test(bytes: Buffer, length = bytes.length): boolean {
    if (this.window > 0 && this.hasLong(bytes, length)) return true
    if (!this.short.length) return false
    // A view of exactly `length` bytes: indexOf would search the rest of a reused buffer too.
    const view = length === bytes.length ? bytes : bytes.subarray(0, length)
    return this.short.some((s) => hasShort(view, s))
  }

  private hasLong(bytes: Buffer, length: number): boolean {
    const { window, shift } = this
    for (let end = window - 1; end < length;) {
      const block = ((bytes[end - 1] as number) << 8) | (bytes[end] as number)
      const jump = shift[block] as number
      if (jump > 0) {
        end += jump
        continue
      }
      const start = end - window + 1
      for (const name of this.ending.get(block) ?? []) {
        if (start + name.length > length) continue
        let k = 0
        while (k < name.length && bytes[start + k] === name[k]) k++
        if (k === name.length) return true
      }
      end++
    }
    return false
  }
}

function hasShort(bytes: Buffer, { anchor, before }: ShortName): boolean {
  for (let at = bytes.indexOf(anchor, before.length); at !== -1; at = bytes.indexOf(anchor, at + 1)) {
    let k = 0
    while (k < before.length && bytes[at - before.length + k] === before[k]) k++
    if (k === before.length) return true
  }
  return false
}
