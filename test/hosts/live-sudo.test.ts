/**
 * Become on the live system's hosts, without a host: the commands svcops runs as root there are
 * fixed argv (no shell, no random name), so `svcops render sudoers` can name each one; visudo
 * accepts the rules; a host without `ssh.become` gets none; the files of svcops' own folder never
 * run as root. test/hosts/systemd-live.test.ts runs them on real systemd hosts.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { liveHostsSchema } from '../../src/config/schema.ts'
import { fileCommands } from '../../src/live/hosts/host-files.ts'
import { liveRootCommands, renderLiveSudoers } from '../../src/live/hosts/live-sudo.ts'

const dir = mkdtempSync(join(tmpdir(), 'svcops-live-sudo-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const ssh = (port: number, become?: 'sudo') => ({ host: '127.0.0.1', port, user: 'svcops', ...(become ? { become } : {}) })
const live = (become?: 'sudo') =>
  liveHostsSchema.parse({
    version: '5.0.0',
    controllerUrl: 'http://127.0.0.1:9000',
    packageDriver: 'apt',
    serviceDriver: 'systemd',
    hosts: [
      { name: 'live-1', ssh: ssh(2201, become), components: { 'system-controller': 9000 } },
      { name: 'live-2', ssh: ssh(2202, become), components: { ingest: 9001, pipeline: 9002, 'control-panel': 9003 } },
    ],
  })

describe('svcops render sudoers for live hosts', () => {
  it('names every root command of the live playbooks argv-exactly, which visudo accepts, with no shell and no ALL', () => {
    const text = renderLiveSudoers(live('sudo'), 'prod') ?? ''
    const rules = text.split('\n').filter((l) => l && !l.startsWith('#') && !l.startsWith('Defaults'))
    const file = join(dir, 'live.sudoers')
    writeFileSync(file, text)
    expect(execFileSync('visudo', ['-cf', file], { encoding: 'utf8' })).toContain('parsed OK')
    expect(text).not.toMatch(/NOPASSWD: ALL|\/bin\/sh|bash/)
    // No wildcard: a pattern only in a regular expression's version (sudo 1.9.10's ^...$ rules).
    expect(rules.filter((r) => r.includes('*') && !/ \^.*\$$/.test(r))).toEqual([])
    // The packages and services of each host's components.
    expect(rules).toContain('svcops ALL=(root) NOPASSWD: /usr/bin/systemctl stop -- svc-ingest')
    expect(rules).toContain('svcops ALL=(root) NOPASSWD: /usr/bin/systemctl start -- svc-system-controller')
    expect(rules.some((r) => r.includes('/usr/bin/apt-get') && r.includes('svc-pipeline\\=[0-9]'))).toBe(true)
    // The environment file of a component: read, written whole through a fixed new file, removed.
    expect(rules).toEqual(
      expect.arrayContaining([
        'svcops ALL=(root) NOPASSWD: /usr/bin/head -c 1048577 -- /etc/default/svc-ingest',
        'svcops ALL=(root) NOPASSWD: /usr/bin/install -m 0600 -T /dev/null /etc/default/svc-ingest.svcops-new',
        'svcops ALL=(root) NOPASSWD: /usr/bin/dd of\\=/etc/default/svc-ingest.svcops-new conv\\=notrunc\\,fsync oflag\\=nofollow status\\=none',
        'svcops ALL=(root) NOPASSWD: /usr/bin/mv -f -T -- /etc/default/svc-ingest.svcops-new /etc/default/svc-ingest',
        'svcops ALL=(root) NOPASSWD: /usr/bin/rm -f -- /etc/default/svc-ingest',
      ]),
    )
    // The settings file is on the controller's host only: its rules name paths under /etc/opt/svc.
    const liveConfig = live('sudo')
    const [one, two] = liveConfig.hosts ?? []
    const argvs = (h: typeof one) => liveRootCommands(liveConfig, h!).map((c) => c.argv.join(' '))
    expect(argvs(one).some((a) => a.includes('/etc/opt/svc/'))).toBe(true)
    expect(argvs(two).some((a) => a.includes('/etc/opt/svc/'))).toBe(false)
    expect(argvs(two).some((a) => a.includes('svc-system-controller'))).toBe(false)
  })

  it('renders nothing for live hosts without ssh.become', () => {
    expect(renderLiveSudoers(live(), 'prod')).toBeUndefined()
  })

  it("runs the files of svcops' own folder (the runs, their copies of the files) as the SSH user, never as root", () => {
    expect(Object.values(fileCommands({ name: 'live-1' }, '/var/lib/svcops/runs/r1.json')).every((c) => !c.asRoot)).toBe(true)
    expect(Object.values(fileCommands({ name: 'live-1' }, '/etc/default/svc-ingest')).every((c) => c.asRoot)).toBe(true)
  })
})
