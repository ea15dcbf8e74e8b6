/**
 * Crash-resume of `svcops upgrade live`: the test kills the CLI with SIGKILL from outside as soon as
 * its journal shows a step boundary, then `svcops rollback live` (back on the old release, files
 * as they were) or `svcops resume ID` (on the new release) must each end with every component
 * checked and no lock left behind. The boundaries are a bounded choice across the procedure:
 * before the first stop, every component stopped with the new files written, and the controller
 * upgraded alone while the others wait (three boundaries, so the file stays short). Each pair
 * climbs one major.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listRuns } from '../../src/runs/journal.ts'
import { LIVE_LOCK_PATH } from '../../src/live/context.ts'
import { gateIds, startLiveLab, type LiveLab } from './fixture.ts'

const CASES = [
  { boundary: 'backup', from: '1.0.0', to: '2.0.0' },
  { boundary: 'write-config', from: '2.0.0', to: '3.0.0' },
  { boundary: 'check@system-controller', from: '3.0.0', to: '4.0.0' },
]

let lab: LiveLab

beforeAll(async () => {
  lab = await startLiveLab({ version: '1.0.0' })
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

async function killedUpgrade(boundary: string, to: string, from: string): Promise<string> {
  const killed = await lab.svcopsKilledAt(
    ['upgrade', 'live', '--to', to, '--yes', '--ack', gateIds(lab.live(), from, to).join(',')],
    boundary,
  )
  expect(killed.signal).toBe('SIGKILL')
  const run = listRuns(lab.runsDir)[0]
  expect(run?.phase).toBe('running')
  return run?.id ?? ''
}

async function expectWhole(version: string): Promise<void> {
  expect(Object.values(lab.versions())).toEqual([version, version, version, version])
  const verify = await lab.svcops(['verify', 'live'])
  expect(verify.code, verify.stdout).toBe(0)
  expect(lab.read(LIVE_LOCK_PATH)).toBeUndefined()
}

describe('kill -9 at a step boundary of a live upgrade, then roll back or resume', () => {
  describe.each(CASES)('killed after $boundary ($from -> $to)', ({ boundary, from, to }) => {
    it('svcops rollback live ends on the old release with the old files', async () => {
      const before = lab.snapshot()
      await killedUpgrade(boundary, to, from)
      const back = await lab.svcops(['rollback', 'live', '--yes'])
      expect(back.code, back.stderr).toBe(0)
      await expectWhole(from)
      expect(lab.snapshot()).toEqual(before)
    })

    it('svcops resume ID ends on the new release', async () => {
      const id = await killedUpgrade(boundary, to, from)
      const resumed = await lab.svcops(['resume', id])
      expect(resumed.code, resumed.stderr).toBe(0)
      expect(listRuns(lab.runsDir).find((r) => r.id === id)?.phase).toBe('succeeded')
      await expectWhole(to)
    })
  })

  it('shows no PSK in any output, journal or report', () => {
    for (const text of lab.everythingPrinted()) for (const psk of lab.psks()) expect(text.includes(psk)).toBe(false)
  })
})
