/**
 * A playbook run through zx (`npx zx playbooks/upgrade.ts ...`) is the procedure itself, not a
 * relaunch of the CLI: on a lab it verifies, upgrades and rolls back the recording service, with the
 * exit codes, the JSON answer and the run report that `svcops` gives for the same request.
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT, type CliRun } from '../support/cli.ts'
import { runCli, startUpgradeLab, type UpgradeLab } from './fixture.ts'

const ZX = join(ROOT, 'node_modules', 'zx', 'build', 'cli.js')

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 3 })
}, 120_000)

afterAll(async () => {
  await lab?.stop()
})

/** Runs `npx zx FILE ...args` (zx's own CLI, on this Node) from the checkout, as an operator would. */
function runZx(file: string, args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ZX, file, ...args], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}

interface RunAnswer {
  ok: boolean
  runId: string
  phase: string
  report: { run: { kind: string; system: string; targetVersion: string }; timeline: Array<{ step: string; status: string }> }
}

/** The steps a run finished, in order, as its report lists them. */
const stepsOf = (answer: RunAnswer) => answer.report.timeline.filter((e) => e.status === 'ok').map((e) => e.step)

describe('a playbook run through zx', () => {
  it('verifies the service as svcops verify recording does: exit 0, the same checks in the same JSON', async () => {
    const zx = await runZx('playbooks/verify.ts', ['--stack-file', lab.envFile, '--no-test-recording', '--json'])
    const cli = await runCli(['--stack-file', lab.envFile, 'verify', 'recording', '--no-test-recording', '--json'])
    expect(zx.code, zx.stderr).toBe(0)
    expect(cli.code, cli.stderr).toBe(0)
    type Verification = { ok: boolean; hosts: Array<{ host: string; checks: Array<{ check: string; ok: boolean }> }> }
    const shape = (v: Verification) => ({
      ok: v.ok,
      hosts: v.hosts.map((h) => ({ host: h.host, checks: h.checks.map((c) => [c.check, c.ok]) })),
    })
    expect(shape(JSON.parse(zx.stdout) as Verification)).toEqual(shape(JSON.parse(cli.stdout) as Verification))
  })

  it('refuses a request the system refuses with the CLI exit code and sentence', async () => {
    const args = ['--stack-file', lab.envFile, '--to', '1.5.0', '--hosts', 'no-such-host', '--yes']
    const zx = await runZx('playbooks/upgrade.ts', args)
    const cli = await runCli(['--stack-file', lab.envFile, 'upgrade', 'recording', ...args.slice(2)])
    expect(zx.code).toBe(cli.code)
    expect(zx.code).toBe(2)
    const errorLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('svcops: '))
    expect(errorLines(zx.stderr)).toEqual(errorLines(cli.stderr))
    expect(errorLines(zx.stderr)).toEqual([expect.stringContaining("--hosts: 'no-such-host' is not a host of")])
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })
  })

  it('upgrades and rolls back the service with the exit codes and the report of svcops', async () => {
    const upgraded = await runZx('playbooks/upgrade.ts', ['--stack-file', lab.envFile, '--to', '1.5.0', '--yes', '--json'])
    expect(upgraded.code, upgraded.stderr).toBe(0)
    const byZx = JSON.parse(upgraded.stdout) as RunAnswer
    expect(byZx).toMatchObject({ ok: true, phase: 'succeeded', report: { run: { kind: 'upgrade', targetVersion: '1.5.0' } } })
    expect(existsSync(join(lab.runsDir, byZx.runId, 'report.json'))).toBe(true)
    expect(JSON.parse(readFileSync(join(lab.runsDir, byZx.runId, 'report.json'), 'utf8'))).toMatchObject({ run: { id: byZx.runId } })
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0' })

    const back = await runZx('playbooks/rollback.ts', ['--stack-file', lab.envFile, '--yes', '--json'])
    expect(back.code, back.stderr).toBe(0)
    expect(JSON.parse(back.stdout)).toMatchObject({ ok: true, runId: byZx.runId, phase: 'rolled-back' })
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0' })

    const byCli = await runCli(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', '1.5.0', '--yes', '--json'])
    expect(byCli.code, byCli.stderr).toBe(0)
    const cli = JSON.parse(byCli.stdout) as RunAnswer
    expect(Object.keys(byZx).sort()).toEqual(Object.keys(cli).sort())
    expect(Object.keys(byZx.report).sort()).toEqual(Object.keys(cli.report).sort())
    expect(byZx.report.run.system).toBe(cli.report.run.system)
    expect(cli.phase).toBe(byZx.phase)
    // The same procedure: the same steps finished, in the same order.
    expect(stepsOf(byZx)).toEqual(stepsOf(cli))
  })
})
