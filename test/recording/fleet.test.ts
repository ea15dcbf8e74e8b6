/**
 * A fleet of three hosts sharing one database: two runs at once (the second is refused with the
 * holder, since when and the run id); canary first, then a batch of two upgraded concurrently, one
 * of which fails — the rollout stops and, because the canary migrated the shared database, every
 * host is rolled back and the database restored, with nothing lost.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { exitCodeFor, LockedError } from '../../src/core/errors.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { localDecision, openPause, writeLocalDecision } from '../../src/runs/run-decision.ts'
import { runKeyOf } from '../../src/runs/run-mac.ts'
import { Phase, stepName } from '../../src/runs/step.ts'
import { stopService } from '../../src/recording/target-steps.ts'
import { restoreBackup } from '../../src/recording/rollback-steps.ts'
import { recording } from '../../playbooks/upgrade.ts'
import { startSystemRun } from '../../src/runs/run-actions.ts'
import { startUpgradeLab, waitForPausedRun, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 3, version: '1.5.0', recordings: 6 })
}, 120_000)

afterAll(async () => {
  await lab?.stop()
})

describe('fleet upgrade', () => {
  it('refuses a second run while one holds the environment (exit 3, names holder, since and run id)', async () => {
    const child = spawn(
      process.execPath,
      [join(process.cwd(), 'bin/svcops'), '--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '1.5.0', '--yes', '--json'],
      { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
    let first: string | undefined
    for (let i = 0; i < 200 && !first; i++) {
      await new Promise((r) => setTimeout(r, 100))
      first = listRuns(lab.runsDir).find((r) => r.phase === 'running')?.id
    }
    expect(first).toBeDefined()
    const error = await startSystemRun(recording, { env: lab.env(), to: '1.5.0' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockedError)
    expect(exitCodeFor(error)).toBe(3)
    expect((error as Error).message).toMatch(new RegExp(`locked by run ${first as string} \\(\\S+@\\S+, pid \\d+\\) since \\d{4}-`))
    expect((error as LockedError).facts).toMatchObject({
      lockedBy: { runId: first, pid: expect.any(Number) as number, since: expect.stringMatching(/^\d{4}-/) as string },
    })
    expect(await exited).toBe(0)
    // The fleet runs 1.5.0 already: the first run held the lock through its preflight and changed nothing.
    expect(Journal.open(first as string).run.phase).toBe('no-op')
  })

  it('canary, then a concurrent batch; a failing host stops the rollout and every host is rolled back with the database', async () => {
    // rec-3's operator set an option 2.0.0 validates and 1.5.0 ignores: 2.0.0 refuses to start there.
    const rec3 = lab.env().recording!.hosts[2]!
    const configFile = join(rec3.root!, 'etc/opt/svc/recording.json')
    const config = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>
    writeFileSync(configFile, JSON.stringify({ ...config, logLevel: 'loud' }, null, 2))
    const before = await lab.listAll()
    const fingerprint = await lab.fingerprint()
    const error = await startSystemRun(recording, { env: lab.env(), to: '2.0.0', batch: 2 }).catch((e: unknown) => e)
    expect(exitCodeFor(error)).toBe(4)
    expect((error as Error).message).toMatch(/rec-3/)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0', 'rec-2': '1.5.0', 'rec-3': '1.5.0' })
    expect(await lab.healthy()).toEqual([true, true, true])
    expect(await lab.fingerprint()).toBe(fingerprint)
    for (const host of [0, 1, 2]) {
      const ids = (await lab.listAll(host)).map((r) => r.id)
      for (const r of before) expect(ids).toContain(r.id)
    }
    const run = Journal.open(listRuns(lab.runsDir)[0]?.id ?? '')
    const entries = run.entries()
    const at = (step: string, host: string, status = 'start') =>
      entries.findIndex((e) => e.step === step && e.host === host && e.status === status)
    // The canary finished before the batch began; inside the batch both hosts were stopped before either was verified.
    expect(at('verify-host', 'rec-1', 'ok')).toBeLessThan(at('stop', 'rec-2'))
    expect(at('stop', 'rec-3')).toBeLessThan(at('verify-host', 'rec-2', 'ok') === -1 ? Infinity : at('verify-host', 'rec-2', 'ok'))
    expect(entries.some((e) => e.step === stepName(restoreBackup, Phase.rollback) && e.status === 'ok')).toBe(true)
    expect(run.run.phase).toBe('rolled-back')
    writeFileSync(configFile, JSON.stringify(config, null, 2))
  })
  it('--window: a batch that would end after the maintenance window does not start, and the canary is rolled back with the database', async () => {
    const before = await lab.listAll()
    const fingerprint = await lab.fingerprint()
    // The window counts from the request. The canary (2.1.0+slowstart: 6 s before it listens, then
    // verified) is held once verified (--pause-after-canary: the wait counts against the window) and
    // promoted with 4 s of the window left. Batch 1 would take as long as the canary, so it does not
    // start, however fast the preflight, the backup and the canary were on this machine.
    const known = existsSync(lab.runsDir) ? readdirSync(lab.runsDir) : []
    const upgrade = startSystemRun(recording, {
      env: lab.env(),
      to: '2.1.0+slowstart',
      batch: 1,
      windowMs: 40_000,
      pauseAfterCanary: true,
    }).catch((e: unknown) => e)
    const id = await waitForPausedRun(lab.runsDir, known, upgrade)
    const waiting = Journal.open(id).run
    const deadline = Date.parse(String(waiting.params.deadline))
    expect(deadline - Date.now(), 'the canary was verified with more than 5 s of the window left').toBeGreaterThan(5_000)
    await new Promise((r) => setTimeout(r, deadline - 4_000 - Date.now()))
    writeLocalDecision(
      join(lab.runsDir, id),
      localDecision('promote', waiting.environment, id, runKeyOf(lab.env()), openPause(Journal.open(id).entries())),
    )
    const error = await upgrade
    expect(exitCodeFor(error), String(error)).toBe(4)
    const message = (error as Error).message
    expect(message).toMatch(/The maintenance window ends at \S+; batch 1 \(rec-2\) would not end before it \(a batch has taken \d+ s\)/)
    const run = Journal.open(id)
    expect(run.entries().some((e) => e.step === stepName(stopService) && e.host === 'rec-2')).toBe(false)
    expect(run.entries().some((e) => e.step === stepName(stopService) && e.host === 'rec-3')).toBe(false)
    expect(run.entries().some((e) => e.step === stepName(restoreBackup, Phase.rollback) && e.status === 'ok')).toBe(true)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0', 'rec-2': '1.5.0', 'rec-3': '1.5.0' })
    expect(await lab.healthy()).toEqual([true, true, true])
    expect(await lab.fingerprint()).toBe(fingerprint)
    const ids = (await lab.listAll()).map((r) => r.id)
    for (const r of before) expect(ids).toContain(r.id)
  })

  it('--max-fail 1 tolerates a failing host: the others stay upgraded, the failed one is left stopped (schema changed) and reported', async () => {
    const rec3 = lab.env().recording!.hosts[2]!
    const configFile = join(rec3.root!, 'etc/opt/svc/recording.json')
    const config = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>
    writeFileSync(configFile, JSON.stringify({ ...config, logLevel: 'loud' }, null, 2))
    const error = await startSystemRun(recording, { env: lab.env(), to: '2.0.0', batch: 2, maxFail: '1' }).catch((e: unknown) => e)
    expect(exitCodeFor(error)).toBe(1)
    expect((error as Error).message).toMatch(/Upgraded 2 of 3 hosts to 2\.0\.0; rec-3 failed \(within --max-fail 1\)/)
    expect(await lab.healthy()).toEqual([true, true, false])
    // The operator repairs rec-3's config and finishes it alone.
    writeFileSync(configFile, JSON.stringify(config, null, 2))
    const done = await startSystemRun(recording, { env: lab.env(), to: '2.0.0', hosts: ['rec-3'] })
    expect(done.phase).toBe('succeeded')
    expect(await lab.versions()).toEqual({ 'rec-1': '2.0.0', 'rec-2': '2.0.0', 'rec-3': '2.0.0' })
    expect(await lab.healthy()).toEqual([true, true, true])
  })
})
