/**
 * Free loopback ports for the lab's servers, below the kernel's ephemeral range.
 *
 * Outgoing connections take their local port from the ephemeral range (`ip_local_port_range`,
 * 32768-60999 by default). A lab server is given its port once and binds it again at each restart
 * (a component stopped and started by an upgrade or a rollback): a port in that range can be taken
 * in between by any connection on the machine (a test suite's HTTP clients, psql, ssh), and the
 * restart fails with EADDRINUSE. Ports below the range are taken only by servers, which a probe sees.
 */
import { randomInt } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/** The lowest port handed out: above the well-known and registered ports services commonly use. */
const LOWEST_PORT = 20_000
/** Ports this process handed out: never twice, so that two servers picked at once do not share one. */
const handedOut = new Set<number>()

/**
 * A port on 127.0.0.1 that nothing listens on, below the ephemeral range (picked at random and
 * probed). Races with another process are still possible; starters retry on EADDRINUSE. Where the
 * range leaves too little room below it, the kernel picks.
 */
export async function freePort(): Promise<number> {
  const ceiling = ephemeralRangeStart()
  if (ceiling - LOWEST_PORT >= 1000) {
    for (let attempt = 0; attempt < 100; attempt++) {
      const port = randomInt(LOWEST_PORT, ceiling)
      if (handedOut.has(port) || (await probe(port)) === undefined) continue
      handedOut.add(port)
      return port
    }
  }
  const port = await probe(0)
  if (port === undefined) throw new Error('No free port on 127.0.0.1: the kernel could not give one.')
  return port
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

/** The first port of the kernel's ephemeral range; Linux's default when it cannot be read. */
export function ephemeralRangeStart(): number {
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return Number.isInteger(start) && start > 0 ? start : 32768
  } catch {
    return 32768
  }
}

/** Listens on 127.0.0.1:`port` (0: a port the kernel picks, from the ephemeral range) and closes; the port, or undefined when it is taken. */
function probe(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer()
    server.unref()
    server.once('error', () => resolve(undefined))
    server.listen(port, '127.0.0.1', () => {
      const address = server.address()
      const bound = typeof address === 'object' && address ? address.port : undefined
      server.close(() => resolve(bound))
    })
  })
}
