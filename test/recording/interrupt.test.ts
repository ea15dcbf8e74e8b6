/**
 * Interrupted runs on the lab (one host, 1.4.0 -> 1.5.0): a Ctrl-C during an upgrade stops it at the
 * next step boundary, journals `interrupted`, prints the two commands that finish it, and keeps the
 * environment locked for it; `svcops resume ID --rollback` then puts the service back. A run whose
 * process died (SIGKILL) shows `interrupted` in `runs list`, never `running`. The signal is sent by
 * the journal's failpoint (`crashFailpointEnv(boundary, 'SIGINT')`, test/support/crash-failpoint.ts): at the exact
 * boundary, however busy the machine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { readEnvironmentLock } from '../../src/runs/lock.ts'
import { crashFailpointEnv, runSvcops, runSvcopsKilledAt } from '../support/cli.ts'
import { startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 3 })
}, 400_000)

afterAll(async () => {
  await lab?.stop()
})

const cli = (args: string[], env: Record<string, string> = {}) =>
  runSvcops(['--stack-file', lab.envFile, ...args], { env: { SVCOPS_RUNS_DIR: lab.runsDir, ...env } })

interface Listed {
  runs: { id: string; phase: string }[]
}

describe('an interrupted upgrade', () => {
  it('SIGINT stops at a safe point, says how to resume or roll back, and rollback puts the service back', async () => {
    const stopped = await cli(['upgrade', 'recording', '--to', '1.5.0', '--yes'], crashFailpointEnv('stop@rec-1', 'SIGINT'))
    const output = `${stopped.stdout}\n${stopped.stderr}`
    expect(stopped.code, output).toBe(130)
    const id = listRuns(lab.runsDir)[0]?.id as string
    expect(output).toContain(`svcops resume ${id}\n`)
    expect(output).toContain(`svcops resume ${id} --rollback`)
    expect(output).toMatch(/interrupted: Interrupted by SIGINT after \S+ on rec-1\./)
    const journal = Journal.open(id, lab.runsDir)
    expect(journal.run.phase).toBe('interrupted')
    expect(journal.entries().at(-1)?.step).toBe('interrupted')
    // The step under way finished; nothing started after the interruption was journaled.
    expect(
      journal
        .entries()
        .filter(
          (e) => e.status === 'start' && !journal.entries().some((f) => f.step === e.step && f.host === e.host && f.status !== 'start'),
        ),
    ).toEqual([])

    const listed = await cli(['runs', 'list', '--json'])
    expect((JSON.parse(listed.stdout) as Listed).runs.find((r) => r.id === id)?.phase).toBe('interrupted')

    // The environment stays locked for it: a new upgrade is refused naming the two commands.
    const refused = await cli(['upgrade', 'recording', '--to', '1.5.0', '--yes'])
    expect(refused.code, refused.stderr).toBe(3)
    expect(refused.stderr).toContain(`svcops resume ${id}`)
    expect(refused.stderr).toContain(`svcops resume ${id} --rollback`)
    const broken = await cli(['upgrade', 'recording', '--to', '1.5.0', '--yes', '--break-lock'])
    expect(broken.code, broken.stderr).toBe(3)
    expect(broken.stderr).toMatch(/--break-lock: .*nothing would then roll that run back/)
    expect(broken.stderr).toContain('--force')
    expect(listRuns(lab.runsDir)[0]?.id).toBe(id)

    const rolledBack = await cli(['resume', id, '--rollback'])
    expect(rolledBack.code, `${rolledBack.stdout}\n${rolledBack.stderr}`).toBe(0)
    expect(Journal.open(id, lab.runsDir).run.phase).toBe('rolled-back')
    expect((await lab.versions())['rec-1']).toBe('1.4.0')
    expect(await lab.healthy()).toEqual([true])
    expect(await readEnvironmentLock(lab.env().recording!.database, 'lab')).toBeUndefined()
  }, 900_000)

  it('a run whose process died shows as interrupted, never running, and resume --rollback finishes it', async () => {
    const killed = await runSvcopsKilledAt(
      ['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '1.5.0', '--yes'],
      'install@rec-1',
      lab.runsDir,
    )
    expect(killed.signal, `${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
    const id = listRuns(lab.runsDir)[0]?.id as string
    expect(Journal.open(id, lab.runsDir).run.phase).toBe('running')
    const listed = await cli(['runs', 'list', '--json'])
    expect((JSON.parse(listed.stdout) as Listed).runs.find((r) => r.id === id)?.phase).toBe('interrupted')
    const shown = await cli(['runs', 'show', id, '--json'])
    expect((JSON.parse(shown.stdout) as { run: { phase: string } }).run.phase).toBe('interrupted')
    const rolledBack = await cli(['resume', id, '--rollback'])
    expect(rolledBack.code, `${rolledBack.stdout}\n${rolledBack.stderr}`).toBe(0)
    expect((await lab.versions())['rec-1']).toBe('1.4.0')
    expect(await lab.healthy()).toEqual([true])
  }, 900_000)
})
