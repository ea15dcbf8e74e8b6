/**
 * The real drivers on real hosts: `svcops lab up --host-kind systemd` boots two Debian
 * machines with systemd as PID 1 (systemd-nspawn), installs the recording service there with
 * apt-get from the lab's signed repository, and svcops reaches them over their own sshd as the
 * unprivileged user `svcops`, whose only root rights are the rules `svcops render sudoers` prints.
 * Through the CLI, in order: upgrade with the apt and systemd drivers, a crash restarted by the
 * unit's Restart=, doctor and verify, the doctor's causes of a real host (a password file the
 * service cannot read, a unit that fails its start, a full disk), a sudo rule removed (refused
 * before anything stops), a run killed and resumed, a rollback from the host's package cache with
 * the repository gone, and lab down leaving nothing behind.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import type { Environment } from '../../src/config/schema.ts'
import { ExitCode } from '../../src/core/errors.ts'
import { runCommand } from '../../src/core/runner.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { labDown, labUp, labPaths, type LabState } from '../../src/lab/lab.ts'
import { stopProcess } from '../../src/lab/lab-processes.ts'
import { runAsHostRoot } from '../../src/lab/systemd-hosts.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { runSvcops, runSvcopsKilledAt, type CliRun } from '../support/cli.ts'

const work = mkdtempSync(join(tmpdir(), 'svcops-systemd-hosts-'))
const dirs = { dir: join(work, 'lab'), stacksDir: join(work, 'stacks') }
const runsDir = join(work, 'runs')
const cliEnv = {
  SVCOPS_LAB_DIR: dirs.dir,
  SVCOPS_STACKS_DIR: dirs.stacksDir,
  SVCOPS_RUNS_DIR: runsDir,
  SVCOPS_STATE_DIR: join(work, 'state'),
}
let state: LabState
let env: Environment

const svcops = (args: string[], extra: Record<string, string> = {}): Promise<CliRun> =>
  runSvcops(['--env', 'lab', ...args], { env: { ...cliEnv, ...extra } })

/** The booted host `name` as lab up recorded it (its systemd-nspawn's pid). */
function host(name: string): { pid: number; name: string } {
  const entry = state.entries.find((e) => e.kind === 'systemd-host' && e.info.name === name)
  if (!entry || typeof entry.info.pid !== 'number') throw new Error(`no systemd host ${name} in the lab state`)
  return { pid: entry.info.pid, name }
}

/** Runs `argv` on host `name` over SSH as the lab's unprivileged user, as svcops does. */
async function asSshUser(name: string, argv: string[]): Promise<string> {
  const config = env.recording!.hosts.find((h) => h.name === name)!
  const t = transportFor(config)
  try {
    return (await runCommand(t, argv, { check: false })).stdout.trim()
  } finally {
    await t.close()
  }
}

async function installedVersions(): Promise<string[]> {
  return Promise.all(['rec-1', 'rec-2'].map((n) => asSshUser(n, ['dpkg-query', '-W', '-f=${Version}', 'svc-recording'])))
}

const expectOk = (run: CliRun): void => expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(ExitCode.ok)

beforeAll(async () => {
  process.env.SVCOPS_RUNS_DIR = runsDir
  state = await labUp({ ...dirs, hosts: 2, hostKind: 'systemd', recordings: 3 })
  env = loadEnvironmentFile(labPaths(dirs).envFile, 'lab')
}, 240_000)

afterAll(async () => {
  delete process.env.SVCOPS_RUNS_DIR
  await labDown(dirs).catch(() => undefined)
  rmSync(work, { recursive: true, force: true })
}, 120_000)

describe('a lab of systemd hosts', () => {
  it('boots each host with systemd as PID 1, its own dpkg database, the unit from the package, apt trusting only the lab key', async () => {
    for (const name of ['rec-1', 'rec-2']) {
      expect(await asSshUser(name, ['ps', '-o', 'comm=', '-p', '1'])).toBe('systemd')
      expect(await asSshUser(name, ['id', '-un'])).toBe('svcops')
      expect(await asSshUser(name, ['systemctl', 'is-active', 'svc-recording'])).toBe('active')
      const unit = await asSshUser(name, ['systemctl', 'show', '--property=Type,Restart,User', '--', 'svc-recording'])
      expect(unit.split('\n').sort()).toEqual(['Restart=on-failure', 'Type=simple', 'User=svc-recording'])
      expect(await asSshUser(name, ['cat', '/etc/apt/sources.list.d/svcops-lab.list'])).toMatch(
        /^deb \[signed-by=\/etc\/apt\/keyrings\/svcops-lab\.gpg\] http:\/\/127\.0\.0\.1:\d+\/ \.\/$/,
      )
      // The service logs to journald; the SSH user reads it without root.
      expect(await asSshUser(name, ['journalctl', '--unit=svc-recording', '--no-pager', '-o', 'cat'])).toContain(
        'listening on http://127.0.0.1:',
      )
    }
    // The host's dpkg database, not this machine's.
    expect(await installedVersions()).toEqual(['1.4.0', '1.4.0'])
    expect(() => execFileSync('dpkg-query', ['-W', 'svc-recording'], { stdio: 'pipe' })).toThrow()
  })

  it('gives the SSH user exactly the rules svcops render sudoers prints, which visudo accepts, and no shell', async () => {
    const rendered = await svcops(['render', 'sudoers'])
    expectOk(rendered)
    const rules = (text: string) => text.split('\n').filter((l) => l && !l.startsWith('#'))
    const onHost = (await runAsHostRoot(host('rec-1'), ['cat', '/etc/sudoers.d/svcops'])).stdout
    expect(rules(onHost)).toEqual(rules(rendered.stdout))
    expect(rendered.stdout).not.toMatch(/NOPASSWD: ALL|\/bin\/sh|bash/)
    const file = join(work, 'rendered.sudoers')
    writeFileSync(file, rendered.stdout)
    expect(execFileSync('visudo', ['-cf', file], { encoding: 'utf8' })).toContain('parsed OK')
    // Refused by that sudo: a shell, another package after the pinned one.
    expect(await asSshUser('rec-1', ['sh', '-c', 'sudo -n -l -- /bin/sh -c id >/dev/null 2>&1; echo $?'])).toBe('1')
    expect(
      await asSshUser('rec-1', [
        'sh',
        '-c',
        'sudo -n -l -- apt-get install --download-only -y --allow-downgrades -- svc-recording=1.5.0 sl >/dev/null 2>&1; echo $?',
      ]),
    ).toBe('1')
  })
})

// Each case is one or two whole runs on two booted hosts: minutes on a loaded two-core machine.
describe('the apt and systemd drivers through sudo', { timeout: 600_000 }, () => {
  it('upgrades both hosts: download-only staging, stop, install the pinned version, start, health, journal', async () => {
    const run = await svcops(['upgrade', 'recording', '--to', '1.5.0', '--yes'])
    expectOk(run)
    expect(await installedVersions()).toEqual(['1.5.0', '1.5.0'])
    // Staged before anything stopped: both versions are in the host's package cache.
    const cache = await asSshUser('rec-2', ['ls', '/var/cache/apt/archives'])
    expect(cache).toContain('svc-recording_1.5.0_all.deb')
    expect(cache).toContain('svc-recording_1.4.0_all.deb')
    expect(await asSshUser('rec-1', ['journalctl', '--unit=svc-recording', '--no-pager', '-o', 'cat'])).toContain(
      'recording service 1.5.0 starting',
    )
  })

  it('a crash is restarted by the unit (Restart=on-failure); a release that crashes at its start fails the check, which names the restarts', async () => {
    await runAsHostRoot(host('rec-2'), ['systemctl', 'kill', '--kill-whom=main', '--signal=SIGKILL', 'svc-recording'])
    let restarts = '0'
    for (let i = 0; i < 100 && restarts === '0'; i++) {
      restarts = await asSshUser('rec-2', ['systemctl', 'show', '--property=NRestarts', '--value', '--', 'svc-recording'])
      if (restarts === '0') await new Promise((r) => setTimeout(r, 100))
    }
    expect(restarts).toBe('1')
    expectOk(await svcops(['verify', 'recording']))
    const run = await svcops(['upgrade', 'recording', '--to', '2.1.0+crash', '--yes'])
    expect(run.code, run.stdout).not.toBe(ExitCode.ok)
    expect(run.stdout + run.stderr).toMatch(
      /stopped running after the start \(activating \(auto-restart\), exited and about to be restarted by systemd \(Restart=\)/,
    )
    expect(await installedVersions()).toEqual(['1.5.0', '1.5.0'])
  })

  it('doctor finds nothing wrong as the unprivileged user, and finds a password file the service cannot read', async () => {
    expectOk(await svcops(['doctor', 'recording']))
    const rec1 = host('rec-1')
    await runAsHostRoot(rec1, ['chmod', '000', '/etc/opt/svc/recording.dbpass'])
    try {
      const doctor = await svcops(['doctor', 'recording'])
      expect(doctor.code, doctor.stdout).toBe(ExitCode.findings)
      expect(doctor.stdout).toContain('file-permissions')
      expect(doctor.stdout).toContain('/etc/opt/svc/recording.dbpass')
    } finally {
      await runAsHostRoot(rec1, ['chmod', '0640', '/etc/opt/svc/recording.dbpass'])
    }
  })

  it('doctor names a unit that fails its start (Restart= restarting it, or its start limit hit) with the journal as evidence', async () => {
    const rec2 = host('rec-2')
    const before = await asSshUser('rec-2', ['dpkg-query', '-W', '-f=${Version}', 'svc-recording'])
    const apt = (version: string) =>
      runAsHostRoot(rec2, [
        'apt-get',
        'install',
        '-y',
        '--allow-downgrades',
        '-o',
        'Dpkg::Options::=--force-confold',
        `svc-recording=${version}`,
      ])
    // A release whose migration fails: the service exits non-zero at every start, the database stays as it was.
    await apt('2.1.0+migfail')
    try {
      await runAsHostRoot(rec2, ['systemctl', 'restart', 'svc-recording'])
      let state = ''
      for (let i = 0; i < 300 && !/NRestarts=[1-9]|ActiveState=failed/.test(state); i++) {
        state = await asSshUser('rec-2', ['systemctl', 'show', '--property=ActiveState,NRestarts', '--', 'svc-recording'])
        await new Promise((r) => setTimeout(r, 100))
      }
      expect(state).toMatch(/NRestarts=[1-9]|ActiveState=failed/)
      const doctor = await svcops(['doctor', 'recording', '--json'])
      expect(doctor.code, doctor.stderr).toBe(ExitCode.findings)
      const found = (JSON.parse(doctor.stdout) as { findings: { cause: string; host: string; summary: string; evidence: string[] }[] })
        .findings
      const unit = found.find((f) => f.cause === 'service-start')
      expect(unit, doctor.stdout).toMatchObject({ host: 'rec-2' })
      // Type=simple counts as running from the exec on: caught in auto-restart, failed, or restarted again while watched.
      expect(unit!.summary).toMatch(
        /^svc-recording fails its start: its service manager (shows it (failed|activating \(auto-restart\))|restarted it while the doctor watched)/,
      )
      // The journal's line, never systemd's cgroup note.
      expect(unit!.evidence.join('\n')).toMatch(/last log line: .* FATAL /)
      expect(unit!.evidence.join('\n')).not.toContain('Failed to kill control group')
      expect(found.filter((f) => f.cause === 'service-start').map((f) => f.host)).toEqual(['rec-2'])
    } finally {
      await apt(before)
      await runAsHostRoot(rec2, ['systemctl', 'reset-failed', 'svc-recording'], { check: false })
      await runAsHostRoot(rec2, ['systemctl', 'restart', 'svc-recording'])
    }
    // Back as it was (verify would still see the failed starts' FATAL lines of the last ten minutes).
    expect(await asSshUser('rec-2', ['dpkg-query', '-W', '-f=${Version}', 'svc-recording'])).toBe(before)
    expect(await asSshUser('rec-2', ['systemctl', 'is-active', 'svc-recording'])).toBe('active')
  })

  it('doctor names a full disk: the package cache on a filesystem with no room left', async () => {
    const rec1 = host('rec-1')
    const cache = '/var/cache/apt/archives'
    await runAsHostRoot(rec1, ['mount', '-t', 'tmpfs', '-o', 'size=1m', 'svcops-test-full', cache])
    try {
      await runAsHostRoot(rec1, ['sh', '-c', 'dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null; true', 'sh', cache])
      const doctor = await svcops(['doctor', 'recording', '--json'])
      expect(doctor.code, doctor.stderr).toBe(ExitCode.findings)
      const found = (JSON.parse(doctor.stdout) as { findings: { cause: string; host: string; severity: string; summary: string }[] })
        .findings
      // The one error; disk-io may add a warning of a slow synchronous write on a loaded machine.
      const errors = found.filter((f) => f.severity === 'error')
      expect(errors.map((f) => [f.cause, f.host])).toEqual([['disk-space', 'rec-1']])
      expect(errors[0]!.summary).toMatch(
        /^The filesystem of apt's package cache \/var\/cache\/apt\/archives is full: 0 KiB free of 1024 KiB/,
      )
      // Found before anything stops: the upgrade's preflight refuses.
      const run = await svcops(['upgrade', 'recording', '--to', '2.0.0', '--yes'])
      expect(run.code).not.toBe(ExitCode.ok)
      expect(run.stdout + run.stderr).toMatch(/on rec-1 \(disk-space\)/)
    } finally {
      await runAsHostRoot(rec1, ['umount', cache])
    }
    expect((await runAsHostRoot(rec1, ['cat', '/proc/self/mounts'])).stdout).not.toContain('svcops-test-full')
  })

  it('with one sudo rule removed, the upgrade is refused before anything stops, naming the rule', async () => {
    const rec2 = host('rec-2')
    const original = (await runAsHostRoot(rec2, ['cat', '/etc/sudoers.d/svcops'])).stdout
    await runAsHostRoot(rec2, ['sed', '-i', '/systemctl stop/d', '/etc/sudoers.d/svcops'])
    try {
      const since = (await asSshUser('rec-2', ['date', '+%s'])).trim()
      const run = await svcops(['upgrade', 'recording', '--to', '2.0.0', '--yes'])
      expect(run.code).not.toBe(ExitCode.ok)
      expect(run.stdout + run.stderr).toContain(
        "sudo on rec-2 does not let svcops run 'systemctl stop -- svc-recording' (sudo -n -l refused it)",
      )
      expect(await installedVersions()).toEqual(['1.5.0', '1.5.0'])
      for (const name of ['rec-1', 'rec-2']) {
        expect(await asSshUser(name, ['systemctl', 'is-active', 'svc-recording'])).toBe('active')
        expect(await asSshUser(name, ['journalctl', '--unit=svc-recording', `--since=@${since}`, '--no-pager', '-o', 'cat'])).not.toContain(
          'stopping on',
        )
      }
    } finally {
      await runAsHostRoot(rec2, ['tee', '/etc/sudoers.d/svcops'], { input: original })
    }
  })

  it('a run killed after the canary stopped is resumed by svcops resume ID', async () => {
    const killed = await runSvcopsKilledAt(['--env', 'lab', 'upgrade', 'recording', '--to', '2.0.0', '--yes'], 'stop@rec-1', runsDir, {
      env: cliEnv,
    })
    expect(killed.signal, `${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
    const id = listRuns(runsDir)[0]?.id as string
    expect(Journal.open(id).run.phase).toBe('running')
    expect(await asSshUser('rec-1', ['systemctl', 'is-active', 'svc-recording'])).not.toBe('active')
    expectOk(await svcops(['resume', id]))
    expect(await installedVersions()).toEqual(['2.0.0', '2.0.0'])
  })

  it('rolls back from the package cache of each host, with the apt repository gone', async () => {
    const repo = state.entries.find((e) => e.name === 'apt repository')
    expect(repo).toBeDefined()
    await stopProcess(repo!)
    const run = await svcops(['rollback', 'recording', '--yes'])
    expectOk(run)
    expect(await installedVersions()).toEqual(['1.5.0', '1.5.0'])
  })
})

describe('lab down', () => {
  it('leaves no container, mount or process', async () => {
    const pids = state.entries.filter((e) => e.kind === 'systemd-host').map((e) => e.info.pid as number)
    await labDown(dirs)
    // This lab's own folders only: another lab (the live one of test/hosts/systemd-live) may run beside it.
    const mounts = readFileSync('/proc/self/mounts', 'utf8')
    const folders = state.entries.filter((e) => e.kind === 'files').flatMap((e) => e.paths)
    expect(folders.length).toBeGreaterThan(0)
    for (const folder of folders) expect(mounts).not.toContain(folder)
    for (const pid of pids) expect(existsSync(`/proc/${pid}`)).toBe(false)
    const machines = existsSync('/run/systemd/nspawn/propagate')
      ? execFileSync('ls', ['/run/systemd/nspawn/propagate'], { encoding: 'utf8' })
      : ''
    for (const entry of state.entries.filter((e) => e.kind === 'systemd-host')) expect(machines).not.toContain(String(entry.info.machine))
    for (const entry of state.entries) for (const path of entry.paths) expect(existsSync(path)).toBe(false)
  })
})
