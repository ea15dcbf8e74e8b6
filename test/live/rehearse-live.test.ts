/**
 * `svcops rehearse live` on a live lab host on 5.2.0 with a weak PSK and two TCP endpoints, as a
 * run of kind rehearse of the live system: the upgrade to 7.0.0's file changes (settings file moved
 * to /etc/opt, a new PSK everywhere, the TCP endpoint variable renamed to one endpoint) rehearsed on
 * a copy of the host's files in the run folder, checked as verify live checks the target's files,
 * journaled with its finding in report.md and report.html; a rehearsal killed by SIGKILL or stopped
 * by SIGINT (the tests' crash failpoint, test/support/cli.ts) is finished by `svcops resume ID`,
 * and no copy is left. Production's files, versions and processes are unchanged by every case, and
 * no PSK is in any output or run file. On real dpkg, supervisord and sshd (test/support/live-lab.ts).
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { LIVE_LOCK_PATH } from '../../src/live/hosts/live-hosts-platform.ts'
import { listRuns } from '../../src/runs/journal.ts'
import { crashFailpointEnv, runSvcops } from '../support/cli.ts'
import { useLiveLab } from '../support/live-lab.ts'

const lab = useLiveLab({ version: '5.2.0', weakPsk: true, tcpEndpoints: 2, cli: 'in-process' })

/** The host as an operator checks it: every settings and environment file, and the installed versions. */
function production(): unknown {
  return { files: lab().snapshot(), versions: lab().versions() }
}

/** The two TCP endpoints the lab's pipeline is configured with. */
function endpoints(): string[] {
  const line = lab()
    .env('pipeline')
    .split('\n')
    .find((l) => l.startsWith('SVC_TCP_ENDPOINTS='))
  return (line?.slice('SVC_TCP_ENDPOINTS='.length) ?? '').split(',').filter(Boolean)
}

const newest = () => listRuns(lab().runsDir)[0]
const runFile = (id: string, name: string) => join(lab().runsDir, id, name)

/** What a rehearsal run must leave whatever way it ended: no copy, no record of production's files, no lock. */
function expectCleanedUp(id: string): void {
  expect(existsSync(runFile(id, 'rehearsal'))).toBe(false)
  expect(existsSync(runFile(id, 'live-files-before.json'))).toBe(false)
  expect(lab().read(LIVE_LOCK_PATH)).toBeUndefined()
}

describe('svcops rehearse live', () => {
  it('5.2.0 -> 7.0.0 with two TCP endpoints: a failed rehearsal run with the refusal the upgrade would make (exit 1), in its report; production unchanged', async () => {
    const before = production()
    const run = await lab().svcops(['rehearse', 'live', '--to', '7.0.0'])
    expect(run.code, run.stderr).toBe(1)
    expect(run.stderr).toMatch(/The live rehearsal of 5\.2\.0 -> 7\.0\.0 failed: .*SVC_TCP_ENDPOINTS lists 2 endpoints/)
    const record = newest()
    expect(record).toMatchObject({ system: 'live', kind: 'rehearse', targetVersion: '7.0.0', phase: 'failed' })
    const id = record?.id ?? ''
    expect(readFileSync(runFile(id, 'report.md'), 'utf8')).toMatch(/## Live rehearsal[\s\S]*FAILED — .*SVC_TCP_ENDPOINTS lists 2 endpoints/)
    expectCleanedUp(id)
    expect(production()).toEqual(before)
  })

  it('with --tcp-endpoint: passes on the copy (settings where 7.0.0 reads them, one strong PSK everywhere, one endpoint), journaled with its finding in report.html; production, its PSK and its processes unchanged', async () => {
    const before = production()
    const pids = lab().pid('system-controller')
    const [keep = ''] = endpoints()
    const run = await lab().svcops(['rehearse', 'live', '--to', '7.0.0', '--tcp-endpoint', keep, '--json'])
    expect(run.code, run.stderr).toBe(0)
    const out = JSON.parse(run.stdout) as { ok: boolean; runId: string; phase: string }
    expect(out).toMatchObject({ ok: true, phase: 'succeeded' })
    expect(newest()).toMatchObject({ id: out.runId, system: 'live', kind: 'rehearse', phase: 'succeeded' })
    const steps = readFileSync(runFile(out.runId, 'journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { step: string; status: string; data?: Record<string, unknown> })
    expect(steps.filter((e) => e.status === 'ok').map((e) => e.step)).toEqual([
      'read-production',
      'copy-files',
      'check-copy',
      'check-production',
      'record-rehearsal',
    ])
    const result = steps.find((e) => e.step === 'record-rehearsal' && e.status === 'ok')?.data as {
      verdict: string
      from: string
      changes: Array<{ path: string; change: string; why: string[] }>
      checks: Array<{ check: string; ok: boolean; detail?: string }>
      api: { from: string; to: string }
      notRehearsed: string
    }
    expect(result).toMatchObject({ verdict: 'passed', from: '5.2.0', api: { from: '/api/v2', to: '/api/v3' } })
    expect(result.checks.map((c) => [c.check, c.ok])).toEqual(
      expect.arrayContaining([
        ['settings file where 7.0.0 reads it', true],
        ["every component's SVC_SYSTEM_CONTROLLER_PSK is the controller's PSK", true],
        ['the PSK passes the entropy check', true],
        ["production's settings and environment files as they were", true],
      ]),
    )
    expect(result.checks.find((c) => c.check.includes('SVC_TCP_ENDPOINT holds one endpoint'))).toMatchObject({
      ok: true,
      detail: `SVC_TCP_ENDPOINT=${keep}`,
    })
    // The settings file is written under /etc/opt and removed where 5.2.0 kept it; every connecting component gets the new PSK.
    expect(result.changes.some((c) => c.change === 'written' && c.path.startsWith('/etc/opt/'))).toBe(true)
    expect(result.changes.some((c) => c.change === 'removed')).toBe(true)
    expect(result.changes.flatMap((c) => c.why).join('\n')).toMatch(/new PSK: the PSK fails the entropy check/)
    expect(result.notRehearsed).toMatch(/no system controller of the target is started/)
    expect(readFileSync(runFile(out.runId, 'report.html'), 'utf8')).toContain('Live rehearsal: the upgrade on a copy of the files')
    expectCleanedUp(out.runId)
    expect(production()).toEqual(before)
    expect(lab().pid('system-controller')).toBe(pids)
  })

  it('killed (SIGKILL) once the copy is made: the copy is left until svcops resume ID finishes the rehearsal and removes it; production unchanged', async () => {
    const before = production()
    const [keep = ''] = endpoints()
    const killed = await lab().svcopsKilledAt(['rehearse', 'live', '--to', '7.0.0', '--tcp-endpoint', keep], 'copy-files')
    expect(killed.signal, `${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
    const id = newest()?.id ?? ''
    expect(newest()).toMatchObject({ kind: 'rehearse', phase: 'running' })
    expect(existsSync(runFile(id, 'rehearsal'))).toBe(true)
    // The live system's lock names the killed rehearsal: an upgrade would be refused until it is finished.
    expect(lab().read(LIVE_LOCK_PATH)).toContain(id)
    const resumed = await lab().svcopsProcess(['resume', id])
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
    expect(listRuns(lab().runsDir).find((r) => r.id === id)?.phase).toBe('succeeded')
    expect(readFileSync(runFile(id, 'report.md'), 'utf8')).toMatch(/live rehearsal verdict: passed/)
    expectCleanedUp(id)
    expect(production()).toEqual(before)
  })

  it('stopped by SIGINT after the copy: the copy is removed at once and the lock let go; svcops resume ID --rollback ends it as failed', async () => {
    const before = production()
    const [keep = ''] = endpoints()
    const args = ['--stack-file', lab().envFile, 'rehearse', 'live', '--to', '7.0.0', '--tcp-endpoint', keep]
    const stopped = await runSvcops(args, { env: { SVCOPS_RUNS_DIR: lab().runsDir, ...crashFailpointEnv('copy-files', 'SIGINT') } })
    expect(stopped.code, stopped.stdout + stopped.stderr).not.toBe(0)
    const id = newest()?.id ?? ''
    expect(newest()).toMatchObject({ kind: 'rehearse', phase: 'interrupted' })
    expect(stopped.stderr).toContain(`svcops resume ${id}`)
    expect(existsSync(runFile(id, 'rehearsal'))).toBe(false)
    expect(lab().read(LIVE_LOCK_PATH)).toBeUndefined()
    const ended = await lab().svcopsProcess(['resume', id, '--rollback'])
    expect(ended.code, ended.stdout + ended.stderr).toBe(0)
    expect(listRuns(lab().runsDir).find((r) => r.id === id)?.phase).toBe('failed')
    expectCleanedUp(id)
    expect(production()).toEqual(before)
    for (const psk of lab().psks()) for (const text of [stopped.stdout, stopped.stderr]) expect(text).not.toContain(psk)
  })

  it('--dry-run lists the steps from the running release and changes nothing: no run, no copy', async () => {
    const runs = listRuns(lab().runsDir).length
    const run = await lab().svcops(['rehearse', 'live', '--to', '7.0.0', '--dry-run'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^Dry run: rehearsal of the live upgrade of 'lab' to 7\.0\.0/)
    for (const step of ['read-production', 'copy-files', 'check-copy', 'check-production', 'record-rehearsal'])
      expect(run.stdout).toContain(`${step} — `)
    expect(run.stdout).toContain('5.2.0 -> 7.0.0')
    expect(listRuns(lab().runsDir)).toHaveLength(runs)
  })

  it('refuses a release that is not newer than the running one, in one sentence (exit 2), and leaves no run', async () => {
    const runs = listRuns(lab().runsDir).length
    const run = await lab().svcops(['rehearse', 'live', '--to', '5.2.0'])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(
      /--to: 5\.2\.0 is not newer than 5\.2\.0, the release the live system runs; expected a later release to rehearse\./,
    )
    expect(listRuns(lab().runsDir)).toHaveLength(runs)
  })

  it('shows no PSK in any output or run file', () => {
    expect(lab().psks().length).toBeGreaterThan(0)
    for (const psk of lab().psks()) for (const text of lab().everythingPrinted()) expect(text).not.toContain(psk)
  })
})
