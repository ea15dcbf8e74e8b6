/**
 * The components that connect to the system controller: ingest, pipeline (the rendering engine)
 * and control panel. From 2.0 each needs the PSK in `SVC_SYSTEM_CONTROLLER_PSK`: without it, or
 * with one the controller refuses, it logs an ERROR line and stops. The pipeline listens on the
 * TCP control panel endpoints of its release's variable (`SVC_TCP_ENDPOINTS`, several, before 6.0;
 * `SVC_TCP_ENDPOINT`, exactly one, from 6.0). Each serves its release's metric names.
 */
import { request as httpRequest } from 'node:http'
import { createServer as createTcpServer } from 'node:net'
import { changesWithEffect, expandName } from '../../releases/live.ts'
import {
  apiPrefix,
  liveMetricNames,
  pskRequired,
  pskVariable,
  tcpEndpointSingleValue,
  tcpEndpointVariable,
} from '../../releases/versions.ts'
import { controllerUrlVariable, instanceNameVariable, labInstanceUuid, pskHeader } from './paths.ts'
import { CONNECTION_TIMEOUT_MS } from './controller.ts'
import { connectionMetric, exitOnSignals, listen, serveStatus, type ComponentContext } from './runtime.ts'
import { DROPS_AFTER_MS } from './releases.ts'

const RECONNECT_MS = 1000

/** The pipeline's TCP variable before its rename (`SVC_TCP_ENDPOINTS`), from the catalog. */
function oldTcpVariable(prefix: string): string {
  const rename = changesWithEffect('env-rename').find((c) => c.effect.from.endsWith('_TCP_ENDPOINTS'))
  return expandName(rename?.effect.from ?? '{PREFIX}_TCP_ENDPOINTS', { prefix, dir: prefix })
}

/** The endpoints the pipeline listens on, from its release's variable; refusals stop it. */
function tcpEndpoints(ctx: ComponentContext): string[] {
  const { version, product } = ctx.build
  const variable = tcpEndpointVariable(version, product.prefix)
  const value = ctx.env[variable]?.trim() ?? ''
  if (tcpEndpointSingleValue(version)) {
    const old = oldTcpVariable(product.prefix)
    if (!value && ctx.env[old]) ctx.fail(`${old} is set but release ${version} reads ${variable} (one endpoint); ${old} is ignored`)
    if (value.includes(','))
      ctx.fail(`${variable} accepts a single endpoint, which accepts multiple connections; it holds ${value.split(',').length}`)
  }
  const endpoints = value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)
  if (endpoints.length === 0) ctx.log('INFO', `${variable} is not set: no TCP control panel endpoint`)
  return endpoints
}

async function listenTcp(ctx: ComponentContext, endpoint: string): Promise<void> {
  const m = /^(.+):(\d{1,5})$/.exec(endpoint)
  if (!m) return ctx.fail(`the TCP endpoint '${endpoint}' is not host:port`)
  const server = createTcpServer((socket) => {
    socket.on('error', () => socket.destroy())
    socket.resume()
  })
  await listen(server, Number(m[2]), m[1] ?? '').catch((error: unknown) =>
    ctx.fail(`cannot listen on the TCP endpoint ${endpoint}: ${error instanceof Error ? error.message : String(error)}`),
  )
  ctx.log('INFO', `TCP control panel endpoint listening on ${endpoint}`)
}

/**
 * POSTs `body` and answers the status, the answer read to its end; fails after `timeoutMs`. Through
 * node:http, not fetch: the component connects once a second for its whole life, and Node's fetch
 * loads its HTTP library at the first call (~30 ms of CPU at every start of a component).
 */
function post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode ?? 0))
      response.on('error', reject)
    })
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs)
    request.on('close', () => clearTimeout(timer))
    request.on('error', reject)
    request.end(body)
  })
}

/** Runs a connecting component until it is stopped or refused. */
export async function runMember(ctx: ComponentContext): Promise<void> {
  const { version, product, component, fault } = ctx.build
  const urlVariable = controllerUrlVariable(product.prefix)
  const url = ctx.env[urlVariable]?.replace(/\/+$/, '')
  if (!url) ctx.fail(`${urlVariable} is not set: no system controller to connect to`)
  let psk: string | undefined
  if (pskRequired(version)) {
    const variable = pskVariable(product.prefix)
    psk = ctx.env[variable]
    if (!psk) ctx.fail(`${variable} is not set: ${component} cannot connect to the system controller without the pre-shared key`)
  }
  if (component === 'pipeline') for (const endpoint of tcpEndpoints(ctx)) await listenTcp(ctx, endpoint)

  let lastConnected = 0
  const connected = (): boolean => Date.now() - lastConnected <= CONNECTION_TIMEOUT_MS
  const names = liveMetricNames(version, component, product.prefix)
  const started = Date.now()
  // The fault release: the ingest drops 25 video frames a second once it has run a while.
  const value = (n: string): number =>
    fault === 'drops-video-frames' && n.endsWith('_dropped_video_frames')
      ? Math.max(0, Math.floor(((Date.now() - started - DROPS_AFTER_MS) * 25) / 1000))
      : 0
  await serveStatus(ctx, { connected, metrics: () => names.map((n) => [n, value(n)]) })
  exitOnSignals(ctx)
  ctx.log('INFO', `started; ${connectionMetric(ctx)} and ${names.length} product metric(s) on /metrics`)
  if (fault === 'never-connects') return

  const endpoint = `${url ?? ''}${apiPrefix(version)}/connections`
  // Instances of one type on several hosts are told apart by the name they connect as.
  const name = ctx.env[instanceNameVariable(product.prefix)] || component
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(psk ? { [pskHeader(product.prefix)]: psk } : {}) }
  let problem = ''
  const connect = async (): Promise<void> => {
    let now = ''
    try {
      const status = await post(endpoint, headers, JSON.stringify({ name, version, component, uuid: labInstanceUuid(name) }), 2000)
      if (status === 401 || status === 403)
        ctx.fail(`the system controller at ${url ?? ''} refused the pre-shared key in ${pskVariable(product.prefix)} (HTTP ${status})`)
      if (status >= 200 && status < 300) {
        if (!connected()) ctx.log('INFO', `connected to the system controller at ${url ?? ''}`)
        lastConnected = Date.now()
      } else now = `the system controller answered ${status} to POST ${apiPrefix(version)}/connections`
    } catch (error) {
      now = `cannot reach the system controller at ${url ?? ''}: ${error instanceof Error ? error.message : String(error)}`
    }
    if (now && now !== problem) ctx.log('WARN', `${now}; retrying every ${RECONNECT_MS / 1000} s`)
    problem = now
  }
  const loop = async (): Promise<void> => {
    await connect()
    setTimeout(() => void loop(), RECONNECT_MS)
  }
  await loop()
}
