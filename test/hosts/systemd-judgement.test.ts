/**
 * What svcops makes of a systemd host without booting one: the sudo rules of a stack's rehearsal
 * host, a unit that `Restart=` is about to start again (a crash on the way up, one more start on the
 * way back), and the log line that says why a service stopped (never systemd's cgroup v1 note).
 * The same behaviour on real hosts: test/hosts/systemd-hosts.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { lastTelling, systemdDriver } from '../../src/drivers/services.ts'
import { judgeStarting, stoppedAfterStart } from '../../src/recording/recording-judge.ts'
import { targetStatusOf } from '../../src/recording/hosts/recording-hosts-platform.ts'
import { recordingSudoers } from '../../src/recording/hosts/sudoers.ts'
import type { TargetStatus } from '../../src/recording/recording-platform.ts'

const hostKey = 'SHA256:Vq9Nn3b0ZkzXj2Yh4VfKcPq1sLrT8mWdE6uA5oJiB7g'
const otherKey = 'SHA256:Wq9Nn3b0ZkzXj2Yh4VfKcPq1sLrT8mWdE6uA5oJiB7g'

/** Writes a stack file built from an object literal into a throwaway directory. */
function stackFile(config: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-systemd-judgement-'))
  const file = join(dir, 'Pulumi.test.yaml')
  writeFileSync(file, JSON.stringify({ config }))
  return file
}

const stack = (rehearsalUser: string, production: Record<string, unknown>[]) => ({
  'svcops:manager': { url: 'https://manager.test', email: 'ops@example.test', password: { env: 'SVCOPS_TEST_PASSWORD' } },
  'svcops:recording': {
    version: '1.5.0',
    packageDriver: 'apt',
    serviceDriver: 'systemd',
    hosts: production,
    database: { host: '127.0.0.1', name: 'recordings', user: 'recorder' },
    rehearsal: {
      host: {
        name: 'rehearse-1',
        url: 'http://rehearse-1.example.test:8080',
        ssh: { host: 'rehearse-1.example.test', user: rehearsalUser, hostKey: otherKey, become: 'sudo' },
      },
      database: 'recordings_rehearsal',
    },
  },
})

const rec1 = {
  name: 'rec-1',
  url: 'http://rec-1.example.test:8080',
  ssh: { host: 'rec-1.example.test', user: 'svcops', hostKey, become: 'sudo' },
}

describe('svcops render sudoers covers the rehearsal host', () => {
  it("gives the rehearsal host's own SSH user the rehearsal's rules, and names the host as the rehearsal host", () => {
    const text = recordingSudoers(loadEnvironmentFile(stackFile(stack('rehearser', [rec1]))))
    const rules = text.split('\n').filter((l) => l && !l.startsWith('#') && !l.startsWith('Defaults'))
    const of = (user: string) => rules.filter((l) => l.startsWith(`${user} `)).map((l) => l.slice(user.length))
    expect(of('rehearser')).toEqual(of('svcops'))
    expect(of('rehearser')).toContain(' ALL=(root) NOPASSWD: /usr/bin/systemctl stop -- svc-recording')
    expect(text).toContain('as root on rehearse-1 (the rehearsal host) (apt, systemd), for rehearser alone.')
  })

  it('renders the rules of a rehearsal host that shares the SSH user once, the heading naming both hosts', () => {
    const text = recordingSudoers(loadEnvironmentFile(stackFile(stack('svcops', [rec1]))))
    expect(text).toContain('as root on rec-1, rehearse-1 (the rehearsal host) (apt, systemd), for svcops alone.')
    const stop = text.split('\n').filter((l) => l === 'svcops ALL=(root) NOPASSWD: /usr/bin/systemctl stop -- svc-recording')
    expect(stop).toHaveLength(1)
  })

  it('renders rules for a rehearsal host reached over SSH when the production hosts are local', () => {
    const text = recordingSudoers(
      loadEnvironmentFile(stackFile(stack('rehearser', [{ name: 'rec-1', url: 'http://127.0.0.1:8080', transport: 'local' }]))),
    )
    expect(text).toContain('rehearser ALL=(root) NOPASSWD: /usr/bin/systemctl start -- svc-recording')
    expect(text).not.toMatch(/^svcops /m)
  })
})

/** The status the hosts platform reads from `systemctl show` (recording-hosts-platform.ts). */
function shown(properties: string): TargetStatus {
  return targetStatusOf(
    systemdDriver.parseStatus({ code: 0, signal: null, stdout: properties, stderr: '', durationMs: 1 }, { name: 'rec-1' }),
  )
}

describe("a unit that Restart= is about to start again, while svcops waits for the service's health", () => {
  const autoRestart = shown('ActiveState=activating\nSubState=auto-restart\nNRestarts=1\n')
  const startLimitHit = shown('ActiveState=failed\nSubState=failed\nNRestarts=5\n')

  it('fails the start at once on the way up: the new release crashed', () => {
    expect(judgeStarting(autoRestart, 0)).toEqual({ notRunning: 1, stopped: true })
  })

  it('keeps waiting on the way back: the previous release gets its next start', () => {
    expect(judgeStarting(autoRestart, 0, true)).toEqual({ notRunning: 0, stopped: false })
    expect(judgeStarting(autoRestart, 1, true)).toEqual({ notRunning: 0, stopped: false })
  })

  it('stops waiting on the way back too once systemd gave up (its start limit hit)', () => {
    expect(judgeStarting(startLimitHit, 0, true).stopped).toBe(true)
  })
})

describe('the log line that says why a service stopped', () => {
  const journal = [
    '2026-12-02T13:00:00+0000 rec-1 node[812]: 2026-12-02T13:00:00.100Z INFO recording service 2.1.0 starting',
    '2026-12-02T13:00:00+0000 rec-1 node[812]: 2026-12-02T13:00:00.300Z FATAL migration to schema 3 failed',
    '2026-12-02T13:00:00+0000 rec-1 systemd[1]: svc-recording.service: Main process exited, code=exited, status=1/FAILURE',
    '2026-12-02T13:00:00+0000 rec-1 systemd[1]: svc-recording.service: Failed to kill control group /system.slice/svc-recording.service, ignoring: Input/output error',
  ]

  it("is the service's own error line, not systemd's cgroup v1 note that follows it", () => {
    expect(lastTelling(journal)).toBe(journal[1])
    const failure = stoppedAfterStart(
      { name: 'rec-1', label: 'svc-recording on rec-1' },
      shown('ActiveState=failed\nSubState=failed\n'),
      journal,
    )
    expect(failure.message).toContain('last log line: 2026-12-02T13:00:00+0000 rec-1 node[812]: 2026-12-02T13:00:00.300Z FATAL migration')
    expect(failure.message).not.toContain('Failed to kill control group')
  })

  it("is systemd's exit status when the service wrote nothing", () => {
    expect(lastTelling(journal.slice(2))).toBe(journal[2])
  })
})
