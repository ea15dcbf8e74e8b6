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
    const ports = await Promise.all(Array.from({ length: 40 }, () => freePort()))
    expect(new Set(ports).size).toBe(ports.length)
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000)
      expect(port).toBeLessThan(ceiling)
    }
    const servers = await Promise.all(ports.map(listenOn))
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
  })
})
