/**
 * A rollback that never makes things worse, on the real lab (2 hosts, 1.5.0 -> 2.0.0, a schema
 * change): with the run's backup files removed, `rollback recording --yes` refuses before anything
 * stops (exit 5) and both hosts keep serving 2.0.0 with the same service processes.
 */
import { rmSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCommand } from '../../src/core/runner.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { recording } from '../../playbooks/upgrade.ts'
import { startSystemRun } from '../../src/runs/run-actions.ts'
import { supervisorctlArgv } from '../support/supervisorctl.ts'
import { runCliInProcess, startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab
let backupId: string

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 2, version: '1.5.0', recordings: 3 })
  const outcome = await startSystemRun(recording, { env: lab.env(), to: '2.0.0' })
  expect(outcome.phase).toBe('succeeded')
  backupId = outcome.report.run.params.backupId as string
  expect(backupId).toBeTruthy()
}, 1_200_000)

afterAll(async () => {
  await lab?.stop()
})

/** The service's pid on each host, as supervisord reports it. */
async function servicePids(): Promise<string[]> {
  const pids: string[] = []
  for (const host of lab.env().recording!.hosts) {
    const transport = transportFor(host)
    try {
      pids.push((await runCommand(transport, supervisorctlArgv(host, ['pid', 'svc-recording']))).stdout.trim())
    } finally {
      await transport.close()
    }
  }
  return pids
}

describe('no-op and downgrade', () => {
  it('upgrade --to 2.0.0 again changes nothing: exit 0, "already on 2.0.0", the same pids, a no-op run', async () => {
    const before = await servicePids()
    const backups = readdirSync(join(lab.dir, 'backups')).length
    const out = await runCliInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.0.0', '--yes'])
    expect(out.code).toBe(0)
    expect(out.stdout + out.stderr).toContain('Already on 2.0.0')
    expect(await servicePids()).toEqual(before)
    expect(readdirSync(join(lab.dir, 'backups')).length).toBe(backups)
    const list = await runCliInProcess(['runs', 'list', '--json'], { SVCOPS_RUNS_DIR: lab.runsDir })
    const runs = JSON.parse(list.stdout) as { runs?: { phase: string }[] } | { phase: string }[]
    const rows = Array.isArray(runs) ? runs : (runs.runs ?? [])
    expect(rows[0]?.phase).toBe('no-op')
  }, 300_000)

  it('upgrade --to an older version refuses before anything (exit 2), naming the rollback', async () => {
    const before = await servicePids()
    const out = await runCliInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '1.4.0', '--yes'])
    expect(out.code).toBe(2)
    expect(out.stderr).toContain('svcops rollback recording --env lab --to 1.4.0')
    expect(await servicePids()).toEqual(before)
    expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0', 'rec-2': '2.0.0' })
  }, 300_000)
})

describe('retention that cannot break a rollback', () => {
  it('backup prune --keep-last 1 keeps the backup the upgrade run can roll back to; deleting it needs --force', async () => {
    const made = await runCliInProcess(['--stack-file', lab.envFile, 'backup', 'create', '--json'])
    expect(made.code).toBe(0)
    const list = await runCliInProcess(['--stack-file', lab.envFile, 'backup', 'list'])
    expect(list.stdout).toMatch(new RegExp(`${backupId}.*held by run \\S+`))
    const prune = await runCliInProcess(['--stack-file', lab.envFile, 'backup', 'prune', '--keep-last', '1'])
    expect(prune.code).toBe(0)
    expect(prune.stdout).toMatch(new RegExp(`keep\\s+${backupId}\\s+\\(.*held by run`))
    expect(readdirSync(join(lab.dir, 'backups')).some((f) => f.startsWith(`${backupId}.manifest.json`))).toBe(true)
    const refused = await runCliInProcess(['--stack-file', lab.envFile, 'backup', 'delete', backupId])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`is held by run`)
    expect(readdirSync(join(lab.dir, 'backups')).some((f) => f.startsWith(`${backupId}.manifest.json`))).toBe(true)
    // Its dry run refuses as it does, and with --force shows the files it would remove, removing none.
    const files = () => readdirSync(join(lab.dir, 'backups')).filter((f) => f.startsWith(backupId))
    const before = files()
    const dryRefused = await runCliInProcess(['--stack-file', lab.envFile, 'backup', 'delete', backupId, '--dry-run'])
    expect(dryRefused.code).toBe(2)
    expect(dryRefused.stderr).toContain(`is held by run`)
    const dry = await runCliInProcess(['--stack-file', lab.envFile, 'backup', 'delete', backupId, '--force', '--dry-run', '--json'])
    expect(dry.code, dry.stderr).toBe(0)
    const plan = JSON.parse(dry.stdout) as { dryRun: boolean; id: string; heldBy?: string; files: string[] }
    expect(plan).toMatchObject({ dryRun: true, id: backupId, heldBy: expect.any(String) as string })
    expect(plan.files[0]).toBe(`${backupId}.manifest.json`)
    expect([...plan.files].sort()).toEqual(expect.arrayContaining(before.filter((f) => !f.endsWith('.tmp'))))
    expect(files()).toEqual(before)
  }, 300_000)
})

describe('preconditions before the first stop', () => {
  it('a rollback whose backup files were removed refuses (exit 5) and both hosts stay healthy on 2.0.0', async () => {
    const before = await servicePids()
    expect(before.every((p) => /^\d+$/.test(p) && p !== '0')).toBe(true)
    const store = join(lab.dir, 'backups')
    for (const f of readdirSync(store)) if (f.startsWith(backupId)) rmSync(join(store, f))

    const dry = await runCliInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--dry-run'])
    expect(dry.code).toBe(5)
    expect(dry.stderr + dry.stdout).toContain(`There is no backup ${backupId}`)

    const out = await runCliInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--yes'])
    expect(out.code).toBe(5)
    expect(out.stderr).toMatch(/Nothing changed/)
    expect(out.stderr).toContain(`There is no backup ${backupId}`)
    expect(out.stderr).toContain('svcops rollback recording --env lab --run ')
    expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0', 'rec-2': '2.0.0' })
    expect(await lab.healthy()).toEqual([true, true])
    expect(await servicePids()).toEqual(before)
  }, 300_000)
})

describe("log checks judge the service, not its users' data", () => {
  it('a recording named "cam ERROR" with an escape sequence and a newline fails neither verify nor an upgrade', async () => {
    const client = await lab.create('user data', 0).then(() => lab.env())
    expect(client.name).toBe('lab')
    const { managerClientFor } = await import('../../src/clients/manager-client.ts')
    const { RecordingClient } = await import('../../src/clients/recording-client.ts')
    const recording = new RecordingClient({ url: lab.env().recording!.hosts[0]!.url, auth: managerClientFor(lab.env()) })
    await recording.create({
      channelName: 'cam ERROR \x1b[31mred\nFATAL next',
      title: 'night',
      startTime: 1_700_000_000,
      stopTime: 1_700_000_600,
    })
    const verify = await runCliInProcess(['--stack-file', lab.envFile, 'verify', 'recording', '--no-test-recording'])
    expect(verify.code).toBe(0)
    const out = await runCliInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '2.1.0', '--yes'])
    expect(out.code).toBe(0)
    expect(await lab.versions()).toEqual({ 'rec-1': '2.1.0', 'rec-2': '2.1.0' })
  }, 600_000)
})
