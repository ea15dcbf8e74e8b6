/**
 * Real SIGKILLs of `svcops upgrade live` on the lab, on the crossing that changes the most files
 * (5.2.0 -> 6.0.0: the settings file moved, the TCP endpoint renamed), at the boundaries where a
 * kill costs most: the first stop (the control panel), and mid-migration (write-config: every file
 * written for 6.0.0, nothing installed yet), whose finished run is then rolled back and that
 * rollback killed once the files were put back (mid-restore). The CLI dies by SIGKILL right after
 * its journal records the boundary (`crashFailpointEnv`, test/support/cli.ts); each run must end
 * with every component on the expected release, `verify live` exit 0, no lock, the files byte for
 * byte as before after a rollback, and no PSK printed. On the same lab, a rollback asked for after
 * 5.2.0 -> 7.0.0 is killed half-way (the controller and the ingest back on 5.2.0, the others not) and
 * finished by `svcops resume ID`. Every other boundary of the upgrade and its rollback is killed at
 * the engine, on the live system in memory (test/runs/crash-matrix-live.test.ts; docs/testing.md).
 */
import { describe, expect, it } from 'vitest'
import { LIVE_LOCK_PATH } from '../../src/live/hosts/live-hosts-platform.ts'
import { listRuns } from '../../src/runs/journal.ts'
import { gateIds, useLiveLab } from '../support/live-lab.ts'

// The runs that follow a kill are processes, as an operator starts them; the others read in the worker.
const lab = useLiveLab({ version: '5.2.0', cli: 'in-process' })
const phaseOf = (id: string) => listRuns(lab().runsDir).find((r) => r.id === id)?.phase

async function killedUpgrade(boundary: string): Promise<string> {
  const killed = await lab().svcopsKilledAt(
    ['upgrade', 'live', '--to', '6.0.0', '--yes', '--ack', gateIds(lab().live(), '5.2.0', '6.0.0').join(',')],
    boundary,
  )
  expect(killed.signal, `${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
  const id = listRuns(lab().runsDir)[0]?.id ?? ''
  expect(phaseOf(id)).toBe('running')
  return id
}

async function expectWhole(version: string): Promise<void> {
  expect(Object.values(lab().versions())).toEqual([version, version, version, version])
  const verify = await lab().svcops(['verify', 'live'])
  expect(verify.code, verify.stdout + verify.stderr).toBe(0)
  expect(lab().read(LIVE_LOCK_PATH)).toBeUndefined()
}

describe('kill -9 of a live upgrade 5.2.0 -> 6.0.0', () => {
  it('killed after the first stop: svcops rollback live ends on 5.2.0 with the old files', async () => {
    const before = lab().snapshot()
    await killedUpgrade('stop@control-panel')
    const rolled = await lab().svcopsProcess(['rollback', 'live', '--yes'])
    expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0)
    await expectWhole('5.2.0')
    expect(lab().snapshot()).toEqual(before)
  })

  it('killed after write-config: svcops resume ID ends on 6.0.0; its rollback killed after the files were put back ends on 5.2.0', async () => {
    const before = lab().snapshot()
    const id = await killedUpgrade('write-config')
    const resumed = await lab().svcopsProcess(['resume', id])
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
    expect(phaseOf(id)).toBe('succeeded')
    await expectWhole('6.0.0')
    const killed = await lab().svcopsKilledInRun(['rollback', 'live', '--yes', '--run', id], id, 'rollback:restore-config')
    expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL')
    expect(phaseOf(id)).toBe('rolling-back')
    const finished = await lab().svcopsProcess(['resume', id])
    expect(finished.code, finished.stdout + finished.stderr).toBe(0)
    expect(phaseOf(id)).toBe('rolled-back')
    await expectWhole('5.2.0')
    expect(lab().snapshot()).toEqual(before)
  })
})

describe('kill -9 of a rollback of 5.2.0 -> 7.0.0', () => {
  it('a rollback killed after the ingest is back on 5.2.0 is finished by svcops resume ID', async () => {
    const before = lab().snapshot()
    const up = await lab().svcops(['upgrade', 'live', '--to', '7.0.0', '--yes', '--ack', gateIds(lab().live(), '5.2.0', '7.0.0').join(',')])
    expect(up.code, up.stderr).toBe(0)
    const id = listRuns(lab().runsDir)[0]?.id ?? ''
    const killed = await lab().svcopsKilledInRun(['rollback', 'live', '--yes', '--run', id], id, 'rollback:install@ingest')
    expect(killed.signal).toBe('SIGKILL')
    expect(phaseOf(id)).toBe('rolling-back')
    const resumed = await lab().svcopsProcess(['resume', id])
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
    // A rollback asked for is no failed upgrade: exit 0, not 4, whichever process finished it.
    expect(resumed.stderr).toContain('rolled back to 5.2.0')
    expect(phaseOf(id)).toBe('rolled-back')
    expect(lab().snapshot()).toEqual(before)
    await expectWhole('5.2.0')
  })
})

describe('every run of this file', () => {
  it('shows no PSK in any output, journal or report', () => {
    expect(lab().psks().length).toBeGreaterThan(0)
    for (const text of lab().everythingPrinted()) for (const psk of lab().psks()) expect(text.includes(psk)).toBe(false)
  })
})
