/** Free loopback ports for the lab's servers. */
import { createServer } from 'node:net'

/** Asks the kernel for a free port on 127.0.0.1. Races are possible; starters retry on EADDRINUSE. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

/**
 * A free port that is none of `given` (ports handed out for servers that may not listen yet): the
 * kernel may offer a port again once the probe that found it closed.
 */
export async function freePortNotIn(given: ReadonlySet<number>): Promise<number> {
  for (;;) {
    const port = await freePort()
    if (!given.has(port)) return port
  }
}
