/**
 * The service's own view of a host: its config file read through the host's transport (as the
 * service's user), its log since the last start, and its database reached with the credentials
 * its config names (the password from its password file). Read-only; one view per host per check.
 */
import pg from 'pg'
import { errorMessage } from '../core/errors.ts'
import { registerSecret } from '../core/redact.ts'
import { runCommand } from '../core/runner.ts'
import { hostPath } from '../drivers/transports.ts'
import type { RecordingHost } from '../recording/recording-platform.ts'
import type { HostView, ServiceConfig } from './doctor-types.ts'

/** Lines of the service log read to find its last start. */
const LOG_LINES = 200

/** Opens the view of `host`; `close` ends its database connection. */
export async function openHostView(
  host: RecordingHost,
  settings: { configPath: string; logPath: string },
): Promise<HostView & { close(): Promise<void> }> {
  const path = (p: string) => hostPath(host.config, p)
  const sh: HostView['sh'] = async (script, ...args) => {
    const r = await runCommand(host.transport, ['sh', '-c', script, 'sh', ...args], {
      check: false,
      timeoutMs: 30_000,
      display: `doctor: ${script.split('\n')[0]?.slice(0, 60) ?? ''} ${args.join(' ')}`,
    })
    return { code: r.code, stdout: r.stdout, stderr: r.stderr }
  }
  const read = await sh('cat -- "$1"', path(settings.configPath))
  const configText = read.code === 0 ? ({ ok: true, text: read.stdout } as const) : ({ ok: false, error: read.stderr.trim() } as const)
  let config: ServiceConfig | undefined
  if (configText.ok) {
    try {
      const value: unknown = JSON.parse(configText.text)
      if (value && typeof value === 'object' && !Array.isArray(value)) config = value as ServiceConfig
    } catch {
      config = undefined
    }
  }
  const log = await sh(`tail -n ${LOG_LINES} -- "$1" 2>/dev/null`, path(settings.logPath))
  const lines = log.stdout.split('\n').filter(Boolean)
  const logLines = lastStartLines(lines)

  let connection: Awaited<ReturnType<HostView['database']>> | undefined
  const database: HostView['database'] = async () => {
    if (connection) return connection
    const db = config?.database
    if (!db?.host || !db.name || !db.user) return (connection = { error: 'the config names no database', cause: 'no-config' })
    let password = db.password
    if (db.passwordFile) {
      const secret = await sh('cat -- "$1"', path(db.passwordFile))
      if (secret.code !== 0)
        return (connection = {
          error: `the password file ${db.passwordFile} cannot be read: ${secret.stderr.trim()}`,
          cause: 'no-password',
        })
      password = registerSecret(secret.stdout.trim())
    }
    const client = new pg.Client({
      host: db.host,
      port: db.port ?? 5432,
      database: db.name,
      user: db.user,
      connectionTimeoutMillis: 5000,
      ...(password !== undefined ? { password } : {}),
    })
    try {
      await client.connect()
      return (connection = { client })
    } catch (error) {
      await client.end().catch(() => undefined)
      return (connection = { error: errorMessage(error), cause: 'connect' })
    }
  }
  return {
    host,
    configPath: settings.configPath,
    logPath: settings.logPath,
    configText,
    config,
    logLines,
    path,
    sh,
    database,
    async close() {
      if (connection && 'client' in connection) await connection.client.end().catch(() => undefined)
    },
  }
}

/**
 * The lines of the service's last start that ended (it listened or failed): a supervisor retrying
 * a failing service may have begun a new start whose outcome is not logged yet.
 */
function lastStartLines(lines: string[]): string[] {
  const starts = lines.flatMap((l, i) => (/ recording service \S+ starting /.test(l) ? [i] : []))
  if (!starts.length) return lines
  const segments = starts.map((s, k) => lines.slice(s, starts[k + 1] ?? lines.length))
  return segments.findLast((seg) => seg.some((l) => / FATAL |listening on /.test(l))) ?? segments.at(-1) ?? []
}
