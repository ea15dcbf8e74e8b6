/**
 * One host, one lab, the whole story in order: a dry run changes nothing; 1.4.0 -> 1.5.0 (no
 * schema change) and its rollback that keeps the database; 1.5.0 -> 2.0.0 (schema change) and its
 * rollback that restores the database and keeps recordings written after the backup.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { exitCodeFor } from '../../src/core/errors.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { supervisorctlArgv } from '../support/supervisorctl.ts'
import { runCommand } from '../../src/core/runner.ts'
import { Journal } from '../../src/runs/journal.ts'
import { Phase, stepName } from '../../src/runs/step.ts'
import { restoreBackup } from '../../src/recording/rollback-steps.ts'
import { recording } from '../../playbooks/upgrade.ts'
import { rollbackRecording } from '../../playbooks/lib/recording-actions.ts'
import { startSystemRun } from '../../src/runs/run-actions.ts'
import { runCliInProcess, startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 5 })
}, 120_000)

afterAll(async () => {
  await lab?.stop()
})

/** Every file under the host's root with size and mtime, except logs that a running service appends to. */
function hostTree(root: string): string {
  return execFileSync(
    'find',
    [root, '-path', `${root}/var/log`, '-prune', '-o', '-path', `${root}/run`, '-prune', '-o', '-printf', '%p %s %T@\\n'],
    { encoding: 'utf8' },
  )
    .split('\n')
    .sort()
    .join('\n')
}

describe('upgrade of one host', () => {
  it('--dry-run prints every step and command per host and changes nothing', async () => {
    const root = lab.env().recording!.hosts[0]!.root!
    const before = {
      tree: hostTree(root),
      versions: await lab.versions(),
      fingerprint: await lab.fingerprint(),
      dpkg: readFileSync(join(root, 'var/lib/dpkg/status'), 'utf8'),
    }
    const out = await runCliInProcess([
      '--stack-file',
      lab.envFile,
      'upgrade',
      'recording',
      '--to',
      '2.0.0',
      '--window',
      '1h30m',
      '--dry-run',
    ])
    expect(out.code).toBe(0)
    expect(out.stdout).toContain('Window: 1h30m from the start: a batch starts only if')
    // Every step of the playbook, in order, with the exact command it would run.
    const order = [
      'preflight — ',
      '[rec-1] stage — ',
      'snapshot — ',
      'backup — ',
      '[rec-1] canary: stop — stop the service\n    curl ',
      'supervisor.stopProcess("svc-recording", true)',
      '[rec-1] canary: install — ',
      'install 2.0.0 over 1.4.0: dpkg --root=',
      '[rec-1] canary: review-config — ',
      '[rec-1] canary: start — ',
      'supervisor.startProcess("svc-recording", true)',
      '[rec-1] canary: wait-healthy — ',
      '[rec-1] canary: check-logs — ',
      '[rec-1] canary: verify-host — ',
      'verify — ',
      'rollback:decide — ',
      'restore only if the schema fingerprint changed',
      '[rec-1] rollback:install — ',
    ]
    for (const step of order) expect(out.stdout).toContain(step)
    const at = order.map((step) => out.stdout.indexOf(step))
    expect(at).toEqual([...at].sort((a, b) => a - b))
    const after = {
      tree: hostTree(root),
      versions: await lab.versions(),
      fingerprint: await lab.fingerprint(),
      dpkg: readFileSync(join(root, 'var/lib/dpkg/status'), 'utf8'),
    }
    expect(after).toEqual(before)
  })

  it('1.4.0 -> 1.5.0: verified backup first, every recording still there, a report with downtime and the config review', async () => {
    const before = await lab.listAll()
    const outcome = await startSystemRun(recording, { env: lab.env(), to: '1.5.0' })
    expect(outcome.phase).toBe('succeeded')
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0' })
    const after = await lab.listAll()
    for (const r of before) expect(after.map((x) => x.id)).toContain(r.id)
    const journal = Journal.open(outcome.runId)
    const steps = journal
      .entries()
      .filter((e) => e.status === 'ok')
      .map((e) => e.step)
    expect(steps.indexOf('backup')).toBeLessThan(steps.indexOf('stop'))
    expect(steps.indexOf('stage')).toBeLessThan(steps.indexOf('stop'))
    const md = readFileSync(journal.file('report.md'), 'utf8')
    expect(md).toMatch(/\| rec-1 \| .* \| .* \| [\d.]+ s \|/)
    expect(md).toContain('recording.json.dpkg-dist')
    expect(md).toContain('contentInfoCacheTtlSeconds')
    expect(
      (JSON.parse(readFileSync(journal.file('report.json'), 'utf8')) as { downtime: Array<{ downtimeMs: number }> }).downtime[0]
        ?.downtimeMs,
    ).toBeGreaterThan(0)
  })

  it('rolling back 1.5.0 keeps the database: the schema did not change', async () => {
    const fingerprint = await lab.fingerprint()
    const written = await lab.create('written on 1.5.0')
    const outcome = await rollbackRecording(recording, lab.env(), {})
    expect(outcome.phase).toBe('rolled-back')
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
    expect(await lab.fingerprint()).toBe(fingerprint)
    expect(outcome.report.rollback).toMatchObject({ restore: false })
    expect((await lab.listAll()).map((r) => r.id)).toContain(written.id)
    expect(outcome.report.timeline.some((e) => e.step === stepName(restoreBackup, Phase.rollback))).toBe(false)
  })

  it('1.5.0 -> 2.0.0 then rollback: the database is restored and recordings written after the backup are re-created', async () => {
    await startSystemRun(recording, { env: lab.env(), to: '1.5.0' })
    const before = await lab.fingerprint()
    const outcome = await startSystemRun(recording, { env: lab.env(), to: '2.0.0' })
    expect(outcome.phase).toBe('succeeded')
    expect(await lab.fingerprint()).not.toBe(before)
    const late = [await lab.create('after the backup 1'), await lab.create('after the backup 2')]
    // The on-call engineer looks first: the dry run says the database will be restored, and changes nothing.
    const fingerprintNow = await lab.fingerprint()
    const dry = await runCliInProcess(['--stack-file', lab.envFile, 'rollback', 'recording', '--run', outcome.runId, '--dry-run'], {
      SVCOPS_RUNS_DIR: lab.runsDir,
    })
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toContain('restore the database: the schema fingerprint changed')
    expect(dry.stdout).toMatch(/install 1\.5\.0 over 2\.0\.0: dpkg --root=/)
    expect(dry.stdout).toContain(`restore backup ${String(Journal.open(outcome.runId).run.params.backupId)}`)
    expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0' })
    expect(await lab.fingerprint()).toBe(fingerprintNow)
    expect(Journal.open(outcome.runId).run.phase).toBe('succeeded')
    const finished = await runCliInProcess(['resume', outcome.runId, '--dry-run'], { SVCOPS_RUNS_DIR: lab.runsDir })
    expect(finished.code).toBe(2)
    expect(finished.stderr).toContain(`Run ${outcome.runId} is finished (succeeded); there is nothing to resume.`)
    const back = await rollbackRecording(recording, lab.env(), { runId: outcome.runId })
    expect(back.phase).toBe('rolled-back')
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0' })
    expect(await lab.fingerprint()).toBe(before)
    expect(back.report.rollback).toMatchObject({ restore: true })
    const titles = (await lab.listAll()).map((r) => r.title)
    for (const r of late) expect(titles).toContain(r.title)
    expect((back.report.recreated as Array<{ title: string }>).map((r) => r.title).sort()).toEqual(late.map((r) => r.title).sort())
    expect(readFileSync(Journal.open(outcome.runId).file('report.md'), 'utf8')).toContain('after the backup 1')
  })

  it('verify recording checks every host; runs list and runs show give the journal to people and machines', async () => {
    const verified = await runCliInProcess(['--stack-file', lab.envFile, '--json', 'verify', 'recording'])
    expect(verified.code).toBe(0)
    const v = JSON.parse(verified.stdout) as { ok: boolean; hosts: Array<{ checks: Array<{ check: string; ok: boolean }> }> }
    expect(v.ok).toBe(true)
    expect(v.hosts[0]?.checks.map((c) => c.check)).toEqual(
      expect.arrayContaining(['GET / (health)', 'service status', 'POST /api/v1/content (test recording) and seen in the list']),
    )
    // A host that does not answer fails the verification: exit 1, the failed check named.
    const host = lab.env().recording?.hosts[0]
    if (!host) throw new Error('the lab has no host')
    const transport = transportFor(host)
    try {
      await runCommand(transport, supervisorctlArgv(host, ['stop', 'svc-recording']))
      const failed = await runCliInProcess(['--stack-file', lab.envFile, 'verify', 'recording', '--no-test-recording'])
      expect(failed.code).toBe(1)
      expect(failed.stdout).toMatch(/FAIL.*GET \/ \(health\)|GET \/ \(health\).*FAIL/i)
    } finally {
      await runCommand(transport, supervisorctlArgv(host, ['start', 'svc-recording']))
      await transport.close()
    }
    const list = await runCliInProcess(['runs', 'list'], { SVCOPS_RUNS_DIR: lab.runsDir })
    // A table: header first, newest run first.
    const rows = list.stdout.trim().split('\n')
    expect(rows[0]).toMatch(/^ID\s+ENV\s+SYSTEM\s+KIND\s+TARGET\s+OUTCOME/)
    expect(list.stdout).toMatch(/\slab\s+recording\s+upgrade\s+2\.0\.0\s+rolled-back\s/)
    const id = /^(\S+)/.exec(rows[1] ?? '')?.[1] ?? ''
    const shown = await runCliInProcess(['--json', 'runs', 'show', id], { SVCOPS_RUNS_DIR: lab.runsDir })
    expect((JSON.parse(shown.stdout) as { run: { id: string } }).run.id).toBe(id)
  })

  it('rollback --to an explicit version goes through the upgrade path (backup, verify)', async () => {
    const outcome = await rollbackRecording(recording, lab.env(), { to: '1.4.0' })
    expect(outcome.phase).toBe('succeeded')
    expect(outcome.report.run.params.backupId).toBeDefined()
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
  })

  it('no secret reaches a journal or a report', () => {
    const env = lab.env()
    const secrets = [env.manager!.password, env.recording!.database.password!].map((ref) =>
      readFileSync((ref as { file: string }).file, 'utf8').trim(),
    )
    const files = execFileSync('find', [lab.runsDir, '-type', 'f'], { encoding: 'utf8' }).trim().split('\n')
    expect(files.length).toBeGreaterThan(10)
    for (const file of files) {
      const text = readFileSync(file, 'utf8')
      for (const secret of secrets) expect(text.includes(secret), `${file} holds a secret`).toBe(false)
      expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\./)
    }
  })

  it('refuses a version that does not exist before anything changes (exit 2)', async () => {
    const error = await startSystemRun(recording, { env: lab.env(), to: 'latest' }).catch((e: unknown) => e)
    expect(exitCodeFor(error)).toBe(2)
    expect((error as Error).message).toMatch(/--to: 'latest' is not a version/)
    // The dry run checks it too: a plan for a version that cannot exist is bad input, not a plan.
    const dry = await runCliInProcess(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', 'latest', '--dry-run'])
    expect(dry.code).toBe(2)
    expect(dry.stderr).toContain("--to: 'latest' is not a version")
  })
})
