/**
 * The docs and the CLI agree: every `svcops ...` command line of README.md and docs/*.md (in code
 * blocks and in inline code) names commands the CLI has and options those commands (or the program)
 * accept, and every option written alone in inline code (`--dry-run`) is one some command accepts.
 * The CLI is read from commander's program as `svcops` builds it, every group loaded, so a renamed
 * or removed option fails here, naming the page and line that still shows it.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Command, Option } from 'commander'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildProgram } from '../../src/commands/program.ts'
import { ROOT } from '../support/cli.ts'

const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).flatMap((f) => (f.endsWith('.md') ? [`docs/${f}`] : []))]

/**
 * Options of other programs that pages show in inline code on their own (the product's, the tools
 * svcops runs or documents): not svcops', and named here so that every other lone option is checked.
 */
const NOT_SVCOPS = new Set([
  '--settings-path', // the system controller's own flag (the seed), which svcops passes for 6.x
  '--target', // pulumi up --target
  '--path', // pulumi config set --path
  '--secret', // pulumi config set --secret
  '--refresh', // pulumi preview/up
  '--skip-preview', // pulumi up
  '--non-interactive', // pulumi
  '--stack', // pulumi --stack (svcops render has one too)
  '--force-script-chrootless', // dpkg
  '--root', // dpkg --root
  '--volatile', // systemd-nspawn
  '--ignore-scripts', // npm
  '--validate', // kubectl apply --validate=false
  '--max-semi-space-size', // node
  '--experimental-strip-types', // node
  '--no-experimental-strip-types', // node
  '--format', // pg_dump
  '--clean', // pg_restore
  '--if-exists', // pg_restore
  '--single-transaction', // pg_restore
  '--exit-on-error', // pg_restore
  '--no-owner', // pg_restore
  '--decrypt', // gpg
  '--verify', // gpg
  '--batch', // gpg (svcops upgrade has one too)
  '--homedir', // gpg
  '--import', // gpg
  '--armor', // gpg
  '--detach-sign', // gpg
  '--force-confdef', // dpkg
  '--force-confold', // dpkg
  '--force-downgrade', // dpkg
  '--force-not-root', // dpkg
  '--force-bad-path', // dpkg
  '--log', // dpkg
  '--use-list', // pg_restore
  '--status', // scripts/ssh2-binding.js
  '--scale', // bench/upgrade
  '--norc', // bash
  '--noprofile', // bash
  '--secrets-provider', // pulumi stack init
  '--provider', // pulumi import
  '--debug', // pulumi
  '--show-secrets', // pulumi
  '--exclude-protected', // pulumi destroy
])

interface Found {
  where: string
  text: string
}

const COMMAND_START =
  /^\s*(?:\$\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:sudo\s+(?:-\S+\s+(?:[a-z]\S*\s+)?)*)?(?:(?:npx|time|exec)\s+)?(?:\S*\/)?svcops(\s+[a-z-].*|\s*)$/

/** Every `svcops ...` command line of a page: in fenced code blocks (with `\` continuations) and in inline code. */
function commandLines(page: string): Found[] {
  const lines = readFileSync(join(ROOT, page), 'utf8').split('\n')
  const found: Found[] = []
  let inBlock = false
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i] ?? ''
    if (/^\s*(```|~~~)/.test(line)) {
      inBlock = !inBlock
      continue
    }
    const where = `${page}:${i + 1}`
    if (inBlock) {
      while (/\\\s*$/.test(line) && i + 1 < lines.length) line = line.replace(/\\\s*$/, ' ') + (lines[++i] ?? '')
      if (line.trim().startsWith('#')) continue
      // Where a command starts: the line, or after `&&`, `||`, `;`, a spaced pipe, `$(`; past a prompt,
      // variables, sudo, npx and a path. Elsewhere `svcops` is a word of printed output or a diagram.
      for (const segment of line.split(/&&|\|\||;|\s\|\s|\$\(/)) {
        const m = COMMAND_START.exec(segment)
        if (m) found.push({ where, text: `svcops${m[1] ?? ''}` })
      }
      continue
    }
    // In a table cell a pipe is written \|.
    for (const m of line.matchAll(/`(svcops\s+[^`]+)`/g)) found.push({ where, text: (m[1] ?? '').replace(/\\\|/g, '|') })
  }
  return found
}

/** Options written alone in inline code (`--dry-run`, `--metrics-file FILE`), outside code blocks. */
function loneOptions(page: string): Found[] {
  const lines = readFileSync(join(ROOT, page), 'utf8').split('\n')
  const found: Found[] = []
  let inBlock = false
  lines.forEach((line, i) => {
    if (/^\s*(```|~~~)/.test(line)) inBlock = !inBlock
    else if (!inBlock)
      for (const m of line.matchAll(/`(--[a-z][\w-]*)(?:[= ][^`]*)?`/g)) found.push({ where: `${page}:${i + 1}`, text: m[1] ?? '' })
  })
  return found
}

/** The words of a command line up to where the shell leaves svcops (a pipe, `&&`, a redirect, a comment). */
function wordsOf(text: string): string[] {
  const words: string[] = []
  const re = /'([^']*)'|"((?:\\.|[^"\\])*)"|(\S+)/g
  for (const m of text.matchAll(re)) {
    const bare = m[3]
    if (bare !== undefined && (/^(\||\|\||&&|;|#|>|>>|2>|2>&1|&|\))$/.test(bare) || /^[<>]/.test(bare) || bare.startsWith('#'))) break
    const word = m[1] ?? m[2] ?? bare ?? ''
    words.push(bare?.endsWith(';') || bare?.endsWith(')') ? word.slice(0, -1) : word)
    if (bare?.endsWith(';')) break
  }
  return words.slice(1) // after `svcops`
}

/** A word that stands for a value the reader fills in (ID, VERSION, <dir>, ...), not a command name. */
function isPlaceholder(word: string): boolean {
  return /^[A-Z][A-Z0-9_]*(?:[-.][A-Z0-9_]+)*$/.test(word) || /^[<[{].*[>\]}]$/.test(word) || /\.\.\.|…/.test(word) || word.startsWith('$')
}

function flagsOf(o: Option): string[] {
  return [o.long, o.short].filter((f): f is string => !!f)
}

/** The options `command` accepts: its own, its ancestors' (global options), and help. */
function optionsFor(command: Command): Option[] {
  const out: Option[] = []
  for (let c: Command | null = command; c; c = c.parent) out.push(...c.options)
  return out
}

function accepts(command: Command, flag: string): Option | undefined | 'help' {
  // `svcops --version` is the program's -V (src/commands/program.ts reads it in first position).
  if (flag === '--help' || flag === '-h' || (flag === '--version' && !command.parent)) return 'help'
  return optionsFor(command).find((o) => flagsOf(o).includes(flag))
}

/** Why the CLI refuses `words` (after `svcops`), or undefined when it accepts every command and option. */
function refusalOf(program: Command, words: string[]): string | undefined {
  let command = program
  let positional = 0
  for (let i = 0; i < words.length; i++) {
    const word = words[i] ?? ''
    if (word.startsWith('-') && word !== '-' && !/^-\d/.test(word)) {
      const stripped = word.replace(/^\[|\]$/g, '')
      const flag = stripped.split('=')[0] ?? stripped
      const option = accepts(command, flag)
      if (!option) return `${command === program ? 'svcops' : `svcops ${commandPath(command)}`} has no option ${flag}`
      if (option !== 'help' && (option.required || option.optional) && !stripped.includes('=')) i++
      continue
    }
    const subcommands = command.commands
    if (positional === 0 && subcommands.length) {
      if (isPlaceholder(word)) return undefined // `svcops COMMAND --help`: a pattern, not a command line
      const names = word.split('|')
      const unknown = names.filter((n) => !subcommands.some((c) => c.name() === n || c.aliases().includes(n)))
      if (unknown.length) return `svcops ${commandPath(command)} has no command ${unknown.join(', ')}`.replace('svcops  ', 'svcops ')
      const next = subcommands.find((c) => c.name() === names[0] || c.aliases().includes(names[0] ?? ''))
      if (next) command = next
      continue
    }
    positional++
  }
  return undefined
}

function commandPath(command: Command): string {
  const names: string[] = []
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

/** Every long option of every command of the program. */
function everyLongOption(program: Command): Set<string> {
  const all = new Set<string>(['--help'])
  const walk = (c: Command): void => {
    for (const o of c.options) if (o.long) all.add(o.long)
    c.commands.forEach(walk)
  }
  walk(program)
  return all
}

let program: Command

beforeAll(async () => {
  program = await buildProgram()
})

describe('the docs against the CLI', () => {
  it('find command lines on the pages (so a change of how pages write them cannot empty this check)', () => {
    const all = PAGES.flatMap(commandLines)
    expect(all.length).toBeGreaterThan(100)
    expect(all.map((f) => f.where.split(':')[0])).toEqual(expect.arrayContaining(['README.md', 'docs/live.md']))
  })

  it('show only commands and options the CLI accepts', () => {
    const refused = PAGES.flatMap(commandLines).flatMap((f) => {
      const why = refusalOf(program, wordsOf(f.text))
      return why ? [`${f.where}: \`${f.text.trim()}\`: ${why}`] : []
    })
    expect(refused).toEqual([])
  })

  it('name, on their own, only options some svcops command accepts', () => {
    const known = everyLongOption(program)
    const unknown = PAGES.flatMap(loneOptions).filter((f) => !known.has(f.text) && !NOT_SVCOPS.has(f.text))
    expect(unknown.map((f) => `${f.where}: ${f.text}`)).toEqual([])
  })

  it("keep the README's promise: every command it lists as changing something has --dry-run", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const start = readme.indexOf('These commands change something and have it:')
    const promise = readme.slice(start, readme.indexOf('The others only read', start))
    expect(start).toBeGreaterThan(-1)
    // `backup run|create` is `backup run` and `backup create`.
    const listed = [...promise.matchAll(/`([a-z][a-z |-]*)`/g)].flatMap((m) => {
      const words = (m[1] ?? '').split(' ')
      const last = words.pop() ?? ''
      return last.split('|').map((alternative) => [...words, alternative])
    })
    expect(listed.length).toBeGreaterThan(10)
    const without = listed.filter((words) => {
      let command: Command | undefined = program
      for (const w of words) command = command?.commands.find((c) => c.name() === w)
      return !command?.options.some((o) => o.long === '--dry-run')
    })
    expect(without.map((w) => `svcops ${w.join(' ')}`)).toEqual([])
  })

  it('refuse what the CLI refuses (the check itself can fail)', () => {
    expect(refusalOf(program, wordsOf('svcops upgrade recording --env prod --to 2.0.0 --dry-run'))).toBeUndefined()
    expect(refusalOf(program, wordsOf('svcops runs promote|abort ID --env prod'))).toBeUndefined()
    expect(refusalOf(program, wordsOf('svcops upgrade recording --too 2.0.0'))).toBe('svcops upgrade recording has no option --too')
    expect(refusalOf(program, wordsOf('svcops upgrade database --to 2.0.0'))).toBe('svcops upgrade has no command database')
    expect(refusalOf(program, wordsOf('svcops backup prune --env prod --keep-last 3 | jq .'))).toBeUndefined()
  })
})
