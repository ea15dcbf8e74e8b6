import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { HttpError, ProtocolError } from '../../src/core/errors.ts'
import { collect, events } from '../../src/core/events.ts'
import { parseAnswer, sendRequest } from '../../src/core/http.ts'
import { backoffDelay, retry } from '../../src/core/retry.ts'
import { freePort } from '../../src/lab/ports.ts'

describe('retry', () => {
  it('retries with growing, jittered, bounded delays and then gives up with the last error', async () => {
    const delays: number[] = []
    const seen = collect(events)
    let calls = 0
    await expect(
      retry(
        'flaky call',
        () => {
          calls++
          return Promise.reject(new Error(`failure ${calls}`))
        },
        {
          attempts: 4,
          baseDelayMs: 100,
          maxDelayMs: 250,
          sleep: (ms) => {
            delays.push(ms)
            return Promise.resolve()
          },
        },
      ),
    ).rejects.toThrow('failure 4')
    seen.stop()
    expect(calls).toBe(4)
    expect(delays).toHaveLength(3)
    expect(delays.every((d, i) => d >= 0 && d <= Math.min(250, 100 * 2 ** i))).toBe(true)
    expect(seen.events.filter((e) => e.kind === 'retry')).toHaveLength(3)
  })

  it('stops at once on an error that is not retryable', async () => {
    let calls = 0
    await expect(
      retry(
        'x',
        () => {
          calls++
          return Promise.reject(new Error('bad input'))
        },
        { shouldRetry: () => false },
      ),
    ).rejects.toThrow('bad input')
    expect(calls).toBe(1)
  })

  it('computes full-jitter delays within the cap', () => {
    expect(backoffDelay(1, 100, 1000, () => 1)).toBe(100)
    expect(backoffDelay(5, 100, 1000, () => 1)).toBe(1000)
    expect(backoffDelay(3, 100, 1000, () => 0)).toBe(0)
  })
})

describe('http', () => {
  let server: Server
  let base: string
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/json') {
        res.setHeader('content-type', 'application/json')
        res.end('{"a":1,"b":"two"}')
      } else if (req.url === '/text') res.end('plain')
      else {
        res.statusCode = 204
        res.end()
      }
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('parses JSON, keeps text, and leaves an empty body undefined', async () => {
    expect((await sendRequest({ peer: 'manager', method: 'GET', url: `${base}/json` })).body).toEqual({ a: 1, b: 'two' })
    expect((await sendRequest({ peer: 'manager', method: 'GET', url: `${base}/text` })).body).toBe('plain')
    expect((await sendRequest({ peer: 'manager', method: 'GET', url: `${base}/empty` })).body).toBeUndefined()
  })

  it('turns a refused connection into an HttpError without a status', async () => {
    const port = await freePort()
    const error = await sendRequest({ peer: 'manager', method: 'GET', url: `http://127.0.0.1:${port}/` }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(HttpError)
    expect((error as HttpError).status).toBeUndefined()
    expect((error as Error).message).toBe(`GET http://127.0.0.1:${port}/ failed: connection refused.`)
  })

  it('names the fields of an answer that does not match, never their values', () => {
    const schema = z.object({ access_token: z.string(), expires_in: z.number() })
    const error = (() => {
      try {
        parseAnswer(schema, { access_token: 42, expires_in: 'secret-ish-value' }, 'the token response')
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(ProtocolError)
    expect((error as Error).message).toMatch(
      /^the token response does not have the documented shape: access_token: .*expected string.*expires_in: .*expected number/,
    )
    expect((error as Error).message).not.toContain('secret-ish-value')
  })
})
