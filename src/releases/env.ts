/**
 * `svcops migrate env`: checks and migrates a live production component's environment file
 * (`KEY=VALUE` lines, as systemd EnvironmentFile and docker --env-file read them) and the place
 * of its settings file across majors. Lines other than the renamed ones stay byte for byte.
 */
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { BadInputError } from '../core/errors.ts'
import { assessPsk } from './pre-shared-key.ts'
import { registerSecret } from '../core/redact.ts'
import { changesWithEffect, FIRST_LIVE_RELEASE } from './live.ts'
import { DEFAULT_PRODUCT, type Product } from './types.ts'
import {
  assertUpgradeRange,
  pskEntropyEnforced,
  pskRequired,
  pskVariable,
  settingsFileName,
  settingsPathFlag,
  settingsSearchPaths,
  supportsSettingsPathFlag,
  tcpEndpointSingleValue,
  tcpEndpointVariable,
} from './versions.ts'

export interface EnvLine {
  line: number
  raw: string
  key?: string
  value?: string
}

export interface EnvMigration {
  from: string
  to: string
  file: string
  /** Renames applied (or to apply): line, rule, old and new text of the key. */
  changes: Array<{ line: number; rule: string; from: string; to: string }>
  /** What blocks the target version, one sentence each; never contains a secret. */
  problems: Array<{ rule: string; message: string }>
  /** Checks that passed, for the report. */
  checks: string[]
  after: string
}

const LINE = /^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)(.*)$/

/** Parses an environment file; values keep their quotes in `raw` and lose them in `value`. */
export function parseEnvFile(text: string): EnvLine[] {
  return text.split('\n').map((raw, i) => {
    const m = LINE.exec(raw)
    if (!m || raw.trimStart().startsWith('#')) return { line: i + 1, raw }
    // A quoted value ends at its closing quote; an unquoted one at an inline ` #` comment.
    const rest = (m[4] ?? '').trim()
    const quoted = /^(["'])(.*?)\1(\s+#.*)?$/.exec(rest)
    const value = quoted ? (quoted[2] ?? '') : rest.replace(/\s+#.*$/, '')
    return { line: i + 1, raw, key: m[2] ?? '', value }
  })
}

/** The endpoints listed in a TCP endpoint value (commas, semicolons or spaces between them). */
export function listEndpoints(value: string): string[] {
  return value.split(/[\s,;]+/).filter(Boolean)
}

export interface EnvOptions {
  product?: Product
  /** Where the component's settings file is now (file or directory), to check the 6.0 search path. */
  settings?: string
  /** The component's working directory (searched from 6.0). */
  workdir?: string
}

/** Checks and migrates one environment file's text (versions already checked). */
export function migrateEnvText(text: string, file: string, from: string, to: string, options: EnvOptions = {}): EnvMigration {
  const product = options.product ?? DEFAULT_PRODUCT
  const lines = parseEnvFile(text)
  const changes: EnvMigration['changes'] = []
  const problems: EnvMigration['problems'] = []
  const checks: string[] = []
  const find = (key: string): EnvLine[] => lines.filter((l) => l.key === key)

  const rename = changesWithEffect('env-rename').find((c) => c.effect.from.endsWith('_TCP_ENDPOINTS'))
  const oldVar = tcpEndpointVariable(from, product.prefix)
  const newVar = tcpEndpointVariable(to, product.prefix)
  if (rename && oldVar !== newVar) {
    const olds = find(oldVar)
    if (olds.length && find(newVar).length)
      problems.push({ rule: rename.id, message: `${file} sets both ${oldVar} and ${newVar}; keep only ${newVar}.` })
    for (const l of olds) {
      const endpoints = listEndpoints(l.value ?? '')
      if (tcpEndpointSingleValue(to) && endpoints.length > 1) {
        problems.push({
          rule: rename.id,
          message: `${file}:${l.line}: ${oldVar} lists ${endpoints.length} endpoints (${endpoints.join(', ')}), but ${newVar} takes exactly one endpoint, which accepts many connections; keep one of them.`,
        })
        continue
      }
      changes.push({ line: l.line, rule: rename.id, from: oldVar, to: newVar })
    }
    if (!olds.length && find(newVar).length) checks.push(`${newVar} is already set.`)
  }

  const psk = pskVariable(product.prefix)
  const pskRule = changesWithEffect('psk-required')[0]?.id ?? ''
  if (pskRequired(to)) {
    const found = find(psk)
    const value = found.at(-1)?.value
    if (value) registerSecret(value)
    if (!value) {
      problems.push({
        rule: pskRule,
        message: `${file} does not set ${psk}: from ${changesWithEffect('psk-required')[0]?.release ?? '2.0.0'} a component without it logs an error and stops.`,
      })
    } else if (pskEntropyEnforced(to)) {
      const verdict = assessPsk(value)
      const rule = changesWithEffect('psk-entropy-enforced')[0]?.id ?? ''
      if (verdict.ok) checks.push(`${psk} is set and passes the entropy check (${verdict.bits} estimated bits).`)
      else
        problems.push({
          rule,
          message: `${file}: ${psk} would stop the system controller from starting in ${to}: ${(verdict.reasons[0] ?? '').replace(/^The key/, 'the key')}`,
        })
    } else {
      checks.push(`${psk} is set.`)
    }
  }

  if (options.settings && supportsSettingsPathFlag(to) && !supportsSettingsPathFlag(from)) {
    const rule = changesWithEffect('settings-search-path')[0]?.id ?? ''
    const where = resolve(options.settings)
    const dir = where.endsWith('.json') ? dirname(where) : where
    const searched = settingsSearchPaths(to, product.dir).map((d) => (d === '.' ? resolve(options.workdir ?? '.') : resolve(d)))
    if (searched.includes(dir)) checks.push(`${settingsFileName(product.prefix)} in ${dir} is on the search path of ${to}.`)
    else
      problems.push({
        rule,
        message: `${settingsFileName(product.prefix)} in ${dir} is not searched from ${to}: move it to ${searched.join(' or ')}, or start the system controller with ${settingsPathFlag()} ${dir}.`,
      })
  }

  const after = changes.length ? renameKeysInText(text, changes) : text
  return { from, to, file, changes, problems, checks, after }
}

/** Renames the key at the start of each changed line, leaving every other byte alone. */
function renameKeysInText(text: string, changes: EnvMigration['changes']): string {
  const lines = text.split('\n')
  for (const c of changes) {
    const raw = lines[c.line - 1] ?? ''
    const m = LINE.exec(raw)
    if (m) lines[c.line - 1] = `${m[1] ?? ''}${c.to}${raw.slice((m[1] ?? '').length + c.from.length)}`
  }
  return lines.join('\n')
}

/** Reads and checks an environment file; refuses with one sentence when it cannot be read. */
export function migrateEnvFile(file: string, from: string, to: string, options: EnvOptions = {}): EnvMigration {
  assertUpgradeRange(from, to, FIRST_LIVE_RELEASE, 'svcops migrate env')
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new BadInputError(`The environment file '${file}' cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`)
  }
  return migrateEnvText(text, file, from, to, options)
}

/** The migration as text for people. */
export function formatEnvMigration(m: EnvMigration, wrote: boolean): string {
  const lines = [
    `${m.file}: ${m.from} -> ${m.to}: ${m.changes.length} change${m.changes.length === 1 ? '' : 's'}, ${m.problems.length} problem${m.problems.length === 1 ? '' : 's'}${wrote ? ', written' : ''}`,
  ]
  for (const c of m.changes) lines.push(`  ${m.file}:${c.line} ${c.rule}: ${c.from} -> ${c.to}`)
  for (const p of m.problems) lines.push(`  problem (${p.rule}): ${p.message}`)
  for (const c of m.checks) lines.push(`  ok: ${c}`)
  return lines.join('\n')
}
