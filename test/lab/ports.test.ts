/**
 * The lab's servers get ports below the kernel's ephemeral range (src/lab/ports.ts): a port inside
 * it can be taken by any outgoing connection while a component is stopped, and its restart then
 * fails with EADDRINUSE (seen once in a full suite run: a live rollback's pipeline could not bind
 * its metrics port again).
 */
import { createServer, type Server } from 'node:net'
import { describe, expect, it } from 'vitest'
import { ephemeralRangeStart, freePort } from '../../src/lab/ports.ts'

/** Listens on 127.0.0.1:`port`; the server, to close. */
function listenOn(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve(server))
  })
}

describe('freePort', () => {
  it('hands out ports below the ephemeral range, each one free to listen on, never the same twice', async () => {
    const ceiling = ephemeralRangeStart()
    // Each port listened on as soon as it is handed out, as a lab's server does: the e2e tier's labs
    // pick ports from the same range at the same time, and a port left unbound while 39 more are
    // found can be taken by one of them (seen once in a full run).
    const ports: number[] = []
    const servers: Server[] = []
    try {
      for (let i = 0; i < 40; i++) {
        const port = await freePort()
        ports.push(port)
        servers.push(await listenOn(port))
      }
    } finally {
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
    }
    expect(new Set(ports).size).toBe(ports.length)
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000)
      expect(port).toBeLessThan(ceiling)
    }
  })
})
