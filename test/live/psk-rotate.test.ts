/**
 * `svcops psk rotate` on the live lab (6.0.0, where the controller enforces the entropy check; a
 * real sandboxed host with dpkg, supervisord and sshd): the dry run changes nothing; a rotation puts
 * one new strong key in the controller's settings file and every component's environment file, the
 * old one nowhere, every component reconnected, the gap reported; a component that does not
 * reconnect (its environment file put back to the old key by something else right after svcops
 * wrote it, so the controller refuses it) rolls every file back to the old key, every component
 * restarted on it, exit 4; a rotation killed right after the controller's key was written is
 * finished by `svcops resume ID` with that same key everywhere, or undone by `svcops resume ID
 * --rollback`, the old key back everywhere. Neither key in any output, journal,
 * report or process's arguments. The same command on Kubernetes (a new `deploy.pskRotation`, then
 * `pulumi up`) is tested on the API stand-in in test/live/kubernetes.test.ts.
 */
import { existsSync, readdirSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { events } from '../../src/core/events.ts'
import { LIVE_LOCK_PATH } from '../../src/live/hosts/live-hosts-platform.ts'
import { listRuns } from '../../src/runs/journal.ts'
import { LIVE_COMPONENTS, useLiveLab } from '../support/live-lab.ts'

const lab = useLiveLab({ version: '6.0.0', cli: 'in-process' })
const CONNECTING = LIVE_COMPONENTS.filter((c) => c !== 'system-controller')

/** The key of the controller's settings file, and of each connecting component's environment file. */
function keys(): { settings: string | undefined; envs: Record<string, string | undefined> } {
  const envs: Record<string, string | undefined> = {}
  for (const c of CONNECTING) envs[c] = /^SVC_SYSTEM_CONTROLLER_PSK=(.*)$/m.exec(lab().env(c))?.[1]
  return { settings: lab().settings()?.json.psk, envs }
}

function expectEverywhere(key: string | undefined): void {
  expect(key).toBeTruthy()
  expect(keys()).toEqual({ settings: key, envs: Object.fromEntries(CONNECTING.map((c) => [c, key])) })
}

function expectAllRunning(): void {
  for (const c of LIVE_COMPONENTS) expect(lab().state(c), c).toBe('RUNNING')
}

function expectNoKeyPrinted(): void {
  const psks = lab().psks()
  expect(psks.length).toBeGreaterThan(1)
  for (const text of lab().everythingPrinted()) for (const psk of psks) expect(text.includes(psk)).toBe(false)
}

const phaseOf = (id: string) => listRuns(lab().runsDir).find((r) => r.id === id)?.phase
const runCount = () => (existsSync(lab().runsDir) ? readdirSync(lab().runsDir).length : 0)

describe('svcops psk rotate on hosts', () => {
  it('--dry-run shows the steps and the files, changes nothing and keeps no run', async () => {
    const before = lab().snapshot()
    const runs = runCount()
    const dry = await lab().svcops(['psk', 'rotate', '--dry-run'])
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toContain("Dry run: rotate the PSK of the live production system of 'lab'")
    expect(dry.stdout).toContain('write-psk')
    expect(dry.stdout).toMatch(/first write \S*svc_sc_settings\.json/)
    for (const c of CONNECTING) expect(dry.stdout).toContain(`/etc/default/svc-${c}`)
    expect(lab().snapshot()).toEqual(before)
    expect(runCount()).toBe(runs)
  })

  it('writes one new strong key to the controller and every component, the old one nowhere; every component reconnects; the gap is reported', async () => {
    const old = keys().settings
    expectEverywhere(old)
    const run = await lab().svcops(['psk', 'rotate', '--yes', '--json'])
    expect(run.code, run.stderr).toBe(0)
    const fresh = keys().settings
    expect(fresh).not.toBe(old)
    expectEverywhere(fresh)
    for (const text of Object.values(lab().snapshot())) expect(text?.includes(old ?? '') ?? false).toBe(false)
    expectAllRunning()
    const out = JSON.parse(run.stdout) as {
      phase: string
      runId: string
      report: { timeline: { step: string; status: string; data?: { gapMs?: number } }[] }
    }
    expect(out.phase).toBe('succeeded')
    const gap = out.report.timeline.find((e) => e.step === 'verify-psk' && e.status === 'ok')?.data?.gapMs ?? 0
    expect(gap).toBeGreaterThan(0)
    const verify = await lab().svcops(['verify', 'live'])
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    const listed = await lab().svcops(['runs', 'list', '--kind', 'psk-rotate', '--json'])
    expect(listed.stdout).toContain(out.runId)
    expect(lab().read(LIVE_LOCK_PATH)).toBeUndefined()
    expectNoKeyPrinted()
  })

  it('a component that does not reconnect with the new key: every file back on the old key, every component restarted on it, exit 4', async () => {
    const before = lab().snapshot()
    const old = keys().settings
    const panelBefore = lab().env('control-panel')
    // Right after svcops wrote the new key (before anything starts), something else puts the control
    // panel's old file back: it starts with the old key and the controller refuses it.
    const stop = events.subscribe((e) => {
      if (e.kind === 'step' && e.step === 'write-psk' && e.status === 'ok') lab().setEnv('control-panel', panelBefore)
    })
    let run
    try {
      run = await lab().svcops(['psk', 'rotate', '--yes'])
    } finally {
      stop()
    }
    expect(run.code, run.stdout + run.stderr).toBe(4)
    expect(run.stderr).toMatch(/control-panel/)
    expectEverywhere(old)
    expect(lab().snapshot()).toEqual(before)
    expectAllRunning()
    const id = listRuns(lab().runsDir)[0]?.id ?? ''
    expect(phaseOf(id)).toBe('rolled-back')
    expect(lab().read(LIVE_LOCK_PATH)).toBeUndefined()
    expectNoKeyPrinted()
  })

  it('killed right after the new key was written: svcops resume ID finishes with that key everywhere', async () => {
    const old = keys().settings
    const killed = await lab().svcopsKilledAt(['psk', 'rotate', '--yes'], 'write-psk')
    expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL')
    const id = listRuns(lab().runsDir)[0]?.id ?? ''
    expect(phaseOf(id)).toBe('running')
    const written = keys().settings
    expect(written).not.toBe(old)
    expectEverywhere(written)
    const resumed = await lab().svcopsProcess(['resume', id])
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
    expect(phaseOf(id)).toBe('succeeded')
    expectEverywhere(written)
    expectAllRunning()
    expect(lab().read(LIVE_LOCK_PATH)).toBeUndefined()
    expectNoKeyPrinted()
  })

  it('killed right after the new key was written: svcops resume ID --rollback puts the old key back everywhere', async () => {
    const before = lab().snapshot()
    const old = keys().settings
    const killed = await lab().svcopsKilledAt(['psk', 'rotate', '--yes'], 'write-psk')
    expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL')
    const id = listRuns(lab().runsDir)[0]?.id ?? ''
    expect(keys().settings).not.toBe(old)
    const rolled = await lab().svcopsProcess(['resume', id, '--rollback', '--yes'])
    expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0)
    expect(phaseOf(id)).toBe('rolled-back')
    expectEverywhere(old)
    expect(lab().snapshot()).toEqual(before)
    expectAllRunning()
    expect(lab().read(LIVE_LOCK_PATH)).toBeUndefined()
    expectNoKeyPrinted()
  })

  it('prints the gap in words, measured from the first stop', async () => {
    const run = await lab().svcops(['psk', 'rotate', '--yes'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(
      /^The gap: components disconnected for \d+\.\d s in all \(the first stop to the last reconnection\); longest \S+ \d+\.\d s\.$/m,
    )
    expectNoKeyPrinted()
  })
})
