/**
 * The lab's component environment files (`/etc/default/<prefix>-<component>`), in systemd's
 * EnvironmentFile syntax: `KEY=VALUE` lines, `#` comments, blank lines, an optional `export `, and
 * values optionally in single or double quotes (removed). The components read them before anything
 * else; the live playbook writes them with `formatEnvFile`. Values are never shell-evaluated, so a
 * PSK with any printable character is safe in them.
 */

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/

/** The variables of an environment file; the last line of a key wins; lines that are not assignments are skipped. */
export function parseEnvFile(text: string): Record<string, string> {
  const vars: Record<string, string> = {}
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (!line || line.startsWith('#') || line.startsWith(';')) continue
    const assignment = line.startsWith('export ') ? line.slice('export '.length).trimStart() : line
    const eq = assignment.indexOf('=')
    if (eq <= 0) continue
    const key = assignment.slice(0, eq).trim()
    if (!KEY.test(key)) continue
    let value = assignment.slice(eq + 1).trim()
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0]) value = value.slice(1, -1)
    vars[key] = value
  }
  return vars
}

/** A value as `parseEnvFile` reads it back: bare, or in the quotes it does not contain. */
function quoteEnvValue(key: string, value: string): string {
  if (!/[\s"'#;]/.test(value)) return value
  if (!value.includes('"')) return `"${value}"`
  if (!value.includes("'")) return `'${value}'`
  throw new Error(`The value of ${key} holds both kinds of quote; an environment file cannot say it.`)
}

/** An environment file with `vars` in the given order, values quoted when they hold spaces, quotes, # or ;. */
export function formatEnvFile(vars: Record<string, string>, comment?: string): string {
  const lines = comment ? comment.split('\n').map((l) => `# ${l}`) : []
  for (const [key, value] of Object.entries(vars)) {
    if (!KEY.test(key)) throw new Error(`'${key}' is not an environment variable name.`)
    if (/[\r\n]/.test(value)) throw new Error(`The value of ${key} holds a line break; an environment file value is one line.`)
    lines.push(`${key}=${quoteEnvValue(key, value)}`)
  }
  return `${lines.join('\n')}\n`
}
