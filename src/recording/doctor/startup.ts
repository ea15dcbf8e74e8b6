/**
 * "The service does not start (check logs, configuration syntax, file permissions, database
 * access)": the config parses (and where it does not, the line and column), no option is unknown
 * to the installed release or gone from its new default, the service's user can read its config and
 * password file and write its log, and its credentials open its database.
 */
import { dirname } from 'node:path'
import { fine, lineAndColumn, skipped } from '../../doctor/outcome.ts'
import { NO_CONFIG, type Cause, type HostView } from './cause-types.ts'

/** The last ERROR/FATAL lines since the service's last start: evidence for whichever cause explains them. */
export function startErrors(view: HostView): string[] {
  return view.logLines.filter((l) => / (ERROR|FATAL) /.test(l)).slice(-3)
}

export const configSyntax: Cause = {
  id: 'config-syntax',
  problem: 'problem-no-start',
  check: 'the configuration file can be read and is valid JSON (line and column of the first error)',
  beforeStop: true,
  run(view) {
    if (!view.configText.ok)
      return Promise.resolve(
        fine('read the configuration file', [
          {
            severity: 'error',
            summary: `The configuration file ${view.configPath} cannot be read as the service's user.`,
            evidence: [view.configText.error || 'cat failed'],
            remedy: `Make ${view.configPath} readable by the service's user (chmod 0640, owner the service's user).`,
          },
        ]),
      )
    const text = view.configText.text
    try {
      const value: unknown = JSON.parse(text)
      if (!value || typeof value !== 'object' || Array.isArray(value)) throw new SyntaxError('the file must hold a JSON object')
      return Promise.resolve(fine(`${view.configPath} parses as a JSON object`))
    } catch (error) {
      const message = (error as Error).message
      const at = /at position (\d+)/.exec(message)?.[1]
      const where = at === undefined ? undefined : lineAndColumn(text, Number(at))
      const line = where ? (text.split('\n')[where.line - 1] ?? '') : ''
      return Promise.resolve(
        fine(`parse ${view.configPath}`, [
          {
            severity: 'error',
            summary: `The configuration file ${view.configPath} is not valid JSON${where ? ` (line ${where.line}, column ${where.column})` : ''}.`,
            evidence: [
              `${view.configPath}${where ? `:${where.line}:${where.column}` : ''}: ${message}`,
              ...(line ? [`line: ${/pass|secret|token|key/i.test(line) ? '(holds a secret; not shown)' : line.trim()}`] : []),
            ],
            remedy: `Fix the JSON syntax of ${view.configPath}${where ? ` at line ${where.line}` : ''} (compare with ${view.configPath}.dpkg-dist if present), then start the service.`,
          },
        ]),
      )
    }
  },
}

export const configOptions: Cause = {
  id: 'config-options',
  problem: 'problem-no-start',
  check: 'no option unknown to the installed release (its log) or missing from its new default configuration',
  beforeStop: false,
  async run(view) {
    if (!view.config) return skipped(NO_CONFIG)
    const unknown = view.logLines.flatMap((l) => /configuration option (\S+) is not known to release (\S+)/.exec(l)?.slice(1, 3) ?? [])
    const findings = []
    for (let i = 0; i < unknown.length; i += 2)
      findings.push({
        severity: 'warning' as const,
        summary: `Option '${unknown[i]}' of ${view.configPath} is not known to release ${unknown[i + 1]} and is ignored.`,
        evidence: [`${view.logPath}: configuration option ${unknown[i]} is not known to release ${unknown[i + 1]}`],
        remedy: `Remove '${unknown[i]}' from ${view.configPath}, or install the release that knows it.`,
      })
    const dist = await view.sh('cat -- "$1" 2>/dev/null', view.path(`${view.configPath}.dpkg-dist`))
    if (dist.code === 0 && dist.stdout.trim()) {
      try {
        const defaults = Object.keys(JSON.parse(dist.stdout) as object)
        for (const key of Object.keys(view.config).filter((k) => !defaults.includes(k)))
          findings.push({
            severity: 'warning' as const,
            summary: `Option '${key}' of ${view.configPath} is not in the new default configuration (obsolete or renamed).`,
            evidence: [`${view.configPath}.dpkg-dist has no '${key}'`],
            remedy: `Compare ${view.configPath} with ${view.configPath}.dpkg-dist and rename or remove '${key}'.`,
          })
      } catch {
        // A new default that does not parse is the package's problem, not this host's configuration.
      }
    }
    return fine('options known to the release (log) and present in the new default (.dpkg-dist)', findings)
  },
}

export const filePermissions: Cause = {
  id: 'file-permissions',
  problem: 'problem-no-start',
  check: "the service's user can read its config and password file and write its log",
  beforeStop: true,
  async run(view) {
    const files: { path: string; need: 'r' | 'w'; what: string }[] = [{ path: view.configPath, need: 'r', what: 'configuration file' }]
    const passwordFile = view.config?.database?.passwordFile
    if (passwordFile) files.push({ path: passwordFile, need: 'r', what: 'database password file' })
    files.push({ path: dirname(view.logPath), need: 'w', what: 'log directory' })
    const findings = []
    const states = await view.shEach(
      'if [ ! -e "$1" ]; then echo missing; elif [ "$2" = r ] && [ ! -r "$1" ]; then echo unreadable; elif [ "$2" = w ] && [ ! -w "$1" ]; then echo unwritable; else echo ok; fi; ls -ld -- "$1" 2>/dev/null',
      files.map((f) => [view.path(f.path), f.need]),
    )
    for (const [i, f] of files.entries()) {
      const [state, listing] = (states[i]?.stdout ?? '').split('\n')
      if (state === 'ok') continue
      findings.push({
        severity: 'error' as const,
        summary: `The ${f.what} ${f.path} is ${state === 'missing' ? 'missing' : state === 'unreadable' ? "not readable by the service's user" : "not writable by the service's user"}.`,
        evidence: [listing?.trim() || `${f.path}: ${state}`],
        remedy:
          state === 'missing'
            ? `Create ${f.path} (reinstall the package for a shipped file).`
            : `Give the service's user ${f.need === 'r' ? 'read' : 'write'} access: chown it to the service's user and chmod ${f.need === 'r' ? (f.what.includes('password') ? '0600' : '0640') : '0750'} ${f.path}.`,
      })
    }
    return fine(`access to ${files.map((f) => f.path).join(', ')} as the service's user`, findings)
  },
}

export const databaseAccess: Cause = {
  id: 'database-access',
  problem: 'problem-no-start',
  check: "the service's credentials open its database (connectivity, password, role)",
  beforeStop: true,
  async run(view) {
    if (!view.config) return skipped(NO_CONFIG)
    const db = await view.database()
    if ('client' in db) return fine(`connected to ${view.config.database?.name ?? '?'} as ${view.config.database?.user ?? '?'}`)
    if (db.cause === 'no-password') return skipped(`${db.error} (see file-permissions)`)
    const where = `${view.config.database?.name ?? '?'} at ${view.config.database?.host ?? '?'}:${view.config.database?.port ?? 5432} as ${view.config.database?.user ?? '?'}`
    return fine(`connect to ${where}`, [
      {
        severity: 'error',
        summary: `The service's credentials do not open its database ${where}.`,
        evidence: [db.error, ...startErrors(view)],
        remedy: /password|authentication/i.test(db.error)
          ? `Put the role's current password in ${view.config.database?.passwordFile ?? 'database.password'}.`
          : `Check that PostgreSQL at ${view.config.database?.host ?? '?'}:${view.config.database?.port ?? 5432} runs and accepts this host (listen_addresses, pg_hba.conf), and that database.host/port in ${view.configPath} are right.`,
      },
    ])
  },
}
