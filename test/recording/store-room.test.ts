/**
 * The preflight's room check reads the backup store where it is. The store is a directory on a host
 * over SSH (a real sshd on loopback) whose file system is a 1 MiB tmpfs the test mounts; the upgrade
 * runs in a mount namespace of its own where that tmpfs is not mounted, as this machine's disk differs
 * from the store host's. Measured on this machine the path has gigabytes free; measured on the store's
 * host (df over SSH) it has 1 MiB, less than the database: the upgrade refuses before anything stops.
 */
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { storeFreeBytes } from '../../src/backup/store-room.ts'
import { parseDf } from '../../src/drivers/free-space.ts'
import { svcopsCommand } from '../../src/core/paths.ts'
import { lookupUser, startSshd, type Sshd } from '../../src/lab/sshd.ts'
import { processInfo } from '../support/supervisorctl.ts'
import { startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab
let sshd: Sshd
let mountPoint: string | undefined
let storePath: string

beforeAll(async () => {
  ;[lab, sshd] = await Promise.all([startUpgradeLab({ hosts: 1, version: '1.5.0', recordings: 2 }), startSshd()])
  // The SSH user reaches its directory inside the test's private temp dir.
  chmodSync(lab.dir, 0o711)
  const owner = lookupUser(sshd.user)
  mountPoint = join(lab.dir, 'store-host')
  mkdirSync(mountPoint)
  const mounted = spawnSync('mount', [
    '-t',
    'tmpfs',
    '-o',
    `size=1m,mode=0700,uid=${owner?.uid ?? 0},gid=${owner?.gid ?? 0}`,
    'tmpfs',
    mountPoint,
  ])
  if (mounted.status !== 0) {
    mountPoint = undefined
    throw new Error(`mount tmpfs: ${mounted.stderr.toString()}`)
  }
  storePath = join(mountPoint, 'backups')
  const doc = parseYaml(readFileSync(lab.envFile, 'utf8')) as { config: Record<string, { store: unknown }> }
  doc.config['svcops:backup']!.store = {
    path: storePath,
    ssh: { host: sshd.host, port: sshd.port, user: sshd.user, keyFile: sshd.privateKeyPath, hostKey: sshd.hostKey },
  }
  writeFileSync(lab.envFile, toYaml(doc))
}, 600_000)

afterAll(async () => {
  if (mountPoint) spawnSync('umount', [mountPoint])
  await sshd?.stop()
  await lab?.stop()
})

/** Runs `svcops ...args` in a mount namespace of its own where the store host's tmpfs is not mounted. */
function runWithoutStoreMount(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'unshare',
      ['--mount', '--propagation', 'private', 'sh', '-c', 'umount "$0" && exec "$@"', mountPoint!, ...svcopsCommand(), ...args],
      { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

describe('room for the backup on an SSH store', () => {
  it("reads the store host's free space with df over SSH", async () => {
    const free = await storeFreeBytes(lab.env().backup!.store)
    // The 1 MiB tmpfs (the store directory does not exist yet: its parent, the mount point, answers).
    expect(free).toBe(1024 * 1024)
  }, 60_000)

  it('an upgrade whose store is too small on its host refuses before anything stops, though this machine has room', async () => {
    // Where the upgrade runs, the store path is on this machine's large disk: a local measure would say yes.
    const local = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'umount "$0" && df -Pk -- "$0"', mountPoint!])
    expect(parseDf(local.stdout.toString(), 'this machine').free).toBeGreaterThan(64 * 1024 * 1024)
    const host = lab.env().recording!.hosts[0]!
    const before = processInfo(host, 'svc-recording')
    expect(before.state).toBe('RUNNING')

    const out = await runWithoutStoreMount(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.0.0', '--yes'])
    expect(out.code).toBe(1)
    expect(out.stderr).toContain(
      `The backup store at ${sshd.user}@${sshd.host}:${sshd.port}:${storePath} has 1.0 MiB free, less than the database's`,
    )
    expect(out.stderr).toContain('nothing was stopped')
    expect(processInfo(host, 'svc-recording')).toEqual(before)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0' })
    expect(await lab.healthy()).toEqual([true])
  }, 300_000)

  it('the dry run names where the room is read', async () => {
    const out = await runWithoutStoreMount(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.0.0', '--dry-run'])
    expect(out.stdout).toContain(`df -Pk on ${sshd.user}@${sshd.host}:${sshd.port} for ${storePath} (over SSH)`)
  }, 300_000)
})

describe("df's answer is trusted only in its POSIX shape (src/drivers/free-space.ts)", () => {
  const header = 'Filesystem     1024-blocks  Used Available Capacity Mounted on'
  it.each([
    ['no output', '', 'df printed nothing'],
    ['a header other than POSIX', 'Filesystem Size Used Avail Use% Mounted on\ntmpfs 1M 0 1M 0% /x', 'df did not print the POSIX header'],
    ['no row', `${header}\n`, 'df printed no row of numbers'],
    ['a row without numbers', `${header}\ntmpfs - - - - /x`, 'df printed no row of numbers'],
    [
      'a number past 2^53',
      `${header}\ntmpfs 1 0 99999999999999999999 0% /x`,
      "df's available blocks '99999999999999999999' are out of range",
    ],
    ['more than 64 KiB', `${header}\n${'x'.repeat(70_000)}`, 'df printed more than 65536 bytes'],
  ])('refuses %s', (_label, stdout, why) => {
    expect(() => parseDf(stdout, 'the store')).toThrow(`The free space of the store could not be read (df -Pk): ${why}`)
  })
  it('reads Available in KiB and a mount point with spaces', () => {
    expect(parseDf(`${header}\n/dev/a b  100 40 60 40% /mnt/with space\n`, 'x')).toEqual({ mount: '/mnt/with space', free: 60 * 1024 })
  })
})
