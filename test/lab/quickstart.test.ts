/**
 * The README's quick start, as a newcomer runs it on a fresh Debian machine: a clean clone of the
 * committed tree, Debian's Node (/usr/bin, Node 20) first on PATH and nothing else set up, then
 * `npm install` (from the npm cache or the registry) and `npm run demo`, exactly as written. Then a
 * second demo gets Ctrl-C (SIGINT to its foreground process group, npm included) once its lab is up,
 * and must leave no process of that lab running. The slowest file of the suite; nothing here is timed.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { labStateSchema, type LabState } from '../../src/lab/state.ts'
import { ROOT } from '../support/cli.ts'
import { isRunning, processesMentioning } from './labcore-helpers.ts'

const clone = join(mkdtempSync(join(tmpdir(), 'svcops-quickstart-')), 'svcops')
/** What this file started, each the leader of its process group (npm and what it runs). */
const started: ChildProcess[] = []

/**
 * A newcomer's environment: Debian's Node and npm first on PATH; none of the variables that running
 * this suite may have set (npm_*, NODE_OPTIONS, SVCOPS_*). TMPDIR stays this run's (test/support/tmpdir.ts).
 */
const newcomer: Record<string, string> = {
  PATH: '/usr/bin:/bin:/usr/sbin:/sbin',
  HOME: process.env.HOME ?? '/root',
  TMPDIR: tmpdir(),
  LANG: 'C.UTF-8',
}

interface Ran {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Runs `command` in the clone as the newcomer, in its own process group (a terminal's foreground job). */
function runInClone(command: string[], onSpawn?: (pid: number) => void): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0] ?? '', command.slice(1), {
      cwd: clone,
      env: newcomer,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
    started.push(child)
    if (child.pid !== undefined) onSpawn?.(child.pid)
  })
}

/** The clone's lab state file (the demo's lab runs with the default .svcops/lab of its checkout). */
const stateFile = join(clone, '.svcops', 'lab', 'state.json')

function readState(): LabState | undefined {
  try {
    return labStateSchema.parse(JSON.parse(readFileSync(stateFile, 'utf8')))
  } catch {
    // Not written yet, being replaced, or removed.
    return undefined
  }
}

/** What of a lab still runs: its recorded processes, and any process naming one of its paths. */
function stillRunning(state: LabState): string[] {
  const pids = state.entries.flatMap((e) => (e.pid !== undefined && isRunning(e.pid) ? [`${e.name} (pid ${e.pid})`] : []))
  const byPath = state.entries.flatMap((e) => e.paths.flatMap((p) => processesMentioning(p).map((pid) => `pid ${pid} under ${p}`)))
  return [...pids, ...byPath, ...processesMentioning(join(clone, 'src', 'lab')).map((pid) => `pid ${pid} of the clone's lab`)]
}

afterAll(() => {
  // After a failed case only: nothing of it may outlive the file.
  for (const child of started) if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid ?? 0), 'SIGKILL')
  if (existsSync(stateFile))
    execFileSync(join(clone, 'node_modules', '.bin', 'node'), [join(clone, 'bin', 'svcops'), 'lab', 'down'], {
      cwd: clone,
      stdio: 'ignore',
    })
})

describe('the quick start on a clean clone with Debian’s Node first on PATH', () => {
  it('installs without an engine warning, and npm run demo exits 0 ending with the commands to try next', async () => {
    expect(execFileSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }), 'Debian’s Node is older than svcops needs').toMatch(
      /^v(1\d|20|21|22\.(\d|1[0-7]))\./,
    )
    execFileSync('git', ['clone', '--quiet', '--no-hardlinks', ROOT, clone])

    const install = await runInClone(['npm', 'install'])
    expect(install.code, install.stderr).toBe(0)
    expect(`${install.stdout}${install.stderr}`).not.toContain('EBADENGINE')
    // The committed lockfile is what got installed (.ci/run checks the same).
    execFileSync('git', ['diff', '--exit-code', '--', 'package-lock.json'], { cwd: clone })
    expect(execFileSync(join(clone, 'node_modules', '.bin', 'node'), ['--version'], { encoding: 'utf8' })).toMatch(/^v24\./)

    const demo = await runInClone(['npm', 'run', 'demo'])
    expect(demo.code, demo.stderr.slice(-3000)).toBe(0)
    expect(demo.stderr).toMatch(/^✓ 16\. stop the lab/m)
    // The last words: commands to try next, each one this demo ran (and so one that works on a lab).
    const tryNext = demo.stdout.slice(demo.stdout.indexOf('Try it yourself'))
    const suggested = [...tryNext.matchAll(/^ {2}npx svcops (.+)$/gm)].map((m) => m[1])
    expect(suggested[0]).toMatch(/^lab up /)
    expect(suggested.at(-1)).toBe('lab down')
    const ran = new Set([...demo.stderr.matchAll(/^\$ svcops (.+)$/gm)].map((m) => m[1]))
    for (const command of suggested) expect(ran, command).toContain(command)
    expect(existsSync(stateFile)).toBe(false)
    expect(processesMentioning(clone)).toEqual([])
  }, 3_600_000)

  it('npm run demo stopped by Ctrl-C once its lab is up stops the lab, says so, and leaves no lab process', async () => {
    let up: LabState | undefined
    const demo = await runInClone(['npm', 'run', 'demo'], (pid) => {
      const poll = setInterval(() => {
        const state = readState()
        if (state?.complete) {
          up = state
          clearInterval(poll)
          // Ctrl-C: the terminal signals the whole foreground group (npm, the demo, the svcops it runs).
          process.kill(-pid, 'SIGINT')
        } else if (!isRunning(pid)) clearInterval(poll)
      }, 100)
    })
    expect(up, demo.stderr.slice(-3000)).toBeDefined()
    const lab = up as LabState
    expect(lab.entries.filter((e) => e.pid !== undefined).length).toBeGreaterThan(3)
    expect(demo.stderr).toContain('SIGINT: stopping the demo and what it started...')
    expect(demo.stderr).toMatch(/^Stopped the lab, as svcops lab down does: .*PostgreSQL.*\.$/m)
    expect(demo.stderr).toContain('Nothing the demo started is running. Start it again with: npm run demo')
    expect(demo.stderr).not.toMatch(/^✓ 16\. stop the lab/m)
    expect(stillRunning(lab)).toEqual([])
    expect(existsSync(stateFile)).toBe(false)
    expect(existsSync(join(clone, 'stacks', 'Pulumi.lab.yaml'))).toBe(false)
    expect(processesMentioning(clone)).toEqual([])
  }, 1_800_000)
})
