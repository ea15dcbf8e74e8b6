import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLabHost, stopLabHost, supervisordPid, type LabHostInfo } from '../../src/lab/hosts.ts'
import { isAlive } from '../../src/core/process.ts'
import { ensureLabUser, LAB_USER } from '../../src/lab/sshd.ts'
import { dpkgArgv, dpkgQueryArgv, supervisorSocketPath, transportFor } from '../../src/drivers/transports.ts'
import { supervisorctlArgv } from '../support/supervisorctl.ts'
import { supervisorDriver } from '../../src/drivers/services.ts'
import { runCommand, type Transport } from '../../src/core/runner.ts'
import { buildProbePackage, PROBE } from './hosts-fixture.ts'

const nonInteractive = ['--force-confdef', '--force-confold']

describe('lab host under a root too deep for a socket path', () => {
  it('runs its supervisord on a short socket in /tmp that the service driver finds, and removes it when stopped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcops-deep-'))
    const root = join(dir, 'a-folder-name-long-enough'.repeat(3), 'hosts', 'rec-1')
    const user = process.getuid?.() === 0 ? (await ensureLabUser(), LAB_USER) : (await import('node:os')).userInfo().username
    const host = await createLabHost({ name: 'rec-1', root, user, openUpTo: dir })
    try {
      expect(Buffer.byteLength(join(root, 'run/supervisor.sock'))).toBeGreaterThan(108)
      const socket = supervisorSocketPath(host)
      expect(socket).toMatch(/^\/tmp\/svcops-supervisor-[0-9a-f]{16}\.sock$/)
      expect(statSync(socket).isSocket()).toBe(true)
      const t = transportFor({ name: 'rec-1', url: 'http://127.0.0.1:1', root, canary: false })
      const cmd = supervisorDriver.statusCommand(host, 'no-such-program')
      const answer = await runCommand(t, cmd.argv, { check: false, ...(cmd.input ? { input: cmd.input.data } : {}) })
      // supervisord itself answered: a BAD_NAME fault, not a failed connection.
      expect(supervisorDriver.parseStatus(answer, host).status).toMatch(/^BAD_NAME: no-such-program/)
      await stopLabHost(host, { removeFiles: true })
      expect(existsSync(socket)).toBe(false)
    } finally {
      await stopLabHost(host, { removeFiles: true })
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('lab host: a sandbox with its own dpkg database and supervisord', () => {
  let dir: string
  let host: LabHostInfo
  let t: Transport
  const debs: Record<string, string> = {}

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcops-hosts-test-'))
    const user = process.getuid?.() === 0 ? (await ensureLabUser(), LAB_USER) : (await import('node:os')).userInfo().username
    for (const v of ['1.0.0', '2.0.0']) debs[v] = await buildProbePackage(v, join(dir, 'debs'))
    host = await createLabHost({ name: 'rec-1', root: join(dir, 'rec-1'), user, openUpTo: dir })
    t = transportFor({ name: host.name, url: 'http://127.0.0.1:1', root: host.root, canary: false })
  })
  afterAll(async () => {
    if (host) await stopLabHost(host, { removeFiles: true })
    rmSync(dir, { recursive: true, force: true })
  })

  const installed = async (): Promise<string> => (await runCommand(t, dpkgQueryArgv(host, ['-W', '-f', '${Version}', PROBE]))).stdout

  it('installs, upgrades and downgrades a real package inside the sandbox only', async () => {
    await runCommand(t, dpkgArgv(host, [...nonInteractive, '-i', debs['1.0.0']!]))
    expect(await installed()).toBe('1.0.0')
    expect(readFileSync(join(host.root, 'opt/probe/VERSION'), 'utf8')).toBe('1.0.0\n')
    // The maintainer script ran unchrooted but wrote inside the host root.
    expect(readFileSync(join(host.root, 'var/log/probe-postinst.log'), 'utf8')).toContain('postinst configure')
    // Files belong to the host's user, not to whoever ran the test.
    expect(statSync(join(host.root, 'opt/probe/VERSION')).uid).toBe(statSync(host.root).uid)

    await runCommand(t, dpkgArgv(host, [...nonInteractive, '-i', debs['2.0.0']!]))
    expect(await installed()).toBe('2.0.0')
    await runCommand(t, dpkgArgv(host, [...nonInteractive, '-i', debs['1.0.0']!]))
    expect(await installed()).toBe('1.0.0')
    expect(readFileSync(join(host.root, 'opt/probe/VERSION'), 'utf8')).toBe('1.0.0\n')
  })

  it('keeps an edited conffile on upgrade and leaves the new default beside it as .dpkg-dist', async () => {
    const conf = join(host.root, 'etc/opt/probe/probe.json')
    rmSync(`${conf}.dpkg-dist`, { force: true })
    writeFileSync(conf, JSON.stringify({ greeting: 'edited by the operator' }) + '\n')
    await runCommand(t, dpkgArgv(host, [...nonInteractive, '-i', debs['2.0.0']!]))
    expect(await installed()).toBe('2.0.0')
    expect(readFileSync(conf, 'utf8')).toContain('edited by the operator')
    expect(readFileSync(`${conf}.dpkg-dist`, 'utf8')).toContain('hello from 2.0.0')
  })

  it('runs the packaged program under the host supervisord: start, status, stop', async () => {
    expect(supervisordPid(host)).toBeGreaterThan(0)
    await runCommand(t, supervisorctlArgv(host, ['update']))
    const stopped = await runCommand(t, supervisorctlArgv(host, ['status', PROBE]), { check: false })
    expect(stopped.stdout).toMatch(new RegExp(`^${PROBE}\\s+STOPPED`))
    expect(stopped.code).not.toBe(0)

    await runCommand(t, supervisorctlArgv(host, ['start', PROBE]))
    const running = await runCommand(t, supervisorctlArgv(host, ['status', PROBE]))
    expect(running.stdout).toMatch(new RegExp(`^${PROBE}\\s+RUNNING\\s+pid (\\d+)`))
    const pid = Number(/pid (\d+)/.exec(running.stdout)?.[1])
    expect(isAlive(pid)).toBe(true)
    expect(readFileSync(join(host.root, 'var/log/probe/probe.log'), 'utf8')).toMatch(/INFO probe 2\.0\.0 started/)

    await runCommand(t, supervisorctlArgv(host, ['stop', PROBE]))
    expect((await runCommand(t, supervisorctlArgv(host, ['status', PROBE]), { check: false })).stdout).toMatch(/STOPPED/)
    expect(isAlive(pid)).toBe(false)
  })

  it('stops supervisord and its programs and removes the tree', async () => {
    await runCommand(t, supervisorctlArgv(host, ['start', PROBE]))
    const pid = supervisordPid(host)!
    await stopLabHost(host, { removeFiles: true })
    expect(isAlive(pid)).toBe(false)
    expect(existsSync(host.root)).toBe(false)
  })
})
