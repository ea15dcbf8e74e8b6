/**
 * The live production system on real hosts: `svcops lab up --host-kind systemd --live 1.0.0
 * --live-hosts 2` boots two Debian machines with systemd as PID 1 (the system controller on live-1;
 * an ingest, a pipeline and a control panel on live-2), installs the components with apt-get from
 * the lab's signed repository, and svcops reaches them as the unprivileged user `svcops`, whose only
 * root rights are the rules `svcops render sudoers` prints. Through the CLI, in order: an upgrade
 * across a major that writes the settings file and every environment file (the PSK of 2.0.0), with
 * the apt and systemd drivers and the files through sudo; verify; a rollback from each host's package
 * cache with the repository gone; a component's crash restarted by its unit's Restart=; a sudo rule
 * removed (refused before anything stops, naming it); an upgrade killed by SIGKILL after a
 * component stopped, then ended by `svcops resume ID --rollback` (every component back on 1.0.0), and
 * one killed after write-config, finished by `svcops resume ID` (every component on 2.0.0); and lab
 * down leaving nothing behind.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import type { LiveConfig } from '../../src/config/schema.ts'
import { ExitCode } from '../../src/core/errors.ts'
import { runCommand } from '../../src/core/runner.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { LIVE_LOCK_PATH } from '../../src/live/hosts/live-hosts-platform.ts'
import { labDown, labUp, labPaths, type LabState } from '../../src/lab/lab.ts'
import { stopProcess } from '../../src/lab/lab-processes.ts'
import { runAsHostRoot } from '../../src/lab/systemd-hosts.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { runSvcops, runSvcopsKilledAt, type CliRun } from '../support/cli.ts'
import { gateIds } from '../support/live-lab.ts'

const work = mkdtempSync(join(tmpdir(), 'svcops-systemd-live-'))
const dirs = { dir: join(work, 'lab'), stacksDir: join(work, 'stacks') }
const runsDir = join(work, 'runs')
const cliEnv = {
  SVCOPS_LAB_DIR: dirs.dir,
  SVCOPS_STACKS_DIR: dirs.stacksDir,
  SVCOPS_RUNS_DIR: runsDir,
  SVCOPS_STATE_DIR: join(work, 'state'),
}
const UNITS = { 'live-1': ['svc-system-controller'], 'live-2': ['svc-ingest', 'svc-pipeline', 'svc-control-panel'] } as const
type HostName = keyof typeof UNITS
let state: LabState
let live: LiveConfig

const svcops = (args: string[]): Promise<CliRun> => runSvcops(['--env', 'lab', ...args], { env: cliEnv })
const expectOk = (run: CliRun): void => expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(ExitCode.ok)

/** The booted host `name` as lab up recorded it (its systemd-nspawn's pid). */
function host(name: HostName): { pid: number; name: string } {
  const entry = state.entries.find((e) => e.kind === 'systemd-host' && e.info.name === name)
  if (!entry || typeof entry.info.pid !== 'number') throw new Error(`no systemd host ${name} in the lab state`)
  return { pid: entry.info.pid, name }
}

/** Runs `argv` on host `name` over SSH as the lab's unprivileged user, as svcops does. */
async function asSshUser(name: HostName, argv: string[]): Promise<string> {
  const config = live.hosts!.find((h) => h.name === name)!
  const t = transportFor({ url: live.controllerUrl, canary: false, ...config })
  try {
    return (await runCommand(t, argv, { check: false })).stdout.trim()
  } finally {
    await t.close()
  }
}

/** The installed version of every component, by host. */
async function installed(): Promise<string[]> {
  const out: string[] = []
  for (const [name, units] of Object.entries(UNITS) as [HostName, readonly string[]][])
    for (const unit of units) out.push(`${name} ${unit} ${await asSshUser(name, ['dpkg-query', '-W', '-f=${Version}', unit])}`)
  return out
}
const everyComponentOn = (v: string): string[] =>
  Object.entries(UNITS).flatMap(([name, units]) => units.map((unit) => `${name} ${unit} ${v}`))

async function everyUnitActive(): Promise<void> {
  for (const [name, units] of Object.entries(UNITS) as [HostName, readonly string[]][])
    for (const unit of units) expect(await asSshUser(name, ['systemctl', 'is-active', unit]), `${unit} on ${name}`).toBe('active')
}

/** Whether the live system's run lock is on the controller's host (the file a run takes). */
async function lockHeld(): Promise<boolean> {
  return (await runAsHostRoot(host('live-1'), ['test', '-e', LIVE_LOCK_PATH], { check: false })).code === 0
}

/** `upgrade live --to 2.0.0` killed by SIGKILL right after `boundary`: the id of the run it left running, its lock held. */
async function upgradeKilledAt(boundary: string): Promise<string> {
  const args = ['--env', 'lab', 'upgrade', 'live', '--to', '2.0.0', '--yes', '--ack', gateIds(live, '1.0.0', '2.0.0').join(',')]
  const killed = await runSvcopsKilledAt(args, boundary, runsDir, { env: cliEnv })
  expect(killed.signal, `${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
  const id = listRuns(runsDir)[0]?.id ?? ''
  expect(Journal.open(id).run.phase).toBe('running')
  expect(await lockHeld()).toBe(true)
  return id
}

/** `svcops resume ID ...args` ends run `id` in `phase`: every component on `version`, its unit active, verify live passing, the lock released. */
async function resumedTo(id: string, args: string[], phase: string, version: string): Promise<void> {
  expectOk(await svcops(['resume', id, ...args]))
  expect(Journal.open(id).run.phase).toBe(phase)
  expect(await installed()).toEqual(everyComponentOn(version))
  await everyUnitActive()
  expectOk(await svcops(['verify', 'live']))
  expect(await lockHeld()).toBe(false)
}

beforeAll(async () => {
  process.env.SVCOPS_RUNS_DIR = runsDir
  state = await labUp({ ...dirs, hosts: 0, hostKind: 'systemd', live: '1.0.0', liveHosts: 2 })
  const env = loadEnvironmentFile(labPaths(dirs).envFile, 'lab')
  if (env.live?.platform !== 'hosts') throw new Error('the lab wrote no live section on hosts')
  live = env.live
}, 300_000)

afterAll(async () => {
  delete process.env.SVCOPS_RUNS_DIR
  await labDown(dirs).catch(() => undefined)
  rmSync(work, { recursive: true, force: true })
}, 120_000)

describe('the live system on systemd hosts', () => {
  it('runs each component as its package’s systemd unit, the files root’s and 0600, svcops unprivileged', async () => {
    for (const name of ['live-1', 'live-2'] as const) {
      expect(await asSshUser(name, ['ps', '-o', 'comm=', '-p', '1'])).toBe('systemd')
      expect(await asSshUser(name, ['id', '-un'])).toBe('svcops')
      for (const unit of UNITS[name]) {
        const shown = await asSshUser(name, ['systemctl', 'show', '--property=Type,Restart,EnvironmentFiles', '--', unit])
        expect(shown).toContain('Type=simple')
        expect(shown).toContain('Restart=on-failure')
        expect(shown).toContain(`EnvironmentFiles=/etc/default/${unit} (ignore_errors=yes)`)
        expect(await asSshUser(name, ['stat', '-c', '%U %a', `/etc/default/${unit}`])).toBe('root 600')
        // The SSH user cannot read the PSK's files itself.
        expect(await asSshUser(name, ['sh', '-c', `cat /etc/default/${unit} >/dev/null 2>&1; echo $?`])).toBe('1')
      }
    }
    await everyUnitActive()
    expect(await installed()).toEqual(everyComponentOn('1.0.0'))
  })

  it('gives the SSH user exactly the rules svcops render sudoers prints, which visudo accepts, and no shell', async () => {
    const rendered = await svcops(['render', 'sudoers'])
    expectOk(rendered)
    for (const name of ['live-1', 'live-2'] as const)
      expect((await runAsHostRoot(host(name), ['cat', '/etc/sudoers.d/svcops'])).stdout).toBe(`${rendered.stdout.trimEnd()}\n`)
    expect(rendered.stdout).not.toMatch(/NOPASSWD: ALL|\/bin\/sh|bash/)
    const file = join(work, 'rendered.sudoers')
    writeFileSync(file, rendered.stdout)
    expect(execFileSync('visudo', ['-cf', file], { encoding: 'utf8' })).toContain('parsed OK')
    // Refused by that sudo: a shell, a file the rules do not name.
    expect(await asSshUser('live-2', ['sh', '-c', 'sudo -n -l -- /bin/sh -c id >/dev/null 2>&1; echo $?'])).toBe('1')
    expect(await asSshUser('live-2', ['sh', '-c', 'sudo -n -l -- head -c 1048577 -- /etc/shadow >/dev/null 2>&1; echo $?'])).toBe('1')
  })
})

// Each case is a whole run over two booted hosts: minutes on a loaded two-core machine.
describe('upgrade, verify and rollback through sudo', { timeout: 600_000 }, () => {
  it('upgrades to 2.0.0: apt stages both versions, stop, install pinned, start, the PSK written through sudo, the journal read', async () => {
    const run = await svcops(['upgrade', 'live', '--to', '2.0.0', '--yes', '--ack', gateIds(live, '1.0.0', '2.0.0').join(',')])
    expectOk(run)
    expect(await installed()).toEqual(everyComponentOn('2.0.0'))
    await everyUnitActive()
    // Staged before anything stopped: both versions in the host's package cache.
    const cache = await asSshUser('live-2', ['ls', '/var/cache/apt/archives'])
    expect(cache).toContain('svc-ingest_2.0.0_all.deb')
    expect(cache).toContain('svc-ingest_1.0.0_all.deb')
    // The files the run wrote as root: still root's and 0600, the PSK in each, no new file left behind.
    const psk = (
      await runAsHostRoot(host('live-2'), ['sed', '-n', 's/^SVC_SYSTEM_CONTROLLER_PSK=//p', '/etc/default/svc-ingest'])
    ).stdout.trim()
    expect(psk.length).toBeGreaterThan(20)
    expect(await asSshUser('live-2', ['stat', '-c', '%U %a', '/etc/default/svc-ingest'])).toBe('root 600')
    expect(await asSshUser('live-2', ['ls', '-a', '/etc/default'])).not.toContain('.svcops-new')
    expect(run.stdout + run.stderr).not.toContain(psk)
    // The component logs to journald, which svcops' check read.
    expect(await asSshUser('live-2', ['journalctl', '--unit=svc-ingest', '--no-pager', '-o', 'cat'])).toContain(
      'INFO ingest 2.0.0: started',
    )
  })

  it('verify finds the system on 2.0.0 as the unprivileged user', async () => {
    expectOk(await svcops(['verify', 'live']))
  })

  it('rolls back to 1.0.0 from the package cache of each host, with the apt repository gone', async () => {
    const repo = state.entries.find((e) => e.name === 'apt repository (live)')
    expect(repo).toBeDefined()
    await stopProcess(repo!)
    expectOk(await svcops(['rollback', 'live', '--yes']))
    expect(await installed()).toEqual(everyComponentOn('1.0.0'))
    await everyUnitActive()
    expect(await asSshUser('live-2', ['stat', '-c', '%U %a', '/etc/default/svc-ingest'])).toBe('root 600')
  })

  it("a component's crash is restarted by its unit (Restart=on-failure); it reconnects and verify passes", async () => {
    await runAsHostRoot(host('live-2'), ['systemctl', 'kill', '--kill-whom=main', '--signal=SIGKILL', 'svc-pipeline'])
    let restarts = '0'
    for (let i = 0; i < 100 && restarts === '0'; i++) {
      restarts = await asSshUser('live-2', ['systemctl', 'show', '--property=NRestarts', '--value', '--', 'svc-pipeline'])
      if (restarts === '0') await new Promise((r) => setTimeout(r, 100))
    }
    expect(restarts).toBe('1')
    let verify = await svcops(['verify', 'live'])
    // The restarted pipeline connects again within a few seconds.
    for (let i = 0; i < 20 && verify.code !== ExitCode.ok; i++) {
      await new Promise((r) => setTimeout(r, 1000))
      verify = await svcops(['verify', 'live'])
    }
    expectOk(verify)
    await everyUnitActive()
  })

  it('with one sudo rule removed, the upgrade is refused before anything stops, naming the rule', async () => {
    const live2 = host('live-2')
    const original = (await runAsHostRoot(live2, ['cat', '/etc/sudoers.d/svcops'])).stdout
    await runAsHostRoot(live2, ['sed', '-i', '/dd of\\\\=\\/etc\\/default\\/svc-pipeline/d', '/etc/sudoers.d/svcops'])
    expect((await runAsHostRoot(live2, ['cat', '/etc/sudoers.d/svcops'])).stdout).not.toBe(original)
    try {
      const since = await asSshUser('live-2', ['date', '+%s'])
      const run = await svcops(['upgrade', 'live', '--to', '2.0.0', '--yes', '--ack', gateIds(live, '1.0.0', '2.0.0').join(',')])
      expect(run.code).not.toBe(ExitCode.ok)
      expect(run.stdout + run.stderr).toContain(
        "sudo on live-2 does not let svcops run 'dd of=/etc/default/svc-pipeline.svcops-new conv=notrunc,fsync oflag=nofollow status=none' (sudo -n -l refused it)",
      )
      expect(await installed()).toEqual(everyComponentOn('1.0.0'))
      await everyUnitActive()
      for (const unit of UNITS['live-2'])
        expect(await asSshUser('live-2', ['journalctl', `--unit=${unit}`, `--since=@${since}`, '--no-pager', '-o', 'cat'])).not.toContain(
          'stopping',
        )
    } finally {
      await runAsHostRoot(live2, ['tee', '/etc/sudoers.d/svcops'], { input: original })
    }
  })
})

// The repository is gone since the rollback case: both versions come from each host's package cache.
describe('a live upgrade killed by SIGKILL', { timeout: 600_000 }, () => {
  it('killed after the controller stopped: svcops resume ID --rollback puts every component back on 1.0.0', async () => {
    const id = await upgradeKilledAt('stop@live-1/system-controller')
    // Every component stopped, the controller last; nothing installed yet.
    for (const [name, units] of Object.entries(UNITS) as [HostName, readonly string[]][])
      for (const unit of units) expect(await asSshUser(name, ['systemctl', 'is-active', unit]), `${unit} on ${name}`).not.toBe('active')
    await resumedTo(id, ['--rollback'], 'rolled-back', '1.0.0')
  })

  it('killed after write-config (every component stopped, the 2.0.0 files written): svcops resume ID finishes it on 2.0.0', async () => {
    const id = await upgradeKilledAt('write-config')
    expect(await asSshUser('live-2', ['systemctl', 'is-active', 'svc-ingest'])).not.toBe('active')
    expect(await installed()).toEqual(everyComponentOn('1.0.0'))
    // 1.0.0 has no PSK; write-config put 2.0.0's into every environment file before the kill.
    expect((await runAsHostRoot(host('live-2'), ['cat', '/etc/default/svc-ingest'])).stdout).toContain('SVC_SYSTEM_CONTROLLER_PSK=')
    await resumedTo(id, [], 'succeeded', '2.0.0')
    expect(await asSshUser('live-2', ['stat', '-c', '%U %a', '/etc/default/svc-ingest'])).toBe('root 600')
  })
})

describe('lab down', () => {
  it('leaves no container, mount or process', async () => {
    const pids = state.entries.filter((e) => e.kind === 'systemd-host').map((e) => e.info.pid as number)
    await labDown(dirs)
    // This lab's own folders only: another lab of systemd hosts may run beside it.
    const mounts = readFileSync('/proc/self/mounts', 'utf8')
    const folders = state.entries.filter((e) => e.kind === 'files').flatMap((e) => e.paths)
    expect(folders.length).toBeGreaterThan(0)
    for (const folder of folders) expect(mounts).not.toContain(folder)
    for (const pid of pids) expect(existsSync(`/proc/${pid}`)).toBe(false)
    for (const entry of state.entries) for (const path of entry.paths) expect(existsSync(path)).toBe(false)
  })
})
