/**
 * `svcops scan sdk`: finds C++ SDK usages that the crossed majors break. The symbols come from the
 * catalog (`sdk-symbol` and `custom-ca-cert` effects). Each file is read into one reused buffer and
 * asked first, still as bytes, whether it holds a candidate name at all (`NameFilter`); most files
 * don't, and cost little more than reading them. Only the others are decoded and lexed: comments,
 * string and character literals, raw strings and `#include <...>` names are skipped by one lexing
 * regular expression.
 */
import { closeSync, constants, openSync, readdirSync, readSync, statSync } from 'node:fs'
import { BadInputError } from '../core/errors.ts'
import { formatBytes } from '../core/units.ts'
import { NameFilter } from './name-filter.ts'
import { FIRST_LIVE_RELEASE, LIVE_CHANGES } from './live.ts'
import { assertUpgradeRange, majorOf } from './versions.ts'

/** Extensions of the C++ (and CUDA) files that are scanned. */
export const CPP_EXTENSIONS = [
  '.h',
  '.hh',
  '.hpp',
  '.hxx',
  '.h++',
  '.c',
  '.cc',
  '.cpp',
  '.cxx',
  '.c++',
  '.ipp',
  '.inl',
  '.tpp',
  '.cu',
  '.cuh',
]
const SKIP_DIRS = new Set(['.git', 'node_modules', '.svn', '.hg'])

export interface SdkSymbolRule {
  /** Qualified name as written in code (`AlignedData::DataFrame`, `mPTS`). */
  symbol: string
  rule: string
  release: string
  replacement: string
}

export interface SdkFinding {
  file: string
  line: number
  column: number
  symbol: string
  rule: string
  release: string
  replacement: string
}

export interface SdkScanResult {
  from: string
  to: string
  root: string
  files: number
  bytes: number
  findings: SdkFinding[]
}

/** The symbols broken by the majors after `from` up to `to`, oldest release first. */
export function sdkSymbolRules(from: string, to: string): SdkSymbolRule[] {
  const low = majorOf(from)
  const high = majorOf(to)
  const rules: SdkSymbolRule[] = []
  for (const c of LIVE_CHANGES) {
    if (c.major <= low || c.major > high) continue
    if (c.effect?.type !== 'sdk-symbol' && c.effect?.type !== 'custom-ca-cert') continue
    for (const symbol of c.effect.symbols) rules.push({ symbol, rule: c.id, release: c.release, replacement: c.effect.replacement })
  }
  return rules
}

/** Names that stay valid in `to` although a shorter name they start with is broken. */
export function sdkAllowedSymbols(from: string, to: string): string[] {
  return LIVE_CHANGES.filter((c) => c.major > majorOf(from) && c.major <= majorOf(to)).flatMap((c) =>
    c.effect?.type === 'sdk-symbol' ? (c.effect.except ?? []) : [],
  )
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** A compiled scanner for a set of symbol rules. */
export class SdkScanner {
  private readonly lexer: RegExp
  /** Whether a file can hold a finding at all: one of the names that start a broken symbol. */
  private readonly filter: NameFilter
  /**
   * Rules by full symbol; the longest symbol that prefixes a qualified name wins. An empty list
   * marks a name that stays valid although a shorter one is broken (`ControlDataReceiver::Settings`).
   */
  private readonly bySymbol = new Map<string, SdkSymbolRule[]>()
  /** Changed methods by type (`MediaReceiver` -> `start`), found through typed variables too. */
  private readonly methods = new Map<string, string[]>()

  readonly rules: SdkSymbolRule[]

  constructor(rules: SdkSymbolRule[], allowed: string[] = []) {
    this.rules = rules
    for (const a of allowed) this.bySymbol.set(a, [])
    for (const r of rules) if (!allowed.includes(r.symbol)) this.bySymbol.set(r.symbol, [...(this.bySymbol.get(r.symbol) ?? []), r])
    const heads = [...new Set(rules.map((r) => r.symbol.split('::')[0] ?? r.symbol))]
    const names = heads.map(escape).join('|') || '(?!)'
    this.filter = new NameFilter(heads)
    this.lexer = lexerFor(String.raw`(?<![\w$])(${names})(?![\w$])((?:\s*::\s*[A-Za-z_]\w*)*)`)
    for (const r of rules) {
      const [type, method, more] = r.symbol.split('::')
      if (type && method && more === undefined && /^[a-z]/.test(method)) this.methods.set(type, [...(this.methods.get(type) ?? []), method])
    }
  }

  /** Findings in one file's text (latin1, so columns are byte columns like other tools print). */
  scanText(text: string, file: string): SdkFinding[] {
    return this.filter.test(Buffer.from(text, 'latin1')) ? this.findIn(text, file) : []
  }

  /** Findings in the first `length` bytes of `bytes`, decoded only when they hold a candidate name. */
  scanBytes(bytes: Buffer, length: number, file: string): SdkFinding[] {
    return this.filter.test(bytes, length) ? this.findIn(bytes.toString('latin1', 0, length), file) : []
  }

  /** Findings in a file that holds a candidate name. */
  private findIn(text: string, file: string): SdkFinding[] {
    const found = new FoundNames(text, file)
    this.lexNames(text, found)
    if (found.typed.size) {
      const locateMember = locator(text)
      this.scanMemberCalls(text, found.typed, (at, rules) => found.add(at, rules, locateMember))
    }
    return found.findings.sort((a, b) => a.line - b.line || a.column - b.column)
  }

  /**
   * The lexing loop. It stays small on purpose: it runs once per comment, literal and name of every
   * candidate file, and V8 compiles it in ~15 ms on its compiler thread, where with the name
   * handling inlined that took ~40 ms (--trace-opt), all of it time the loop ran unoptimized. Names
   * are rare; `onName` handles them out of line.
   */
  private lexNames(text: string, found: FoundNames): void {
    // One expression for every file: no RegExp object is made per file.
    const lexer = this.lexer
    lexer.lastIndex = 0
    for (let m = lexer.exec(text); m !== null; m = lexer.exec(text)) {
      if (m[2] !== undefined) this.onName(text, m, found)
    }
  }

  /** A name the lexer matched, with the `::` chain after it: every broken symbol it starts. */
  private onName(text: string, m: RegExpExecArray, found: FoundNames): void {
    const head = m[2] ?? ''
    const parts = (m[3] ?? '').split('::').map((p) => p.trim())
    const chain = [head, ...parts.slice(1)]
    if (this.methods.has(head)) this.recordVariable(text, m.index, m.index + m[0].length, head, chain.length, found.typed)
    // Every component can start a broken name (`ControlDataReceiver::IncomingRequest` holds two).
    let offset = 0
    for (let i = 0; i < chain.length; i++) {
      if (i > 0) offset = m[0].indexOf(chain[i] ?? '', offset + (chain[i - 1]?.length ?? 0))
      let rules: SdkSymbolRule[] | undefined
      let n = chain.length
      for (; n > i && !rules; n--) rules = this.bySymbol.get(chain.slice(i, n).join('::'))
      if (!rules?.length) {
        if (rules) break
        continue
      }
      found.add(m.index + offset, rules)
      i = n
    }
  }

  /** Remembers `name` in `Type name`, `Type* name`, `ptr<Type> name` or `auto name = ...Type`. */
  private recordVariable(text: string, start: number, end: number, type: string, chainLength: number, typed: Map<string, string>): void {
    const before = /(?:auto|auto\s*[*&]+|const\s+auto\s*[*&]*)\s+([A-Za-z_]\w*)\s*=\s*(?:std::make_(?:shared|unique)\s*<\s*)?$/.exec(
      text.slice(Math.max(0, start - 80), start),
    )
    if (before?.[1]) typed.set(before[1], type)
    if (chainLength !== 1) return
    const after = /^\s*(?:>\s*)?(?:const\s*)?[*&\s]*([A-Za-z_]\w*)\s*[;=({,)[]/.exec(text.slice(end, end + 120))
    if (after?.[1] && after[1] !== 'const') typed.set(after[1], type)
  }

  /** Finds `variable.method(` and `variable->method(` for the variables of changed types. */
  private scanMemberCalls(text: string, typed: Map<string, string>, add: (at: number, rules: SdkSymbolRule[]) => void): void {
    const methods = [...new Set([...typed.values()].flatMap((t) => this.methods.get(t) ?? []))]
    const lexer = lexerFor(
      String.raw`(?<![\w$])(${[...typed.keys()].map(escape).join('|')})\s*(?:->|\.)\s*(${methods.map(escape).join('|')})\s*\(`,
    )
    for (let m = lexer.exec(text); m; m = lexer.exec(text)) {
      const variable = m[2]
      const method = m[3]
      if (variable === undefined || method === undefined) continue
      const rules = this.bySymbol.get(`${typed.get(variable) ?? ''}::${method}`)
      if (rules?.length) add(m.index + m[0].lastIndexOf(method), rules)
    }
  }
}

/** What `findIn` collects in one file: findings, and variables declared with a type whose methods changed. */
class FoundNames {
  readonly findings: SdkFinding[] = []
  /** Variable name -> type (`std::shared_ptr<MediaReceiver> mReceiver`). */
  readonly typed = new Map<string, string>()
  private readonly locate: (at: number) => [number, number]

  private readonly file: string

  constructor(text: string, file: string) {
    this.file = file
    this.locate = locator(text)
  }

  /** Findings of `rules` at offset `at`; `locate` for offsets that start over (a second pass). */
  add(at: number, rules: SdkSymbolRule[], locate = this.locate): void {
    const [line, column] = locate(at)
    for (const rule of rules)
      this.findings.push({
        file: this.file,
        line,
        column,
        symbol: rule.symbol,
        rule: rule.rule,
        release: rule.release,
        replacement: rule.replacement,
      })
  }
}

/**
 * The lexing expression: comments, raw strings, strings, char literals and include names are
 * consumed whole (in this order) before `identifiers` (whose groups start at 2) can match inside them.
 */
function lexerFor(identifiers: string): RegExp {
  return new RegExp(
    [
      // Comment and literal bodies are unrolled (`[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*`, not `(?:[^"\\\n]|\\[\s\S])*`):
      // one loop over plain characters instead of an alternation per character, ~1.6x faster lexing (measured).
      String.raw`\/\/[^\n\\]*(?:\\[\s\S][^\n\\]*)*`,
      String.raw`\/\*[\s\S]*?(?:\*\/|$)`,
      String.raw`(?:u8|[uUL])?R"([^()\\\s"]{0,16})\([\s\S]*?\)\1"`,
      String.raw`"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"`,
      String.raw`(?<![\w'])'[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*'`,
      String.raw`#[ \t]*(?:include|include_next|import)[ \t]*<[^>\n]*>`,
      identifiers,
    ].join('|'),
    'g',
  )
}

/** Line and column of increasing offsets, counting newlines only as far as asked. */
function locator(text: string): (at: number) => [number, number] {
  let line = 1
  let lineStart = 0
  let counted = 0
  return (at) => {
    if (at < counted) {
      line = 1
      lineStart = 0
      counted = 0
    }
    for (let nl = text.indexOf('\n', counted); nl !== -1 && nl < at; nl = text.indexOf('\n', nl + 1)) {
      line++
      lineStart = nl + 1
    }
    counted = at
    return [line, at - lineStart + 1]
  }
}

/** Every C++ file under `root`, sorted, skipping version-control and dependency folders. */
export function listCppFiles(root: string): string[] {
  const out: string[] = []
  // Paths are joined by hand: path.join normalizes each one again, a visible cost over a large tree.
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir || '/', { withFileTypes: true })) {
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name)) walk(`${dir}/${entry.name}`)
      } else if (entry.isFile()) {
        const dot = entry.name.lastIndexOf('.')
        if (dot > 0 && CPP_EXTENSIONS.includes(entry.name.slice(dot).toLowerCase())) out.push(`${dir}/${entry.name}`)
      }
    }
  }
  walk(treeBase(root))
  return out.sort()
}

/** `root` without trailing slashes: every listed path is `${treeBase(root)}/relative/path`. */
function treeBase(root: string): string {
  return root.replace(/\/+$/, '')
}

/**
 * Reads files through one reused buffer. readFileSync allocates a new buffer per file (and an fstat),
 * and thousands of short-lived external buffers cost more in garbage collection than the reading.
 */
class SourceReader {
  private buffer = Buffer.allocUnsafe(1 << 20)

  /** The bytes read by the last `read`. */
  get bytes(): Buffer {
    return this.buffer
  }

  /** Reads the whole file into `bytes` and returns its length. */
  read(file: string): number {
    let fd: number
    try {
      // O_NONBLOCK: a file replaced by a FIFO after it was listed reads as empty instead of hanging.
      fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK)
    } catch (error) {
      throw new BadInputError(`The file '${file}' cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`)
    }
    try {
      let length = 0
      for (;;) {
        if (length === this.buffer.length) {
          const bigger = Buffer.allocUnsafe(this.buffer.length * 2)
          this.buffer.copy(bigger)
          this.buffer = bigger
        }
        const n = readSync(fd, this.buffer, length, this.buffer.length - length, null)
        if (n === 0) break
        length += n
      }
      return length
    } finally {
      closeSync(fd)
    }
  }
}

/** A tree to scan: its files (sorted) and the scanner for a version range. */
export interface ScanJob {
  root: string
  from: string
  to: string
  files: string[]
  scanner: SdkScanner
}

/** Validates the range and lists the files (none is read yet). */
export function prepareScan(root: string, from: string, to: string): ScanJob {
  assertUpgradeRange(from, to, FIRST_LIVE_RELEASE, 'svcops scan sdk')
  let files: string[]
  try {
    files = readdirSync(root, { withFileTypes: true }) && listCppFiles(root)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOTDIR') {
      // A FIFO, socket or device would block the read or never end: only a regular file is scanned.
      if (!statSync(root).isFile())
        throw new BadInputError(`'${root}' is neither a directory nor a regular file (a FIFO, socket or device); expected C++ sources.`)
      files = [root]
    } else throw new BadInputError(`The directory '${root}' cannot be read: ${code ?? String(error)}.`)
  }
  return { root, from, to, files, scanner: scannerFor(from, to) }
}

/** The scanner for the majors crossed from `from` to `to`. */
export function scannerFor(from: string, to: string): SdkScanner {
  return new SdkScanner(sdkSymbolRules(from, to), sdkAllowedSymbols(from, to))
}

/** Scans every file of `job`: findings in file order, then by line and column. */
export function scanFiles(job: ScanJob): SdkScanResult {
  const reader = new SourceReader()
  const single = job.files.length === 1 && job.files[0] === job.root
  const prefix = treeBase(job.root).length + 1
  const findings: SdkFinding[] = []
  let bytes = 0
  for (const file of job.files) {
    const length = reader.read(file)
    bytes += length
    findings.push(...job.scanner.scanBytes(reader.bytes, length, single ? file : file.slice(prefix)))
  }
  return { from: job.from, to: job.to, root: job.root, files: job.files.length, bytes, findings }
}

/** Scans a directory (or one file) for SDK usages broken between `from` and `to`. */
export function scanSdk(root: string, from: string, to: string): SdkScanResult {
  return scanFiles(prepareScan(root, from, to))
}

/** The findings as `file:line:column: release symbol -> replacement` lines, grep-style. */
export function formatSdkFindings(result: SdkScanResult): string {
  const lines = result.findings.map((f) => `${f.file}:${f.line}:${f.column}: ${f.release} ${f.symbol} -> ${f.replacement} (${f.rule})`)
  lines.push(
    `${result.findings.length} finding${result.findings.length === 1 ? '' : 's'} in ${result.files} C++ files (${formatBytes(result.bytes)}), SDK ${result.from} -> ${result.to}.`,
  )
  return lines.join('\n')
}
