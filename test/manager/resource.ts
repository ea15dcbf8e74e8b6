import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRemoteJWKSet, jwtVerify } from 'jose'

/**
 * A minimal resource server for tests: verifies the bearer token against the manager's JWKS and
 * answers 200 with the token's scopes, or 401. `rejectNext` makes it refuse the next N valid tokens
 * (as a server does that restarted with another trust configuration).
 */
export async function startResourceServer(
  managerUrl: string,
  now: () => number = Date.now,
): Promise<{ url: string; calls: number; rejectNext: number; close: () => Promise<void> }> {
  const jwks = createRemoteJWKSet(new URL(`${managerUrl}/.well-known/jwks.json`))
  const state = { url: '', calls: 0, rejectNext: 0, close: () => Promise.resolve() }
  const server: Server = createServer((req, res) => {
    state.calls += 1
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1]
    const refuse = () => {
      res.writeHead(401, { 'content-type': 'application/json' })
      res.end('{"error":"unauthorized"}')
    }
    if (!token) return refuse()
    jwtVerify(token, jwks, { issuer: managerUrl, currentDate: new Date(now()) }).then(
      ({ payload }) => {
        if (state.rejectNext > 0) {
          state.rejectNext -= 1
          return refuse()
        }
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ scope: payload.scope, sub: payload.sub }))
      },
      () => refuse(),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()))
  return state
}
