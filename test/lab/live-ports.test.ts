/**
 * `lab up --live` picks its components' ports (the controller's, each `/metrics`, the pipeline's TCP
 * endpoint) as free ones, and the components bind them only later, under supervisord. A port that
 * another process takes in between must not fail the lab: it picks again and starts again, and what
 * it records (the state file `lab status` reads, the environment file) names the ports in use.
 *
 * The race is made certain here: as the lab picks its first two ports, this test binds each one
 * itself on 127.0.0.1 (another process would do the same to the component) before the lab writes it.
 */
import type { Server } from 'node:net'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { liveHostsSection } from '../../src/live/live-platforms.ts'
import { labDown, labStatus, labUp } from '../../src/lab/lab.ts'
import { LIVE_COMPONENTS } from '../../src/lab/live/releases.ts'
import { readComponentHealth } from '../../src/lab/live-wait.ts'

const race = vi.hoisted(() => ({ taken: [] as Array<{ port: number; server: Server }>, picks: 0, wanted: 2 }))

vi.mock('../../src/lab/ports.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/lab/ports.ts')>()
  const { createServer: listenerOf } = await import('node:net')
  return {
    ...real,
    async freePort(): Promise<number> {
      // Only the ports of the live components: the caller's frame (sshd, started from live-lab.ts too, has its own).
      const fromLiveLab = new Error().stack?.split('\n')[2]?.includes('live-lab.ts') ?? false
      const pick = fromLiveLab ? race.picks++ : -1
      const port = await real.freePort()
      if (pick < 0 || pick >= race.wanted) return port
      const server = listenerOf()
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, '127.0.0.1', () => resolve())
      })
      race.taken.push({ port, server })
      return port
    },
  }
})

const base = mkdtempSync(join(tmpdir(), 'svcops-live-ports-'))
const dirs = { dir: join(base, 'lab'), stacksDir: join(base, 'stacks') }

beforeAll(async () => {
  process.env.SVCOPS_LAB_PACKAGES_DIR ??= join(tmpdir(), 'svcops-test-lab-packages')
  await labUp({ ...dirs, hosts: 0, live: '5.2.0' })
}, 240_000)

afterAll(async () => {
  await labDown(dirs)
  for (const { server } of race.taken) server.close()
})

it('comes up although two of the ports it picked were taken before its components bound them', () => {
  expect(race.taken).toHaveLength(2)
  expect(labStatus(dirs).complete).toBe(true)
})

it('names in its state file and environment file the ports its components answer on, none of the taken ones', async () => {
  const taken = race.taken.map((t) => t.port)
  const entries = labStatus(dirs).entries.filter((e) => e.kind === 'live-component')
  expect(entries.map((e) => e.name)).toEqual(LIVE_COMPONENTS.map((c) => `live-1 ${c}`))
  const live = liveHostsSection(loadEnvironmentFile(join(dirs.stacksDir, 'Pulumi.lab.yaml'), 'lab'))
  for (const [i, component] of LIVE_COMPONENTS.entries()) {
    const port = entries[i]?.port ?? 0
    expect(entries[i]?.running).toBe(true)
    expect(port).toBe(live.metricsPorts?.[component])
    expect(taken).not.toContain(port)
    expect(await readComponentHealth(port)).toMatchObject({ component, version: '5.2.0' })
  }
  const controller = entries.find((e) => e.name === 'live-1 system-controller')?.url ?? ''
  expect(controller).toBe(live.controllerUrl)
  expect(taken).not.toContain(Number(new URL(controller).port))
  for (const endpoint of live.tcpEndpoints ?? []) expect(taken).not.toContain(Number(endpoint.split(':')[1]))
  const status = await fetch(`${controller}/api/v2/status`, { signal: AbortSignal.timeout(3000) })
  expect(await status.json()).toEqual({ version: '5.2.0', status: 'ok' })
})
