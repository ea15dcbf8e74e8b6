/**
 * The demo's interruption (src/lab/demo-session.ts), without a lab: Ctrl-C, SIGTERM, SIGHUP and a
 * closed terminal each stop the command running, wait for it, run the stop once, say so and exit
 * 130, and the demo takes no further step. The whole demo interrupted on a real lab is
 * test/lab/quickstart.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

const DRIVER = new URL('./demo-session-driver.ts', import.meta.url).pathname
const dir = mkdtempSync(join(tmpdir(), 'svcops-demo-session-'))
const started: ChildProcess[] = []
afterAll(() => {
  // A demo that failed to end (the case's own failure) must not outlive the file.
  for (const child of started) if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid ?? 0), 'SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

interface Demo {
  child: ChildProcess
  log: string
  stderr: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Starts the miniature demo in its own process group, as a terminal's foreground job is. */
function startDemo(name: string): Demo {
  const log = join(dir, `${name}.log`)
  const child = spawn(process.execPath, [DRIVER, log], { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  started.push(child)
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  )
  return { child, log, stderr: () => stderr, exited }
}

const lines = (demo: Demo): string[] => (existsSync(demo.log) ? readFileSync(demo.log, 'utf8').trim().split('\n') : [])

async function waitFor(demo: Demo, line: string): Promise<void> {
  while (!lines(demo).includes(line)) await new Promise((r) => setTimeout(r, 25))
}

describe('the demo interrupted', () => {
  for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
    it(`by ${signal} sent to it alone: passes it to the running command, waits for it, stops the lab once, says so, exits 130`, async () => {
      const demo = startDemo(signal)
      await waitFor(demo, 'command running')
      process.kill(demo.child.pid ?? 0, signal)
      expect((await demo.exited).code).toBe(130)
      expect(lines(demo)).toEqual(['command running', `command got ${signal}`, 'command stopped', 'stop', 'stop done'])
      expect(demo.stderr()).toContain(`${signal}: stopping the demo and what it started...`)
      expect(demo.stderr()).toContain('Stopped the lab, as svcops lab down does: lab files.')
    })
  }

  it('by Ctrl-C (SIGINT to the whole foreground group), twice: the stop runs once and to its end, and says so', async () => {
    const demo = startDemo('ctrl-c')
    await waitFor(demo, 'command running')
    process.kill(-(demo.child.pid ?? 0), 'SIGINT')
    await waitFor(demo, 'stop')
    // An impatient second Ctrl-C, while the lab is being stopped.
    process.kill(-(demo.child.pid ?? 0), 'SIGINT')
    expect((await demo.exited).code).toBe(130)
    const seen = lines(demo)
    expect(seen.filter((l) => l === 'command got SIGINT').length).toBeGreaterThanOrEqual(1)
    expect(seen.filter((l) => !l.startsWith('command got'))).toEqual(['command running', 'command stopped', 'stop', 'stop done'])
    expect(demo.stderr()).toContain('SIGINT: still stopping what the demo started; it exits when that is done.')
    expect(demo.stderr()).toContain('Stopped the lab, as svcops lab down does: lab files.')
  })

  it('by a closed terminal: with its output gone, it still stops the command and the lab, and exits 130', async () => {
    const demo = startDemo('closed-terminal')
    await waitFor(demo, 'command running')
    demo.child.stdout?.destroy()
    demo.child.stderr?.destroy()
    process.kill(demo.child.pid ?? 0, 'SIGHUP')
    expect((await demo.exited).code).toBe(130)
    expect(lines(demo)).toEqual(['command running', 'command got SIGHUP', 'command stopped', 'stop', 'stop done'])
  })
})
