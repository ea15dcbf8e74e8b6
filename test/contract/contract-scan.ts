/**
 * The scan behind test/contract/contract.test.ts: the interface literals of the modules that talk
 * to the product (HTTP paths, files on its hosts, metric names), read from the sources with the
 * TypeScript parser, and the interfaces docs/contract.md lists. A literal is listed when some row
 * of the table, its placeholders (`<component>`, `{uuid}`, `svc`) filled with a sample, matches the
 * literal with each of its `${...}` read as "any text".
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'

/** An interface literal found in a source file. */
export interface FoundLiteral {
  file: string
  line: number
  /** The literal as written, each substitution shown as `${}`. */
  text: string
}

/**
 * The modules whose literals are the product's interfaces: the clients, the live and recording
 * systems, the doctor, the release helpers and the stack's defaults. The lab (not shipped) is not
 * read: it serves the contract, it does not rely on it.
 */
export const SCANNED = [
  'src/clients',
  'src/live',
  'src/recording',
  'src/doctor',
  'src/probe',
  // The Pulumi program's own CronJob (scheduledJobs.ts, jobRules.ts) holds svcops' paths, not the product's.
  'src/infra',
  'src/drivers/kubernetes.ts',
  'src/releases/versions.ts',
  'src/releases/auth.ts',
  'src/config/schema.ts',
  'src/config/checks.ts',
  'src/config/deploy.ts',
]

const SUB = '\uE000'

/** Files under the scanned folders. */
export function scannedFiles(root: string): string[] {
  const walk = (path: string): string[] =>
    statSync(path).isDirectory() ? readdirSync(path).flatMap((n) => walk(join(path, n))) : path.endsWith('.ts') ? [path] : []
  return SCANNED.flatMap((p) => walk(join(root, p))).filter((f) => !SVCOPS_OWN_FILES.some((own) => f.endsWith(own)))
}

/** Files of the scanned folders that hold only svcops' own paths (its CronJob's mounts and binaries). */
const SVCOPS_OWN_FILES = ['src/infra/scheduledJobs.ts', 'src/infra/jobRules.ts']

/** svcops' own paths and the operating system's, which are no interface of the product. */
function isSvcopsOwn(text: string): boolean {
  return /svcops/.test(text) || /^\/(tmp|dev|proc|usr)(\/|$)/.test(text)
}

/** What a literal's fixed text must look like to be an interface: a path on a host or a server, or a product metric's name. */
function isInterface(text: string): boolean {
  if (/\s/.test(text) || text.length < 3 || isSvcopsOwn(text)) return false
  const fixed = text.split(SUB).join('')
  // A path: starts with / (or a substitution then /), and has a word after a slash.
  if (/^(\uE000|\{api\})?\/[A-Za-z{]/.test(text) && /\/[a-z]/i.test(fixed)) return true
  // A metric of the product: `${prefix}_name` or svc_name.
  if (/^(\uE000|svc)_[a-z][a-z_]+$/.test(text)) return true
  return false
}

/** Every interface literal of one source text. */
export function literalsOf(file: string, source: string): FoundLiteral[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true)
  const found: FoundLiteral[] = []
  const add = (node: ts.Node, text: string): void => {
    if (isInterface(text))
      found.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: text.split(SUB).join('${}') })
  }
  const visit = (node: ts.Node): void => {
    // Import specifiers and doc comments are not interfaces.
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) add(node, node.text)
    else if (ts.isTemplateExpression(node)) add(node, [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(SUB))
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return found
}

/** The interfaces the table lists: the first column's code spans of every table row of the contract. */
export function listedInterfaces(markdown: string): string[] {
  const out: string[] = []
  for (const line of markdown.split('\n')) {
    if (!line.startsWith('|') || line.startsWith('|---')) continue
    const first = line.split('|')[1] ?? ''
    for (const m of first.matchAll(/`([^`]+)`/g)) out.push(m[1] ?? '')
  }
  return out
}

/** A row's text with its placeholders filled with a sample word, as a concrete interface. */
function sampleOf(listed: string): string {
  return listed
    .replace(/<[^>]+>/g, 'x')
    .replace(/\{[a-z_]+\}/g, 'x')
    .replace(/\bsvc(?=[_-])/g, 'x')
    .replace(/\[[A-Z]+\]\s*/g, '')
    .replace(/^(GET|POST|DELETE|PATCH|PUT)\s+/, '')
}

/** The literal as a pattern: each substitution any text, and `svc` the product prefix written out. */
function patternOf(literal: string): RegExp {
  // A declared placeholder (`{api}`, `{uuid}`) is a substitution too.
  const parts = literal
    .replace(/\{[a-z]+\}/g, '${}')
    .split('${}')
    .map((p) => p.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&').replace(/\bsvc(?=[_-])/g, 'x'))
  return new RegExp(`^${parts.join('.+')}(\\?.*)?$`)
}

/** The literals no row of the table matches. */
export function unlistedLiterals(found: FoundLiteral[], listed: string[]): FoundLiteral[] {
  const samples = listed.map(sampleOf).flatMap((s) => [s, s.split('?')[0] ?? s])
  return found.filter((f) => {
    const p = patternOf(f.text)
    return !samples.some((s) => p.test(s))
  })
}

/** Every interface literal of the scanned modules under `root`, paths relative to it. */
export function scanSources(root: string): FoundLiteral[] {
  return scannedFiles(root).flatMap((f) => literalsOf(relative(root, f), readFileSync(f, 'utf8')))
}
