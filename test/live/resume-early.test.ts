/**
 * Crash-resume of `svcops upgrade live` at the boundaries up to write-config (resume-cases.ts has
 * the assertions and the bound: stage and stop at their first and last component). Nine boundaries
 * need nine crossings and the lab climbs seven (1.0.0 ... 7.0.0): two boundaries before the first
 * stop share their pair with the next case, and their resumed run is rolled back (`back`). The
 * stops take the first crossings (1.0.0 -> 2.0.0 introduces the PSK), write-config takes 5.2.0 ->
 * 6.0.0 (settings file moved, TCP endpoint renamed), the crossing that changes the most files.
 */
import { afterAll, beforeAll } from 'vitest'
import { startLiveLab, type LiveLab } from './fixture.ts'
import { describeLiveCrashResume, EARLY_CASES } from './resume-cases.ts'

let lab: LiveLab

beforeAll(async () => {
  lab = await startLiveLab({ version: '1.0.0' })
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

describeLiveCrashResume(() => lab, EARLY_CASES)
