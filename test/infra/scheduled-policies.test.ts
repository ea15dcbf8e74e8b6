/**
 * The cluster's schedules carry the policies the host timers have: the backup CronJob prunes by the
 * schedule's retention (`deploy.backupSchedule.keepLast/keepDays`, else the documented default), and
 * the upgrade CronJob runs inside `deploy.upgradeSchedule.window` (`--window`). Each CronJob is
 * rendered by the Pulumi program, and the backup job's command is then run, as the job would run it,
 * against a real PostgreSQL and backup store: its prune removes what the retention says. The upgrade
 * job's command is run against the recording lab (real PostgreSQL, sshd, dpkg and supervisord
 * hosts): with a window too short for its canary it is refused in one sentence naming the window,
 * nothing changed (exit 1); with the rendered window the upgrade runs (exit 0, every host on the
 * schedule's release).
 */
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { ICronJob } from 'kubernetes-models/batch/v1'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { main } from '../../src/commands/program.ts'
import { DEFAULT_SCHEDULED_KEEP_LAST } from '../../src/config/deploy.ts'
import type { PreviewResult } from '../../src/infra/preview.ts'
import { backupCommand, IMAGE_SVCOPS, upgradeCommand } from '../../src/infra/scheduledJobs.ts'
import { startBackupBed, SERVICE_PASSWORD, type BackupBed } from '../backup/fixture.ts'
import { startUpgradeLab, type UpgradeLab } from '../recording/fixture.ts'
import { buildStack, deployOf, objectNamed } from './helpers.ts'

function commandOf(r: PreviewResult, name: string): string[] {
  const job = objectNamed(r, 'CronJob', name).unwrapped as unknown as ICronJob
  return job.spec?.jobTemplate.spec?.template.spec?.containers[0]?.command ?? []
}

/** What follows the image's svcops in a job's command: the arguments a local svcops takes the same. */
function svcopsArgs(command: string[]): string[] {
  return command.slice(command.indexOf(IMAGE_SVCOPS) + 1)
}

let withPolicies: PreviewResult
let plain: PreviewResult
beforeAll(async () => {
  // One at a time: the Pulumi runtime of a preview is the process's own.
  withPolicies = await buildStack('prod', (config) => {
    const deploy = deployOf(config) as unknown as Record<string, Record<string, unknown>>
    deploy.backupSchedule = { ...deploy.backupSchedule, keepLast: 2 }
    deploy.upgradeSchedule = { ...deploy.upgradeSchedule, window: '1h30m' }
  })
  plain = await buildStack('prod')
}, 600_000)

describe('the CronJobs carry the schedule policies', () => {
  it("the backup job prunes by the schedule's retention", () => {
    expect(svcopsArgs(commandOf(withPolicies, 'svc-svcops-backup'))).toEqual([
      'backup',
      'run',
      '--env',
      'prod',
      '--keep-last',
      '2',
      '--json',
    ])
    expect(svcopsArgs(backupCommand('prod', { keepDays: 30 }))).toEqual(['backup', 'run', '--env', 'prod', '--keep-days', '30', '--json'])
  })
  it('a schedule without retention gets the documented default, never a job that only fills its claim', () => {
    expect(svcopsArgs(commandOf(plain, 'svc-svcops-backup'))).toEqual([
      'backup',
      'run',
      '--env',
      'prod',
      '--keep-last',
      String(DEFAULT_SCHEDULED_KEEP_LAST),
      '--json',
    ])
  })
  it('the upgrade job runs inside the maintenance window, as the host timer does', () => {
    const args = svcopsArgs(commandOf(withPolicies, 'svc-svcops-upgrade'))
    expect(args.slice(args.indexOf('--window'), args.indexOf('--window') + 2)).toEqual(['--window', '1h30m'])
    expect(svcopsArgs(commandOf(plain, 'svc-svcops-upgrade'))).not.toContain('--window')
  })
  it('a window that is not a duration is refused at preview, naming the field', async () => {
    await expect(
      buildStack('prod', (config) => {
        const deploy = deployOf(config) as unknown as Record<string, Record<string, unknown>>
        deploy.upgradeSchedule = { ...deploy.upgradeSchedule, window: 'ninety minutes' }
      }),
    ).rejects.toThrow(/upgradeSchedule\.window.*expected a duration like 2h, 90m, 1h30m or 45s/)
  }, 300_000)
})

describe("the backup job's command, run against a real PostgreSQL and store", () => {
  let bed: BackupBed
  let stackFile: string
  beforeAll(async () => {
    bed = await startBackupBed(50)
    process.env.SVCOPS_RUNS_DIR = join(bed.dir, 'runs')
    process.env.SVCOPS_TEST_DB_PASSWORD = SERVICE_PASSWORD
    stackFile = join(bed.dir, 'Pulumi.prod.yaml')
    writeFileSync(
      stackFile,
      stringify({
        config: {
          'svcops:recording': {
            version: '1.6.0',
            hosts: [{ name: 'rec1', url: 'http://127.0.0.1:9', transport: 'local' }],
            database: { ...bed.database, password: { env: 'SVCOPS_TEST_DB_PASSWORD' } },
          },
          'svcops:backup': {
            store: { path: join(bed.dir, 'store') },
            recipients: [bed.publicKeyFile],
            identity: { file: bed.privateKeyFile },
          },
        },
      }),
    )
  }, 300_000)
  afterAll(async () => {
    delete process.env.SVCOPS_RUNS_DIR
    delete process.env.SVCOPS_TEST_DB_PASSWORD
    await bed?.stop()
  })

  it('keeps the newest keepLast backups after three nightly runs', async () => {
    // The job's arguments, with --env prod pointing at this bed's stack file (the job's stack ConfigMap).
    const args = svcopsArgs(commandOf(withPolicies, 'svc-svcops-backup'))
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    const codes: number[] = []
    try {
      for (let night = 0; night < 3; night++) codes.push(await main(['--stack-file', stackFile, ...args]))
    } finally {
      out.mockRestore()
      err.mockRestore()
    }
    expect(codes).toEqual([0, 0, 0])
    const manifests = readdirSync(join(bed.dir, 'store')).filter((f) => f.endsWith('.manifest.json'))
    expect(manifests).toHaveLength(2)
  }, 600_000)
})

/** `main` of the CLI with stdout and stderr kept: what a job's container would log. */
async function runJob(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true))
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true))
  try {
    return { code: await main(args), stdout, stderr }
  } finally {
    out.mockRestore()
    err.mockRestore()
  }
}

describe("the upgrade job's command, run against the recording lab", () => {
  let lab: UpgradeLab
  let stackFile: string
  beforeAll(async () => {
    lab = await startUpgradeLab({ hosts: 2, version: '1.4.0', recordings: 4 })
    // The job's stack ConfigMap holds the environment's stack file under its own name.
    stackFile = join(dirname(lab.envFile), 'Pulumi.prod.yaml')
    copyFileSync(lab.envFile, stackFile)
  }, 600_000)
  afterAll(async () => {
    delete process.env.SVCOPS_RUNS_DIR
    await lab?.stop()
  })

  it('outside its window (one too short for the canary) it is refused in one sentence naming the window, nothing changed', async () => {
    const args = svcopsArgs(upgradeCommand('prod', '2.0.0', '1s'))
    expect(args).toEqual(['upgrade', 'recording', '--env', 'prod', '--to', '2.0.0', '--window', '1s', '--yes', '--json'])
    const run = await runJob(['--stack-file', stackFile, ...args])
    expect(run.code, run.stderr).toBe(1)
    const answer = JSON.parse(run.stdout) as { ok: boolean; exitCode: number; error: { message: string; hint?: string } }
    expect(answer).toMatchObject({ ok: false, exitCode: 1 })
    expect(answer.error.message).toMatch(/^The maintenance window ends at \S+; the canary \(rec-1\) cannot start after it\.$/)
    expect(answer.error.hint).toContain('Every host on its version before the run; no downtime.')
    expect(Object.values(await lab.versions())).toEqual(['1.4.0', '1.4.0'])
  }, 600_000)

  it('inside the rendered window the upgrade runs: every host on the release of the schedule', async () => {
    const args = svcopsArgs(commandOf(withPolicies, 'svc-svcops-upgrade'))
    expect(args).toContain('--window')
    const run = await runJob(['--stack-file', stackFile, ...args])
    expect(run.code, run.stderr).toBe(0)
    const to = args[args.indexOf('--to') + 1]
    expect(Object.values(await lab.versions())).toEqual([to, to])
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, phase: 'succeeded' })
  }, 600_000)
})
