import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { managerClientFor } from '../../src/clients/manager-client.ts'
import { recordingClientFor } from '../../src/clients/recording-client.ts'
import { loadEnvironment, requireSection } from '../../src/config/load.ts'
import type { LabState } from '../../src/lab/state.ts'
import { dpkgQueryArgv, transportFor } from '../../src/drivers/transports.ts'
import { supervisorctlArgv } from '../support/supervisorctl.ts'
import { runCommand } from '../../src/core/runner.ts'
import { SshTransport } from '../../src/drivers/ssh.ts'
import { isRunning, processesMentioning, svcops } from './labcore-helpers.ts'

/** What the lab left in its TMPDIR. */
function leftIn(dir: string): string[] {
  return execFileSync('ls', ['-A', dir], { encoding: 'utf8' })
    .split('\n')
    .filter((name) => name)
}

/** Live processes (ps -eo pid,stat,args) whose command line mentions `needle`; zombies are not running. */
function psLinesMentioning(needle: string): string[] {
  return execFileSync('ps', ['-eo', 'pid,stat,args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(needle) && !/^\s*\d+\s+Z/.test(line))
}

/** A private TMPDIR per lab: every temp dir the lab makes (PostgreSQL, sshd, host trees) lands in it. */
interface LabTestEnv extends Record<string, string> {
  SVCOPS_LAB_DIR: string
  SVCOPS_STACKS_DIR: string
  TMPDIR: string
  SVCOPS_LAB_PACKAGES_DIR: string
}

function labEnv(base: string, name: string): LabTestEnv {
  const tmp = join(base, `${name}-tmp`)
  execFileSync('mkdir', ['-p', tmp])
  // The host trees must be reachable by the SSH test user.
  chmodSync(base, 0o755)
  chmodSync(tmp, 0o755)
  // Packages are built once for all lab tests (the build is cached by content, not by lab).
  return {
    SVCOPS_LAB_DIR: join(base, `${name}-lab`),
    SVCOPS_STACKS_DIR: join(base, `${name}-stacks`),
    TMPDIR: tmp,
    SVCOPS_LAB_PACKAGES_DIR: join(tmpdir(), 'svcops-test-lab-packages'),
  }
}

describe('svcops lab up --hosts 2 --version 1.5.0 --recordings 3', () => {
  const base = mkdtempSync(join(tmpdir(), 'svcops-labup-'))
  const env = labEnv(base, 'a')
  let up: { code: number | null; stdout: string; stderr: string }

  beforeAll(async () => {
    up = await svcops(['lab', 'up', '--hosts', '2', '--version', '1.5.0', '--recordings', '3', '--json'], env)
  })
  afterAll(async () => {
    await svcops(['lab', 'down'], env)
    rmSync(base, { recursive: true, force: true })
  })

  it('prints what it started as JSON', () => {
    expect(up.code, up.stderr).toBe(0)
    const out = JSON.parse(up.stdout) as { ok: boolean; services: Array<{ name: string; kind: string; url?: string }> }
    expect(out.ok).toBe(true)
    expect(out.services.map((s) => s.name)).toEqual(
      expect.arrayContaining(['PostgreSQL', 'manager emulator', 'sshd', 'host rec-1', 'host rec-2']),
    )
    expect(out.services.find((s) => s.name === 'host rec-2')?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  })

  it('writes an environment file whose hosts answer health and content through the client, with the recordings created', async () => {
    const lab = loadEnvironment({ stackFile: join(env.SVCOPS_STACKS_DIR, 'Pulumi.lab.yaml') })
    const recording = requireSection(lab, 'recording')
    expect(recording.version).toBe('1.5.0')
    expect(recording.hosts.map((h) => h.name)).toEqual(['rec-1', 'rec-2'])
    expect(new Set(recording.hosts.map((h) => h.url)).size).toBe(2)
    expect(recording.database.password).toEqual({ file: expect.stringContaining(env.SVCOPS_LAB_DIR) as string })
    expect(statSync((recording.database.password as { file: string }).file).mode & 0o777).toBe(0o600)
    const manager = managerClientFor(lab)
    for (const host of recording.hosts) {
      const client = recordingClientFor(lab, host.name, manager)
      expect((await client.health()).healthy).toBe(true)
      const list = await client.list(100)
      expect(list.map((r) => r.title).sort()).toEqual(['Lab recording 1', 'Lab recording 2', 'Lab recording 3'])
    }
  })

  it('reaches each host over the loopback sshd with the installed release running under supervisor', async () => {
    const lab = loadEnvironment({ stackFile: join(env.SVCOPS_STACKS_DIR, 'Pulumi.lab.yaml') })
    for (const host of requireSection(lab, 'recording').hosts) {
      const t = transportFor(host)
      try {
        expect(t).toBeInstanceOf(SshTransport)
        expect((await runCommand(t, dpkgQueryArgv(host, ['-W', '-f', '${Version}', 'svc-recording']))).stdout).toBe('1.5.0')
        expect((await runCommand(t, supervisorctlArgv(host, ['status', 'svc-recording']))).stdout).toMatch(/^svc-recording\s+RUNNING/)
        const config = JSON.parse((await runCommand(t, ['cat', `${host.root ?? ''}/etc/opt/svc/recording.json`])).stdout) as {
          listen: { port: number }
        }
        expect(host.url).toBe(`http://127.0.0.1:${config.listen.port}`)
      } finally {
        await t.close()
      }
    }
  })

  it('reports every part running, then lab down leaves no process and no temp dir behind', async () => {
    const status = await svcops(['lab', 'status', '--json'], env)
    const parsed = JSON.parse(status.stdout) as { up: boolean; complete: boolean; entries: Array<{ name: string; running: boolean }> }
    expect(parsed.up && parsed.complete).toBe(true)
    expect(parsed.entries.filter((e) => !e.running)).toEqual([])
    const state = JSON.parse(readFileSync(join(env.SVCOPS_LAB_DIR, 'state.json'), 'utf8')) as LabState
    const pids = state.entries.flatMap((e) => (e.pid ? [e.pid] : []))
    expect(psLinesMentioning(env.TMPDIR).length).toBeGreaterThan(4)

    const down = await svcops(['lab', 'down'], env)
    expect(down.code, down.stderr).toBe(0)
    expect(down.stdout).toMatch(
      /^Stopped: environment file, backup keys and store, host rec-2, host rec-1, manager emulator, PostgreSQL, sshd, host trees, lab files\.$/m,
    )
    expect(pids.filter(isRunning)).toEqual([])
    expect(psLinesMentioning(env.TMPDIR)).toEqual([])
    expect(psLinesMentioning(env.SVCOPS_LAB_DIR)).toEqual([])
    expect(leftIn(env.TMPDIR)).toEqual([])
    expect(existsSync(env.SVCOPS_LAB_DIR)).toBe(false)
    expect(existsSync(join(env.SVCOPS_STACKS_DIR, 'Pulumi.lab.yaml'))).toBe(false)
  })
})

describe('svcops lab up interrupted while the hosts start', () => {
  const base = mkdtempSync(join(tmpdir(), 'svcops-labup-int-'))
  const env = labEnv(base, 'b')
  afterAll(async () => {
    await svcops(['lab', 'down'], env)
    rmSync(base, { recursive: true, force: true })
  })

  it('stops the hosts, sshd and everything else on Ctrl-C', async () => {
    let seen = false
    const result = await svcops(['lab', 'up', '--hosts', '2', '--recordings', '0'], env, (pid) => {
      const poll = setInterval(() => {
        // Interrupt once a host's supervisord runs: the moment when the most is half-started.
        if (processesMentioning(join(env.TMPDIR, 'svcops-lab-hosts-')).length > 0) {
          seen = true
          clearInterval(poll)
          process.kill(pid, 'SIGINT')
        } else if (!isRunning(pid)) clearInterval(poll)
      }, 20)
    })
    expect(seen, result.stderr).toBe(true)
    expect(result.code, result.stderr).toBe(130)
    expect(psLinesMentioning(env.TMPDIR)).toEqual([])
    expect(psLinesMentioning(env.SVCOPS_LAB_DIR)).toEqual([])
    expect(leftIn(env.TMPDIR)).toEqual([])
    expect(existsSync(env.SVCOPS_LAB_DIR)).toBe(false)
  })
})
