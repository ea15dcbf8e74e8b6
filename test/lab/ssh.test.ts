import { execFileSync } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { RecordingHostConfig } from '../../src/config/schema.ts'
import { createLabHost, stopLabHost, type LabHostInfo } from '../../src/lab/hosts.ts'
import { startSshd, type Sshd } from '../../src/lab/sshd.ts'
import { CommandError } from '../../src/core/errors.ts'
import { collect } from '../../src/core/events.ts'
import { dpkgArgv, dpkgQueryArgv, transportFor } from '../../src/drivers/transports.ts'
import { supervisorctlArgv } from '../support/supervisorctl.ts'
import { registerSecret } from '../../src/core/redact.ts'
import { runCommand, type Transport } from '../../src/core/runner.ts'
import { SshTransport } from '../../src/drivers/ssh.ts'
import { buildProbePackage, PROBE } from './hosts-fixture.ts'

describe('SSH transport to a lab host through a real sshd on loopback', () => {
  let dir: string
  let sshd: Sshd
  let host: LabHostInfo
  let overSsh: Transport
  let locally: Transport
  let deb: string
  /** The lab's sshd as an SSH target of the transport. */
  const sshTarget = () => ({ host: sshd.host, port: sshd.port, user: sshd.user, keyFile: sshd.privateKeyPath, hostKey: sshd.hostKey })

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcops-ssh-test-'))
    sshd = await startSshd()
    deb = await buildProbePackage('1.0.0', join(dir, 'debs'))
    host = await createLabHost({ name: 'rec-1', root: join(dir, 'rec-1'), user: sshd.user, openUpTo: dir })
    const base: RecordingHostConfig = { name: 'rec-1', url: 'http://127.0.0.1:1', root: host.root, canary: false }
    overSsh = transportFor({
      ...base,
      ssh: sshTarget(),
    })
    locally = transportFor(base)
  })
  afterAll(async () => {
    await overSsh?.close()
    if (host) await stopLabHost(host, { removeFiles: true })
    await sshd?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('picks SSH for a host with an ssh section and the local transport otherwise', () => {
    expect(overSsh).toBeInstanceOf(SshTransport)
    expect(locally).not.toBeInstanceOf(SshTransport)
    expect(overSsh.host).toBe('rec-1')
  })

  it('uploads a package into the host cache and installs it over SSH', async () => {
    const cached = join(host.root, 'var/cache/svcops/packages', `${PROBE}_1.0.0_all.deb`)
    await overSsh.upload(deb, cached)
    await runCommand(overSsh, dpkgArgv(host, ['--force-confdef', '--force-confold', '-i', cached]))
    await runCommand(overSsh, supervisorctlArgv(host, ['update']))
    await runCommand(overSsh, supervisorctlArgv(host, ['start', PROBE]))
  })

  it('gives the same results over SSH and locally', async () => {
    const commands = [
      dpkgQueryArgv(host, ['-W', '-f', '${Package} ${Version} ${Status}\n', PROBE]),
      supervisorctlArgv(host, ['status', PROBE]),
      supervisorctlArgv(host, ['status', 'no-such-program']),
      ['cat', join(host.root, 'etc/opt/probe/probe.json')],
      ['id', '-un'],
      ['sh', '-c', 'echo out; echo err >&2; exit 3'],
    ]
    for (const argv of commands) {
      const [a, b] = await Promise.all([runCommand(overSsh, argv, { check: false }), runCommand(locally, argv, { check: false })])
      expect({ argv, code: a.code, stdout: a.stdout.replace(/uptime \S+/, ''), stderr: a.stderr }).toEqual({
        argv,
        code: b.code,
        stdout: b.stdout.replace(/uptime \S+/, ''),
        stderr: b.stderr,
      })
    }
    expect((await runCommand(overSsh, supervisorctlArgv(host, ['status', PROBE]))).stdout).toMatch(/RUNNING/)
    expect((await runCommand(overSsh, ['id', '-un'])).stdout.trim()).toBe(sshd.user)
  })

  it('passes stdin, cwd and environment through, keeping env values off the process table', async () => {
    expect((await runCommand(overSsh, ['cat'], { input: 'line one\nline two\n' })).stdout).toBe('line one\nline two\n')
    expect((await runCommand(overSsh, ['pwd'], { cwd: host.root })).stdout.trim()).toBe(host.root)
    const secret = registerSecret(`pw-${Math.random().toString(36).slice(2)}-x`)
    // The command waits for a file the test creates once it has read the process table, so the
    // table is read while the command runs, however long a loaded machine takes to start it.
    const go = join(host.root, `go-${Math.random().toString(36).slice(2)}`)
    const running = runCommand(overSsh, ['sh', '-c', 'while [ ! -e "$1" ]; do sleep 0.05; done; printf %s "$LAB_SECRET"; cat', 'sh', go], {
      env: { LAB_SECRET: secret },
      input: '+stdin',
    })
    let table = ''
    for (let i = 0; i < 600 && !table.includes(go); i++) {
      await new Promise((r) => setTimeout(r, 50))
      table = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
    }
    expect(table).toContain(go)
    expect(table).not.toContain(secret)
    writeFileSync(go, '')
    expect((await running).stdout).toBe(`${secret}+stdin`)
  })

  it('checks exit codes and redacts secrets from the error and the log', async () => {
    const secret = registerSecret('s3cr3t-value-in-output')
    const log = collect()
    const failure = await runCommand(overSsh, ['sh', '-c', `echo "${secret}" >&2; exit 7`]).catch((e: unknown) => e)
    log.stop()
    expect(failure).toBeInstanceOf(CommandError)
    expect((failure as CommandError).message).toMatch(/on rec-1 exited with code 7/)
    expect(JSON.stringify(log.events)).not.toContain(secret)
    expect((failure as CommandError).message).not.toContain(secret)
    expect(log.events.some((e) => e.kind === 'command' && e.host === 'rec-1' && e.code === 7)).toBe(true)
  })

  it('hangs up a command that outlives its timeout', async () => {
    const result = await runCommand(overSsh, ['sleep', '7.31'], { timeoutMs: 300, check: false })
    expect(result.code).toBeNull()
    const deadline = Date.now() + 3000
    while (execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).includes('sleep 7.31') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50))
    expect(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })).not.toContain('sleep 7.31')
    // The connection is still usable afterwards.
    expect((await runCommand(overSsh, ['echo', 'still here'])).stdout).toBe('still here\n')
  })

  it("reuses one connection, with Nagle's algorithm off on its socket (TCP_NODELAY)", async () => {
    // With Nagle's algorithm on, each small command waits ~45 ms for a round trip instead of a few
    // (bench/ssh/run.ts measures both). What is checked here is the socket option itself.
    const setNoDelay = vi.spyOn(Socket.prototype, 'setNoDelay')
    const fresh = new SshTransport(sshTarget())
    try {
      for (let i = 0; i < 3; i++) await runCommand(fresh, ['true'])
      const toSshd = setNoDelay.mock.contexts.filter((socket) => (socket as Socket).remotePort === sshd.port)
      expect(toSshd).toHaveLength(1)
      expect(setNoDelay.mock.calls[setNoDelay.mock.contexts.indexOf(toSshd[0])]).toEqual([true])
    } finally {
      setNoDelay.mockRestore()
      await fresh.close()
    }
  })

  it("encrypts with ssh2's native crypto binding, which npm run build:ssh2-binding builds for the Node svcops runs on", async () => {
    // Without it, ssh2 makes a cipher object per packet through Node's crypto API: about half as
    // much CPU again per command (bench/ssh/binding.ts). scripts/ssh2-binding.js builds it, when asked.
    const fresh = new SshTransport(sshTarget())
    try {
      await runCommand(fresh, ['true'])
      const ssh = await fresh.connect()
      const protocol = (ssh.connection as unknown as { _protocol: { _cipher: object; _decipher: object } })._protocol
      expect(
        [protocol._cipher.constructor.name, protocol._decipher.constructor.name],
        "ssh2's native binding is not built: run `npm run system-deps` (g++, make, python3), then `npm run build:ssh2-binding`",
      ).toEqual(['AESGCMCipherBinding', 'AESGCMDecipherBinding'])
    } finally {
      await fresh.close()
    }
  })

  it('accepts 20 connections at once', async () => {
    const many = Array.from({ length: 20 }, (_, i) => new SshTransport(sshTarget(), { name: `c${i}`, connectAttempts: 1 }))
    try {
      const results = await Promise.all(many.map((t) => runCommand(t, ['echo', t.host])))
      expect(results.map((r) => r.stdout.trim())).toEqual(many.map((t) => t.host))
    } finally {
      await Promise.all(many.map((t) => t.close()))
    }
  })

  it("pins the host key: the fingerprint is OpenSSH's own, another key is refused before any command, none pinned is refused", async () => {
    const openssh = execFileSync('ssh-keygen', ['-lf', join(sshd.dir, 'host_ed25519_key.pub')], { encoding: 'utf8' }).split(' ')[1]
    expect(sshd.hostKey).toBe(openssh)
    const mark = join(dir, 'ran-on-an-impostor')
    const wrong = 'SHA256:' + 'A'.repeat(43)
    const pinnedWrong = new SshTransport({ ...sshTarget(), hostKey: wrong }, { name: 'rec-1', connectAttempts: 3 })
    await expect(runCommand(pinnedWrong, ['touch', mark])).rejects.toThrow(
      `The SSH host key of rec-1 (127.0.0.1:${sshd.port}) is ${sshd.hostKey}, not the ${wrong} pinned in the environment file; refusing to connect.`,
    )
    const unpinned = new SshTransport(
      { host: sshd.host, port: sshd.port, user: sshd.user, keyFile: sshd.privateKeyPath },
      { name: 'rec-1' },
    )
    await expect(runCommand(unpinned, ['touch', mark])).rejects.toThrow(
      `The SSH host key of rec-1 (127.0.0.1:${sshd.port}) is not pinned (ssh.hostKey); refusing to connect. It shows ${sshd.hostKey}.`,
    )
    expect(existsSync(mark)).toBe(false)
  })

  it('trusts on first use only when asked, records the key in the state dir, and refuses a changed key afterwards', async () => {
    const stateDir = join(dir, 'state')
    process.env.SVCOPS_STATE_DIR = stateDir
    const target = { host: sshd.host, port: sshd.port, user: sshd.user, keyFile: sshd.privateKeyPath, trustOnFirstUse: true }
    const log = collect()
    try {
      const first = new SshTransport(target, { name: 'rec-1' })
      await runCommand(first, ['true'])
      await first.close()
      const second = new SshTransport(target, { name: 'rec-1' })
      await runCommand(second, ['true'])
      await second.close()
    } finally {
      log.stop()
    }
    const file = join(stateDir, 'known_hosts.json')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ [`127.0.0.1:${sshd.port}`]: sshd.hostKey })
    const warnings = log.events.filter((e) => e.kind === 'warn')
    expect(warnings).toHaveLength(1)
    expect(JSON.stringify(warnings[0])).toContain(`was trusted on first use: ${sshd.hostKey}`)

    // The host now shows another key (reinstalled, or someone in between).
    const other = 'SHA256:' + 'B'.repeat(43)
    writeFileSync(file, JSON.stringify({ [`127.0.0.1:${sshd.port}`]: other }))
    const changed = new SshTransport(target, { name: 'rec-1', connectAttempts: 1 })
    try {
      await expect(runCommand(changed, ['true'])).rejects.toThrow(
        `The SSH host key of rec-1 (127.0.0.1:${sshd.port}) is ${sshd.hostKey}, not the ${other} it showed on first use (recorded in ${file}); refusing to connect.`,
      )
    } finally {
      delete process.env.SVCOPS_STATE_DIR
    }
  })

  it('refuses a private key file that group or others can read, before connecting', async () => {
    const copy = join(dir, 'id_ed25519_copy')
    copyFileSync(sshd.privateKeyPath, copy)
    chmodSync(copy, 0o644)
    const loose = new SshTransport(
      { host: sshd.host, port: sshd.port, user: sshd.user, keyFile: copy, hostKey: sshd.hostKey },
      { name: 'rec-1' },
    )
    await expect(runCommand(loose, ['true'])).rejects.toThrow(
      `rec-1: ssh.keyFile: the file '${copy}' has mode 0644, readable by group or others; expected 0600.`,
    )
  })

  it('names the host and the command to try when it cannot connect', async () => {
    const nowhere = new SshTransport(
      { host: '127.0.0.1', port: 1, user: sshd.user, keyFile: sshd.privateKeyPath },
      { name: 'rec-9', connectAttempts: 1 },
    )
    await expect(runCommand(nowhere, ['true'])).rejects.toThrow(/Could not connect to rec-9 over SSH as .*@127\.0\.0\.1:1/)
  })
})
