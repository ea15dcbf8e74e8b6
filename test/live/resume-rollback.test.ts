/**
 * A rollback killed half-way: `svcops rollback live` of a finished 5.2.0 -> 7.0.0 upgrade is killed
 * with SIGKILL once the ingest's previous package is installed (the controller already back, the
 * others not); `svcops resume ID` continues the rollback and exits 0 as the uninterrupted rollback
 * does (a rollback asked for is no failed upgrade: not exit 4), and every component ends on 5.2.0
 * with the files as they were before the upgrade, checked, with no lock left and no PSK printed.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { LIVE_LOCK_PATH } from '../../src/live/hosts/live-hosts-platform.ts'
import { listRuns } from '../../src/runs/journal.ts'
import { gateIds, startLiveLab, type LiveLab } from '../support/live-lab.ts'

let lab: LiveLab

beforeAll(async () => {
  lab = await startLiveLab({ version: '5.2.0' })
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

it('a rollback killed after the ingest is back on 5.2.0 is finished by svcops resume ID', async () => {
  const before = lab.snapshot()
  const up = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--yes', '--ack', gateIds(lab.live(), '5.2.0', '7.0.0').join(',')])
  expect(up.code, up.stderr).toBe(0)
  const id = listRuns(lab.runsDir)[0]?.id ?? ''
  const killed = await lab.svcopsKilledInRun(['rollback', 'live', '--yes', '--run', id], id, 'rollback:install@ingest')
  expect(killed.signal).toBe('SIGKILL')
  expect(listRuns(lab.runsDir)[0]?.phase).toBe('rolling-back')
  const resumed = await lab.svcops(['resume', id])
  expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
  expect(resumed.stderr).toContain('rolled back to 5.2.0')
  expect(listRuns(lab.runsDir)[0]?.phase).toBe('rolled-back')
  expect(Object.values(lab.versions())).toEqual(['5.2.0', '5.2.0', '5.2.0', '5.2.0'])
  expect(lab.snapshot()).toEqual(before)
  expect((await lab.svcops(['verify', 'live'])).code).toBe(0)
  expect(lab.read(LIVE_LOCK_PATH)).toBeUndefined()
  for (const text of lab.everythingPrinted()) for (const psk of lab.psks()) expect(text.includes(psk)).toBe(false)
})
