/**
 * Calls that carry a password or a token never follow a redirect, never go to a non-loopback
 * http:// manager unless the environment says so, and never buffer an unbounded answer.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ManagerClient, managerClientFor } from '../../src/clients/manager-client.ts'
import { parseEnvironment } from '../../src/config/load.ts'
import { BadInputError, HttpError } from '../../src/core/errors.ts'
import { collect } from '../../src/core/events.ts'
import { sendRequest } from '../../src/core/http.ts'
import { OPERATOR } from './helpers.ts'

interface Seen {
  method: string
  url: string
  body: string
}

async function listen(
  handler: (req: IncomingMessage, res: import('node:http').ServerResponse, body: string) => void,
): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (d: Buffer) => (body += d.toString()))
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', body })
      handler(req, res, body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

describe('credentialed HTTP', () => {
  let second: Awaited<ReturnType<typeof listen>>
  let redirecting: Awaited<ReturnType<typeof listen>>
  let huge: Awaited<ReturnType<typeof listen>>

  beforeAll(async () => {
    second = await listen((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'))
    redirecting = await listen((req, res) => res.writeHead(307, { location: `${second.url}${req.url ?? ''}` }).end())
    huge = await listen((_req, res) => {
      // 64 MB streamed without a Content-Length: the client must stop reading on its own.
      res.writeHead(200, { 'content-type': 'application/json' })
      const chunk = Buffer.alloc(1 << 20, 0x20)
      let sent = 0
      const more = (): void => {
        while (sent < 64 && res.write(chunk)) sent++
        if (sent >= 64) res.end()
        else res.once('drain', more)
      }
      res.on('close', () => (sent = 64))
      more()
    })
  })
  afterAll(async () => {
    for (const s of [second, redirecting, huge]) await new Promise((resolve) => s?.server.close(resolve))
  })
  // Each case counts the requests it caused itself, whatever ran before it.
  beforeEach(() => {
    for (const s of [second, redirecting, huge]) s.seen.length = 0
  })

  it('a manager answering 307 gets one login attempt and the second origin receives nothing', async () => {
    const client = new ManagerClient({
      url: redirecting.url,
      email: OPERATOR.email,
      password: () => OPERATOR.password,
      retry: { attempts: 4, baseDelayMs: 1, maxDelayMs: 2 },
    })
    const error = await client.accessToken(['urn:svc:recorder:content:read']).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(HttpError)
    expect((error as Error).message).toBe(
      `POST ${redirecting.url}/api/v1/auth/login answered 307, a redirect to ${second.url}/api/v1/auth/login; svcops does not follow redirects with credentials.`,
    )
    expect(redirecting.seen).toHaveLength(1)
    expect(second.seen).toEqual([])
  })

  it('a bearer call answered by a redirect does not carry the token on', async () => {
    const error = await sendRequest({
      peer: 'recording-service',
      method: 'GET',
      url: `${redirecting.url}/api/v1/content`,
      headers: { authorization: 'Bearer abc' },
    }).catch((e: unknown) => e)
    expect((error as HttpError).status).toBe(307)
    expect(second.seen).toEqual([])
  })

  it('refuses an answer larger than the cap quickly, with a sentence instead of a V8 error', async () => {
    const error = await sendRequest({ peer: 'recording-service', method: 'GET', url: `${huge.url}/api/v1/content` }).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(HttpError)
    expect((error as Error).message).toBe(
      `GET ${huge.url}/api/v1/content answered more than 4.0 MiB (status 200), the cap of its answers; it was refused unread.`,
    )
  })

  it('refuses an http:// manager that is not on loopback, and accepts it with allowInsecureHttp and a warning', () => {
    const env = (manager: Record<string, unknown>) =>
      parseEnvironment({ 'svcops:manager': { email: 'ops@example.net', password: { env: 'X' }, ...manager } }, 'test', 'test.yaml')
    expect(() => managerClientFor(env({ url: 'http://manager.example.net' }))).toThrow(BadInputError)
    expect(() => managerClientFor(env({ url: 'http://manager.example.net' }))).toThrow(
      "manager.url: 'http://manager.example.net' is not https://; expected https://<manager-host> (plain http:// only on loopback, or with manager.allowInsecureHttp: true).",
    )
    expect(() => managerClientFor(env({ url: 'https://ops:pw@manager.example.net' }))).toThrow(
      /^manager\.url: carries a user name or password/,
    )
    const log = collect()
    try {
      managerClientFor(env({ url: 'http://manager.example.net', allowInsecureHttp: true }))
      managerClientFor(env({ url: 'https://manager.example.net' }))
      managerClientFor(env({ url: 'http://127.0.0.1:8080' }))
    } finally {
      log.stop()
    }
    expect(log.events.filter((e) => e.kind === 'warn').map((e) => (e as { message: string }).message)).toEqual([
      'manager.url http://manager.example.net is plain http:// (manager.allowInsecureHttp: true): the password and tokens cross the network unencrypted.',
    ])
  })
})
