/**
 * The system controller of a live release, as the seed describes it and no more: it reads
 * `svc_sc_settings.json` from the directories its release searches, takes the PSK from it (from
 * 2.0) and refuses a low-entropy one (from 6.0, the estimate of `svcops psk check`), and serves
 * its REST API under its major's prefix only. Components connect with `POST <prefix>/connections`
 * (the lab's transport) and keep the connection by posting again every second. It answers the
 * seed's endpoints of a connected instance by its UUID (`GET <prefix>/ingests/{uuid}` with the
 * ingest metrics of the instance's release under `?expand=true`, `/pipelines/{uuid}`,
 * `/controlpanels/{uuid}`), and the lab's own `/status` and `/components`, which the lab's stack
 * declares as its checks (docs/contract.md).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { join } from 'node:path'
import { assessPsk } from '../../releases/pre-shared-key.ts'
import {
  apiPrefix,
  liveMetricNames,
  pskEntropyEnforced,
  pskRequired,
  settingsFileName,
  settingsPathFlag,
  settingsSearchPaths,
  supportsSettingsPathFlag,
} from '../../releases/versions.ts'
import { legacySettingsDir, pskHeader } from './paths.ts'
import { exitOnSignals, listen, serveStatus, type ComponentContext } from './runtime.ts'

/** A component not heard from for this long counts as disconnected. */
export const CONNECTION_TIMEOUT_MS = 3000
const MAX_BODY = 64 * 1024

interface Settings {
  file: string
  port: number
  psk?: string
}

/** The directories searched, as real paths with the host's name of each for messages. */
function searchedDirectories(ctx: ComponentContext): Array<{ path: string; shown: string }> {
  const { version, product } = ctx.build
  const flag = settingsPathFlag()
  const at = ctx.args.indexOf(flag)
  if (!supportsSettingsPathFlag(version)) {
    if (at >= 0) ctx.log('WARN', `ignoring ${flag}: release ${version} has no such flag`)
    const dir = legacySettingsDir(product)
    return [{ path: ctx.hostFile(dir), shown: dir }]
  }
  const given = at >= 0 ? ctx.args[at + 1] : undefined
  if (at >= 0 && !given) ctx.fail(`${flag} needs a directory`)
  const dirs = settingsSearchPaths(version, product.dir).map((d) =>
    d === '.' ? { path: process.cwd(), shown: `${ctx.shown(process.cwd())} (working directory)` } : { path: ctx.hostFile(d), shown: d },
  )
  return given ? [{ path: ctx.hostFile(given), shown: `${given} (${flag})` }, ...dirs] : dirs
}

function readSettings(ctx: ComponentContext): Settings {
  const name = settingsFileName(ctx.build.product.prefix)
  const dirs = searchedDirectories(ctx)
  const found = dirs.find((d) => existsSync(join(d.path, name)))
  if (!found) return ctx.fail(`the settings file ${name} was not found; searched: ${dirs.map((d) => d.shown).join(', ')}`)
  const file = join(found.path, name)
  let doc: unknown
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    return ctx.fail(
      `the settings file ${ctx.shown(file)} cannot be read as JSON: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  const settings = (typeof doc === 'object' && doc !== null ? doc : {}) as { psk?: unknown; listen?: { port?: unknown } }
  const port = settings.listen?.port
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
    return ctx.fail(`the settings file ${ctx.shown(file)} has no valid listen.port`)
  if (!pskRequired(ctx.build.version)) return { file, port }
  if (typeof settings.psk !== 'string' || settings.psk === '')
    return ctx.fail(`the settings file ${ctx.shown(file)} has no psk: a pre-shared key must be generated in it`)
  return { file, port, psk: settings.psk }
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest()

function answer(response: ServerResponse, status: number, body?: unknown): void {
  response
    .writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' })
    .end(body === undefined ? undefined : JSON.stringify(body))
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY) {
        reject(new Error('body too large'))
        request.destroy()
      } else chunks.push(chunk)
    })
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })
}

/** Runs the system controller until it is stopped; every refusal to start is an ERROR line and exit 1. */
export async function runController(ctx: ComponentContext): Promise<void> {
  const { version, product } = ctx.build
  const settings = readSettings(ctx)
  if (settings.psk !== undefined && pskEntropyEnforced(version)) {
    const { ok, bits } = assessPsk(settings.psk)
    if (!ok)
      ctx.fail(
        `the pre-shared key in ${ctx.shown(settings.file)} is too weak (estimated ${bits} bits); the system controller does not start: generate a new one (svcops psk generate)`,
      )
  }
  const prefix = apiPrefix(version)
  const expected = settings.psk === undefined ? undefined : digest(settings.psk)
  const header = pskHeader(product.prefix).toLowerCase()
  const components = new Map<string, { version: string; lastSeen: number; uuid?: string; component?: string }>()
  const isConnected = (lastSeen: number): boolean => Date.now() - lastSeen <= CONNECTION_TIMEOUT_MS
  const KIND_OF: Record<string, string> = { ingests: 'ingest', pipelines: 'pipeline', controlpanels: 'control-panel' }
  /** A connected instance by the seed's endpoint of its kind; 404 for one unknown or gone. */
  const answerInstance = (response: ServerResponse, kind: string, uuid: string, expand: boolean): void => {
    const found = [...components].find(([, c]) => c.uuid === uuid && c.component === KIND_OF[kind] && isConnected(c.lastSeen))
    if (!found) return answer(response, 404, { error: 'not found' })
    const [name, c] = found
    const body: Record<string, unknown> = { uuid, name, version: c.version }
    if (expand && kind === 'ingests')
      body.sources = [
        { source_id: 0, metrics: Object.fromEntries(liveMetricNames(c.version, 'ingest', product.prefix).map((n) => [n, 0])) },
      ]
    if (expand && kind === 'pipelines') body.controlreceiver = { outgoing_connections: [], incoming_connections: [] }
    answer(response, 200, body)
  }

  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/'
    if (!path.startsWith(`${prefix}/`)) return answer(response, 404, { error: 'not found' })
    const route = `${request.method ?? 'GET'} ${path.slice(prefix.length)}`
    if (route === 'GET /status') return answer(response, 200, { version, status: 'ok' })
    const seed = /^GET \/(ingests|pipelines|controlpanels)\/([0-9a-f-]{36})$/.exec(route)
    if (seed) {
      const expand = new URLSearchParams((request.url ?? '').split('?')[1] ?? '').get('expand') === 'true'
      return answerInstance(response, seed[1] ?? '', seed[2] ?? '', expand)
    }
    if (route === 'GET /components')
      return answer(
        response,
        200,
        [...components].map(([name, c]) => ({ name, version: c.version, connected: isConnected(c.lastSeen) })),
      )
    if (route !== 'POST /connections') return answer(response, 404, { error: 'not found' })
    readBody(request).then(
      (text) => {
        let body: { name?: unknown; version?: unknown; uuid?: unknown; component?: unknown }
        try {
          body = JSON.parse(text) as typeof body
        } catch {
          return answer(response, 400, { error: 'expected a JSON body { name, version }' })
        }
        if (typeof body.name !== 'string' || typeof body.version !== 'string')
          return answer(response, 400, { error: 'expected a JSON body { name, version }' })
        if (expected) {
          const given = request.headers[header]
          if (typeof given !== 'string' || !timingSafeEqual(digest(given), expected)) {
            ctx.log('WARN', `refused the connection of ${body.name}: ${typeof given === 'string' ? 'wrong' : 'no'} pre-shared key`)
            return answer(response, 401, { error: 'pre-shared key missing or wrong' })
          }
        }
        const known = components.get(body.name)
        if (!known || !isConnected(known.lastSeen)) ctx.log('INFO', `${body.name} ${body.version} connected`)
        components.set(body.name, {
          version: body.version,
          lastSeen: Date.now(),
          ...(typeof body.uuid === 'string' ? { uuid: body.uuid } : {}),
          ...(typeof body.component === 'string' ? { component: body.component } : {}),
        })
        answer(response, 200, { connected: true })
      },
      () => answer(response, 413, { error: 'body too large' }),
    )
  })
  await listen(server, settings.port, '127.0.0.1').catch((error: unknown) =>
    ctx.fail(`cannot listen on 127.0.0.1:${settings.port}: ${error instanceof Error ? error.message : String(error)}`),
  )
  await serveStatus(ctx, { connected: () => true, metrics: () => [] })
  exitOnSignals(ctx)
  ctx.log('INFO', `listening on 127.0.0.1:${settings.port} under ${prefix} (settings ${ctx.shown(settings.file)})`)
}
