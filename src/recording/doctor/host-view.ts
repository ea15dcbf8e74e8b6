/**
 * The service's own view of a host: its config file read through the host's transport (as the
 * service's user), its log since the last start, and its database reached with the credentials
 * its config names (the password from its password file). Read-only; one view per host per check.
 *
 * Round trips are what a diagnosis of a fleet waits for (each command is a session on the host):
 * the config and the log are read by one command, a check of several files or folders is one
 * command (`shEach`), and the database is connected to as soon as the config names it, while the
 * first checks run.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { errorMessage } from '../../core/errors.ts'
import { registerSecret } from '../../core/redact.ts'
import { runCommand, shellJoin } from '../../core/runner.ts'
import { readServiceLogs, readServiceStatus, serviceDriver } from '../../drivers/services.ts'
import { hostPath } from '../../drivers/transports.ts'
import type { RecordingHost } from '../recording-platform.ts'
import type { HostView, ServiceConfig } from './cause-types.ts'

/** Lines of the service log read to find its last start. */
const LOG_LINES = 200
/** How long one snippet may take on the host. */
const SNIPPET_TIMEOUT_MS = 30_000

/** The config's exact bytes, a marker line (`$3`) with cat's exit code, then the log's last lines. */
const READ_CONFIG_AND_LOG = `cat -- "$1"; printf '\\n%s %s\\n' "$3" "$?"; tail -n ${LOG_LINES} -- "$2" 2>/dev/null`

/** A marker no file or log holds: a random word, new for each command. */
function newMarker(): string {
  return `svcops-doctor-${randomBytes(12).toString('hex')}`
}

/** One snippet's part of a command's output: what it wrote, and its exit code (null: it never finished). */
export interface SnippetOutput {
  code: number | null
  stdout: string
}

/**
 * Splits the output of `count` snippets, each followed by a line `<marker> <exit code>` (and the
 * line break before it, added by the command), into each snippet's output; what follows the last
 * marker is returned as `rest`.
 */
export function splitAtMarkers(stdout: string, marker: string, count: number): { outputs: SnippetOutput[]; rest: string } {
  const outputs: SnippetOutput[] = []
  let rest = stdout
  for (let i = 0; i < count; i++) {
    const at = rest.indexOf(`\n${marker} `)
    if (at < 0) {
      outputs.push({ code: null, stdout: rest })
      rest = ''
      continue
    }
    const line = rest.slice(at + marker.length + 2)
    const eol = line.indexOf('\n')
    const code = Number(eol < 0 ? line : line.slice(0, eol))
    outputs.push({ code: Number.isInteger(code) ? code : null, stdout: rest.slice(0, at) })
    rest = eol < 0 ? '' : line.slice(eol + 1)
  }
  return { outputs, rest }
}

/** What the doctor is told of the service: its files, and its name and driver where the stack says them. */
export interface DoctorSettings {
  configPath: string
  logPath: string
  service?: string
  serviceDriver?: 'systemd' | 'supervisor' | undefined
}

/** The service through its service manager, when the settings name it and its driver. */
function serviceOf(host: RecordingHost, settings: DoctorSettings): HostView['service'] {
  const { service, serviceDriver: driverName } = settings
  if (!service || !driverName) return undefined
  const driver = serviceDriver(driverName)
  return {
    name: service,
    status: () => readServiceStatus(driver, host.transport, host.config, service),
    logs: (lines) => readServiceLogs(driver, host.transport, host.config, service, lines, settings.logPath),
  }
}

/** Opens the view of `host`; `close` ends its database connection. */
export async function openHostView(host: RecordingHost, settings: DoctorSettings): Promise<HostView & { close(): Promise<void> }> {
  const path = (p: string) => hostPath(host.config, p)
  const run = async (script: string, args: string[], display: string, timeoutMs = SNIPPET_TIMEOUT_MS) => {
    const r = await runCommand(host.transport, ['sh', '-c', script, 'sh', ...args], {
      check: false,
      timeoutMs,
      display: `doctor: ${display.split('\n')[0]?.slice(0, 60) ?? ''} ${args.join(' ')}`,
    })
    return { code: r.code, stdout: r.stdout, stderr: r.stderr }
  }
  const sh: HostView['sh'] = (script, ...args) => run(script, args, script)
  const shEach: HostView['shEach'] = async (script, runs) => {
    if (runs.length === 0) return []
    const marker = newMarker()
    // Each run is the snippet in a shell of its own, as `sh` runs it, then its marker line.
    const text = runs.map((args) => `${shellJoin(['sh', '-c', script, 'sh', ...args])}; printf '\\n%s %s\\n' ${marker} "$?"`).join('\n')
    const r = await run(text, [], script, SNIPPET_TIMEOUT_MS * runs.length)
    return splitAtMarkers(r.stdout, marker, runs.length).outputs
  }

  const marker = newMarker()
  const read = await run(READ_CONFIG_AND_LOG, [path(settings.configPath), path(settings.logPath), marker], 'cat -- "$1"; tail -- "$2"')
  const split = splitAtMarkers(read.stdout, marker, 1)
  const catRead = split.outputs[0] ?? { code: null, stdout: '' }
  const configText =
    catRead.code === 0 ? ({ ok: true, text: catRead.stdout } as const) : ({ ok: false, error: read.stderr.trim() } as const)
  let config: ServiceConfig | undefined
  if (configText.ok) {
    try {
      const value: unknown = JSON.parse(configText.text)
      if (value && typeof value === 'object' && !Array.isArray(value)) config = value as ServiceConfig
    } catch {
      config = undefined
    }
  }
  const lines = split.rest.split('\n').filter(Boolean)
  const logLines = lastStartLines(lines)

  type Connection = Awaited<ReturnType<HostView['database']>>
  const connect = async (): Promise<Connection> => {
    const db = config?.database
    if (!db?.host || !db.name || !db.user) return { error: 'the config names no database', cause: 'no-config' }
    let password = db.password
    if (db.passwordFile) {
      const secret = await sh('cat -- "$1"', path(db.passwordFile))
      if (secret.code !== 0)
        return { error: `the password file ${db.passwordFile} cannot be read: ${secret.stderr.trim()}`, cause: 'no-password' }
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
      return { client }
    } catch (error) {
      await client.end().catch(() => undefined)
      return { error: errorMessage(error), cause: 'connect' }
    }
  }
  // Connected while the first checks read files; a transport that fails here fails the cause that asks.
  let connection: Promise<Connection> | undefined = config?.database ? connect() : undefined
  void connection?.catch(() => undefined)
  const database: HostView['database'] = () => (connection ??= connect())
  const service = serviceOf(host, settings)
  return {
    host,
    ...(service ? { service } : {}),
    configPath: settings.configPath,
    logPath: settings.logPath,
    configText,
    config,
    logLines,
    path,
    sh,
    shEach,
    database,
    async close() {
      const opened = await connection?.catch(() => undefined)
      if (opened && 'client' in opened) await opened.client.end().catch(() => undefined)
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
