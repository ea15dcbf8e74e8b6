/**
 * A test run that died before its teardowns left its labs running under its temp dir; the next
 * run stops them (test/support/stale-runs.ts, called by the global setup test/support/tmpdir.ts):
 * every process whose arguments name the dir of a run whose vitest process is gone, one that
 * ignores SIGTERM too, and the dir with them. A run that lives, or a dir that names no owner yet
 * (a run that has just made it, or is writing its owner), is left alone.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { isAlive } from '../../src/core/process.ts'
import { claimRunDir, sweepDeadRuns } from '../support/stale-runs.ts'

const parent = mkdtempSync(join(tmpdir(), 'stale-runs-'))
const children: ChildProcess[] = []

afterAll(() => {
  for (const child of children) child.kill('SIGKILL')
  rmSync(parent, { recursive: true, force: true })
})

/** A run dir under `parent`; `owner`: this process, a process that has exited, none, or an empty file (one being claimed). */
function runDir(name: string, owner: 'alive' | 'dead' | 'none' | 'empty'): string {
  const dir = join(parent, name)
  mkdirSync(dir)
  if (owner === 'alive') claimRunDir(dir)
  if (owner === 'empty') writeFileSync(join(dir, 'owner'), '')
  if (owner === 'dead') {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
    writeFileSync(join(dir, 'owner'), `${gone.stdout} 1\n`)
  }
  return dir
}

/** A process whose arguments name a file under `dir`, as a lab's servers do; waits until it runs. */
async function holding(dir: string, ignoreTerm = false): Promise<number> {
  const code = `${ignoreTerm ? "process.on('SIGTERM', () => {});" : ''} setInterval(() => {}, 1000); process.stdout.write('up')`
  const child = spawn(process.execPath, ['-e', code, join(dir, 'sshd_config')], { stdio: ['ignore', 'pipe', 'ignore'] })
  children.push(child)
  await new Promise((resolve) => child.stdout?.once('data', resolve))
  return child.pid ?? 0
}

describe('a test run that died before its teardowns', () => {
  it("has what it left running stopped by the next run, SIGKILL after the grace, and its dir removed; other runs' are kept", async () => {
    const dead = runDir('svt-dead', 'dead')
    const alive = runDir('svt-alive', 'alive')
    const fresh = runDir('svt-fresh', 'none')
    const claiming = runDir('svt-claiming', 'empty')
    const other = join(parent, 'not-a-run')
    mkdirSync(other)
    const [server, stubborn, kept, unclaimed, midClaim, unrelated] = [
      await holding(dead),
      await holding(dead, true),
      await holding(alive),
      await holding(fresh),
      await holding(claiming),
      await holding(other),
    ]

    expect(await sweepDeadRuns(parent, 500)).toEqual([dead])

    expect(isAlive(server)).toBe(false)
    expect(isAlive(stubborn)).toBe(false)
    expect(existsSync(dead)).toBe(false)
    for (const pid of [kept, unclaimed, midClaim, unrelated]) expect(isAlive(pid)).toBe(true)
    for (const dir of [alive, fresh, claiming, other]) expect(existsSync(dir)).toBe(true)
    expect(await sweepDeadRuns(parent, 500)).toEqual([])
  })
})
