/**
 * The recording service's HTTP API: `GET /` (health, no body), `GET /api/v1/content?limit=N`,
 * `POST /api/v1/content`. Bearer JWTs from the manager are verified against its JWKS; scopes
 * decide access. Errors answer `{ "error": "<one sentence>" }`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createRemoteJWKSet, errors as joseErrors, jwtVerify } from 'jose'
import type pg from 'pg'
import * as z from 'zod/mini'
import { useEnglishMessages } from './zod-messages.ts'
import type { RecordingServiceConfig } from './config.ts'
import type { RecordingRelease } from './releases.ts'
import { StorageError, type RecordingStorage } from './storage.ts'
import { errorMessage } from '../../core/errors.ts'

/** Largest `limit` the list accepts. */
export const MAX_LIST_LIMIT = 10_000
/** Items listed when `limit` is absent. */
export const DEFAULT_LIST_LIMIT = 100

useEnglishMessages()

const createRequest = z.strictObject({
  channelName: z.string().check(z.minLength(1)),
  title: z.string().check(z.minLength(1)),
  startTime: z.number().check(z.int(), z.gte(0)),
  stopTime: z.number().check(z.int(), z.gte(0)),
})

export interface ApiContext {
  release: RecordingRelease
  config: RecordingServiceConfig
  pool: pg.Pool
  storage: RecordingStorage
  log: (level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR', message: string) => void
}

class ApiError extends Error {
  readonly status: number
  readonly headers: Record<string, string>
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.status = status
    this.headers = headers
  }
}

interface Row {
  id: string
  channel_name: string
  title: string
  start_time: string
  stop_time: string
  location: string
  file_name: string
  created_at: Date
  duration?: number
  created_by?: string
}

/** Creates (does not start) the HTTP server of the API. */
export function createApiServer(context: ApiContext): Server {
  const listening = Date.now()
  const jwks = createRemoteJWKSet(new URL(context.config.auth.jwksUrl), { timeoutDuration: 5000 })
  const writes = { second: 0, count: 0 }
  // A token for another application of the same manager (another `aud`) is not one for this service.
  const audience = context.config.auth.audience ?? context.config.auth.readScope.split(':').slice(0, 3).join(':')

  async function authorize(request: IncomingMessage, scope: string): Promise<string> {
    const header = request.headers.authorization ?? ''
    const match = /^Bearer ([A-Za-z0-9._~+/=-]+)$/i.exec(header)
    if (!match?.[1]) throw new ApiError(401, 'a bearer access token is required', { 'www-authenticate': 'Bearer' })
    let payload
    try {
      ;({ payload } = await jwtVerify(match[1], jwks, {
        issuer: context.config.auth.issuer,
        audience,
        algorithms: ['ES256', 'RS256', 'EdDSA'],
      }))
    } catch (error) {
      if (error instanceof joseErrors.JWKSTimeout || (error instanceof TypeError && /fetch/.test(error.message))) {
        context.log('ERROR', `cannot fetch the signing keys from ${context.config.auth.jwksUrl}: ${error.message}`)
        throw new ApiError(503, 'the signing keys of the manager cannot be fetched')
      }
      const reason = error instanceof joseErrors.JWTExpired ? 'the access token has expired' : 'the access token is not valid'
      context.log('WARN', `rejected a request: ${reason}`)
      throw new ApiError(401, reason, { 'www-authenticate': 'Bearer error="invalid_token"' })
    }
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : []
    if (!scopes.includes(scope))
      throw new ApiError(403, `the access token lacks the scope ${scope}`, {
        'www-authenticate': `Bearer error="insufficient_scope", scope="${scope}"`,
      })
    return typeof payload.sub === 'string' ? payload.sub : 'unknown'
  }

  function present(row: Row): Record<string, unknown> {
    const recording: Record<string, unknown> = {
      id: Number(row.id),
      channelName: row.channel_name,
      title: row.title,
      startTime: Number(row.start_time),
      stopTime: Number(row.stop_time),
      location: row.location,
      createdAt: row.created_at.toISOString(),
      mediaUrl: `${context.config.mediaApi.baseUrl.replace(/\/$/, '')}/${row.location}/${row.id}`,
    }
    if (row.duration !== undefined) recording.duration = row.duration
    if (row.created_by !== undefined) recording.createdBy = row.created_by
    return recording
  }

  async function list(url: URL): Promise<unknown> {
    const values = url.searchParams.getAll('limit')
    if (values.length > 1) throw new ApiError(400, 'limit: expected one value')
    const text = values[0]
    if (text !== undefined && !/^[1-9]\d{0,9}$/.test(text))
      throw new ApiError(400, `limit: expected an integer from 1 to ${MAX_LIST_LIMIT}`)
    const limit = text === undefined ? DEFAULT_LIST_LIMIT : Number(text)
    if (limit > MAX_LIST_LIMIT) throw new ApiError(400, `limit: expected an integer from 1 to ${MAX_LIST_LIMIT}`)
    const rows = (await context.pool.query<Row>('SELECT * FROM recordings ORDER BY id LIMIT $1', [limit])).rows
    for (const row of rows) await context.storage.checkRecording(row.id, row.location, row.file_name)
    const items = rows.map(present)
    return context.release.listShape === 'array' ? items : { content: items }
  }

  async function create(request: IncomingMessage, subject: string): Promise<Record<string, unknown>> {
    const body = await readJson(request)
    const parsed = createRequest.safeParse(body)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      const field = issue?.code === 'unrecognized_keys' ? issue.keys.join(', ') : issue?.path.map(String).join('.') || '(body)'
      const message = issue?.code === 'unrecognized_keys' ? 'unknown field' : (issue?.message ?? 'invalid').replace(/^Invalid input: /, '')
      throw new ApiError(400, `${field}: ${message}`)
    }
    const input = parsed.data
    if (input.stopTime <= input.startTime) throw new ApiError(400, 'stopTime: expected a time after startTime')
    const location = context.storage.defaultLocation
    const client = await context.pool.connect()
    try {
      await client.query('BEGIN')
      const columns = ['channel_name', 'title', 'start_time', 'stop_time', 'location', 'file_name']
      const values: unknown[] = [input.channelName, input.title, input.startTime, input.stopTime, location, '']
      if (context.release.schemaVersion >= 2) {
        columns.push('duration')
        values.push(input.stopTime - input.startTime)
      }
      if (context.release.schemaVersion >= 3) {
        columns.push('created_by')
        values.push(subject)
      }
      const placeholders = values.map((_, index) => `$${index + 1}`).join(', ')
      const inserted = await client.query<Row>(
        `INSERT INTO recordings (${columns.join(', ')}) VALUES (${placeholders}) RETURNING *`,
        values,
      )
      const row = inserted.rows[0]
      if (!row) throw new Error('the insert returned no row')
      row.file_name = `${row.id}.json`
      await client.query('UPDATE recordings SET file_name = $1 WHERE id = $2', [row.file_name, row.id])
      const recording = present(row)
      await context.storage.writeRecording(location, row.file_name, recording)
      await client.query('COMMIT')
      context.log('INFO', `created recording ${row.id} on channel ${input.channelName}`)
      return recording
    } catch (error) {
      await client.query('ROLLBACK')
      throw error
    } finally {
      client.release()
    }
  }

  function limitWrites(): void {
    const rate = context.config.writeRateLimit
    if (rate <= 0) return
    const second = Math.floor(Date.now() / 1000)
    if (writes.second !== second) Object.assign(writes, { second, count: 0 })
    writes.count += 1
    if (writes.count > rate) throw new ApiError(429, `the write rate limit of ${rate} per second is exceeded`, { 'retry-after': '1' })
  }

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://service')
    if (context.release.fault === 'never-healthy') throw new ApiError(503, 'the service is not ready')
    if (url.pathname === '/') {
      if (request.method !== 'GET' && request.method !== 'HEAD')
        throw new ApiError(405, `method ${request.method} is not allowed on /`, { allow: 'GET, HEAD' })
      await context.pool.query('SELECT 1').catch((error: unknown) => {
        context.log('ERROR', `health check: the database does not answer: ${errorMessage(error)}`)
        throw new ApiError(503, 'the database does not answer')
      })
      response.writeHead(200, { 'content-length': '0' }).end()
      return
    }
    if (url.pathname !== '/api/v1/content') throw new ApiError(404, `no resource at ${url.pathname}`)
    const degradeAfterMs = context.release.degradeAfterMs
    if (context.release.fault === 'errors-after-a-while' && degradeAfterMs !== undefined && Date.now() - listening > degradeAfterMs) {
      context.log('ERROR', `${request.method ?? ''} ${url.pathname} failed: the content index is corrupt`)
      send(response, 500, { error: 'internal error; see the service log' })
      return
    }
    if (request.method === 'GET') {
      await authorize(request, context.config.auth.readScope)
      send(response, 200, await list(url))
    } else if (request.method === 'POST') {
      const subject = await authorize(request, context.config.auth.writeScope)
      limitWrites()
      const recording = await create(request, subject)
      send(response, 201, recording, { location: `/api/v1/content/${String(recording.id)}` })
    } else {
      throw new ApiError(405, `method ${request.method ?? ''} is not allowed on /api/v1/content`, { allow: 'GET, POST' })
    }
  }

  return createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      if (error instanceof ApiError)
        return send(response, error.status, { error: error.message }, error.headers, error.status === 503 && request.url === '/')
      if (error instanceof StorageError) {
        context.log('ERROR', `recordings inaccessible: ${error.message}`)
        return send(response, 500, { error: `recordings inaccessible: ${error.message}` })
      }
      context.log('ERROR', `${request.method ?? ''} ${request.url ?? ''} failed: ${errorMessage(error)}`)
      send(response, 500, { error: 'internal error; see the service log' })
    })
  })
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, empty = false): void {
  if (response.headersSent) return
  if (empty) {
    response.writeHead(status, { ...headers, 'content-length': '0' }).end()
    return
  }
  const text = JSON.stringify(body)
  response
    .writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) })
    .end(text)
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of request) {
    const buffer = chunk as Buffer
    size += buffer.length
    if (size > 64 * 1024) throw new ApiError(413, 'the body is larger than 64 KiB')
    chunks.push(buffer)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new ApiError(400, 'the body is not valid JSON')
  }
}
