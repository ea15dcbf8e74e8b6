/**
 * Crash-resume of `svcops upgrade live` at the boundaries from the first install to verify
 * (resume-cases.ts has the assertions and the bound: install, start and check at their first and
 * last component, the controller and the control panel). Seven boundaries, seven crossings: the
 * lab climbs 1.0.0 ... 7.0.0 once. The controller's install goes with 5.2.0 -> 6.0.0, where the
 * resumed run writes the configuration again over files it already moved and renamed.
 */
import { afterAll, beforeAll } from 'vitest'
import { startLiveLab, type LiveLab } from './fixture.ts'
import { describeLiveCrashResume, LATE_CASES } from './resume-cases.ts'

let lab: LiveLab

beforeAll(async () => {
  lab = await startLiveLab({ version: '1.0.0' })
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

describeLiveCrashResume(() => lab, LATE_CASES)
