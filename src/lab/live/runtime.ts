/**
 * What every live component program shares: its build (component, release, product, baked into
 * the package), its arguments, its environment file, its log, and its `/metrics` and `/health`
 * endpoint. `runLiveComponent` is the program's entry; the system controller and the connecting
 * components are in controller.ts and member.ts.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { parseEnvFile } from './env-file.ts'
import { connectedMetricName } from '../../releases/versions.ts'
import { connectedMetricVariable, controllerArgsVariable, liveComponentPaths, metricsPortVariable, type LiveProduct } from './paths.ts'
import type { LiveComponent, LiveLabFault } from './releases.ts'

/** What a package bakes into its program (`build.json` beside it). */
export interface LiveBuild {
  component: LiveComponent
  version: string
  fault: LiveLabFault
  product: LiveProduct
}

type Level = 'INFO' | 'WARN' | 'ERROR'

/** A running component: its build, host root, environment and log. */
export interface ComponentContext {
  build: LiveBuild
  /** The host root R (`/` on a real host). */
  root: string
  /** Arguments after the program's own `--root`. */
  args: string[]
  env: Record<string, string>
  log: (level: Level, message: string) => void
  /** Logs an ERROR line and exits with 1: what the seed's "logs an error and stops" is. */
  fail: (message: string) => never
  /** A host path under the root; a path already under the root is taken as it is. */
  hostFile: (path: string) => string
  /** The reverse: the host's view of a path under the root (for messages). */
  shown: (path: string) => string
}

function readArguments(argv: string[]): { root: string; rest: string[] } {
  const at = argv.indexOf('--root')
  const root = resolve(at >= 0 ? (argv[at + 1] ?? '/') : '/')
  return { root, rest: at >= 0 ? [...argv.slice(0, at), ...argv.slice(at + 2)] : argv }
}

/** Builds the context: arguments, the environment file over the (clean) process environment, the log. */
export function componentContext(build: LiveBuild, argv: string[]): ComponentContext {
  const { root, rest } = readArguments(argv)
  const hostFile = (path: string): string =>
    isAbsolute(path) && (path === root || path.startsWith(`${root}/`)) ? path : resolve(join(root, isAbsolute(path) ? path : `/${path}`))
  const shown = (path: string): string => (root !== '/' && path.startsWith(`${root}/`) ? path.slice(root.length) : path)
  const paths = liveComponentPaths(build.product, build.component)
  const logFile = hostFile(paths.log)
  const log = (level: Level, message: string): void => {
    // The product's record: `<ISO time> <LEVEL> <message>`, one a line (a newline inside a message is escaped).
    const line = `${new Date().toISOString()} ${level} ${build.component} ${build.version}: ${message.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}\n`
    process.stderr.write(line)
    try {
      mkdirSync(dirname(logFile), { recursive: true })
      appendFileSync(logFile, line)
    } catch {
      // The line went to stderr, which supervisor keeps; nothing more to do.
    }
  }
  const fail = (message: string): never => {
    log('ERROR', message)
    process.exit(1)
  }
  const envFile = hostFile(paths.envFile)
  const fromFile = existsSync(envFile) ? parseEnvFile(readFileSync(envFile, 'utf8')) : {}
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries({ ...process.env, ...fromFile })) if (value !== undefined) env[key] = value
  // The controller's flags from its environment file (the lab's launcher's way of passing them).
  const extra =
    build.component === 'system-controller' ? (env[controllerArgsVariable(build.product.prefix)] ?? '').split(/\s+/).filter(Boolean) : []
  return { build, root, args: [...rest, ...extra], env, log, fail, hostFile, shown }
}

/** A Prometheus metric name (the exposition format's rule). */
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/

/**
 * The name of the connection metric this component exposes: `SVC_CONNECTED_METRIC` from its
 * environment, else `svc_controller_connected`; a name Prometheus refuses stops it.
 */
export function connectionMetric(ctx: ComponentContext): string {
  const variable = connectedMetricVariable(ctx.build.product.prefix)
  const value = ctx.env[variable]
  if (value === undefined || value === '') return connectedMetricName(ctx.build.product.prefix)
  if (!METRIC_NAME.test(value)) return ctx.fail(`${variable}=${value} is not a metric name; expected letters, digits, "_" and ":"`)
  return value
}

/** What `/health` and `/metrics` report. */
export interface ComponentReport {
  connected: () => boolean
  /** Product metric lines (`name value`), besides the connection metric. */
  metrics: () => Array<[string, number]>
}

/** Serves `/metrics` (Prometheus text) and `/health` on 127.0.0.1:`SVC_METRICS_PORT`, when that is set. */
export async function serveStatus(ctx: ComponentContext, report: ComponentReport): Promise<Server | undefined> {
  const variable = metricsPortVariable(ctx.build.product.prefix)
  const value = ctx.env[variable]
  if (!value) {
    ctx.log('INFO', `${variable} is not set: no metrics endpoint`)
    return undefined
  }
  const port = Number(value)
  if (!Number.isInteger(port) || port < 1 || port > 65535) return ctx.fail(`${variable}=${value} is not a port number`)
  const connection = connectionMetric(ctx)
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]
    if (request.method === 'GET' && path === '/metrics') {
      const lines = [[connection, report.connected() ? 1 : 0] as [string, number], ...report.metrics()].flatMap(([name, v]) => [
        `# TYPE ${name} gauge`,
        `${name} ${v}`,
      ])
      response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(`${lines.join('\n')}\n`)
    } else if (request.method === 'GET' && path === '/health') {
      const body = { component: ctx.build.component, version: ctx.build.version, connected: report.connected() }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    } else response.writeHead(404).end()
  })
  await listen(server, port, '127.0.0.1').catch((error: unknown) =>
    ctx.fail(`cannot listen for metrics on 127.0.0.1:${port}: ${error instanceof Error ? error.message : String(error)}`),
  )
  return server
}

/** Resolves once `server` listens, rejects on its first error (EADDRINUSE). */
export function listen(
  server: { listen: (port: number, host: string, cb: () => void) => unknown; once: (e: 'error', cb: (error: Error) => void) => unknown },
  port: number,
  host: string,
): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
}

/** Exits cleanly on SIGTERM/SIGINT (supervisor's stop). */
export function exitOnSignals(ctx: ComponentContext): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      ctx.log('INFO', `stopping (${signal})`)
      process.exit(0)
    })
  }
}
