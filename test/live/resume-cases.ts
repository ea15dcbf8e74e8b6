/**
 * Crash-resume of `svcops upgrade live` at every step boundary, shared by resume-early.test.ts and
 * resume-late.test.ts (two files, each with a lab of its own, so they run in parallel). The test
 * kills the CLI with SIGKILL from outside as soon as its journal shows a step boundary finished
 * (`lab.svcopsKilledAt`), then
 *
 *   rollback  `svcops rollback live` must end with every component on the old release, `verify
 *             live` exit 0, no lock and the settings and environment files byte for byte as before;
 *   resume    `svcops resume ID` must end with the run succeeded, every component on the new
 *             release, `verify live` exit 0 and no lock.
 *
 * The boundaries, in the playbook's order (playbooks/upgrade-live.ts): preflight, gates (the
 * check-gates step), stage@<component>, check-config, backup, stop@<component> (control panel
 * first), write-config, install/start/check@<component> (controller first), verify. The bound: a
 * step run once per component (stage, stop, install, start, check) is killed at its first and its
 * last component in that step's order, not at the two between; every distinct step id is covered
 * at least at its first and its last instance.
 *
 * Each case names the pair it upgrades. The rollback case runs first and leaves the lab on `from`;
 * the resume case then leaves it on `to`, which is the next case's `from`: the cases climb the lab's
 * releases one crossing at a time (1.0.0 ... 7.0.0, 5.0.0 -> 5.2.0 being a minor one). Where two
 * cases share a pair (`back`), the resume case ends with `svcops rollback live` of its succeeded
 * run, which is cheaper than a lab of its own and checks that a resumed run can still be undone.
 */
import { describe, expect, it } from 'vitest'
import { listRuns } from '../../src/runs/journal.ts'
import { LIVE_LOCK_PATH } from '../../src/live/context.ts'
import { gateIds, type LiveLab } from './fixture.ts'

export interface CrashCase {
  boundary: string
  from: string
  to: string
  /** The next case upgrades the same pair: the resumed run is rolled back at the end. */
  back?: boolean
}

/** Every boundary of a live upgrade, in the playbook's order (per-component steps at their first and last component). */
export const BOUNDARIES = [
  'preflight',
  'gates',
  'stage@system-controller',
  'stage@control-panel',
  'check-config',
  'backup',
  'stop@control-panel',
  'stop@system-controller',
  'write-config',
  'install@system-controller',
  'install@control-panel',
  'start@system-controller',
  'start@control-panel',
  'check@system-controller',
  'check@control-panel',
  'verify',
] as const

/** Up to write-config (resume-early.test.ts). Nine boundaries, seven crossings: two before the first stop go `back`; the boundaries that stop or write go first, on the crossings that change the most files. */
export const EARLY_CASES: CrashCase[] = [
  { boundary: 'stop@control-panel', from: '1.0.0', to: '2.0.0' },
  { boundary: 'stop@system-controller', from: '2.0.0', to: '3.0.0' },
  { boundary: 'preflight', from: '3.0.0', to: '4.0.0', back: true },
  { boundary: 'gates', from: '3.0.0', to: '4.0.0', back: true },
  { boundary: 'stage@system-controller', from: '3.0.0', to: '4.0.0' },
  { boundary: 'stage@control-panel', from: '4.0.0', to: '5.0.0' },
  { boundary: 'check-config', from: '5.0.0', to: '5.2.0' },
  { boundary: 'write-config', from: '5.2.0', to: '6.0.0' },
  { boundary: 'backup', from: '6.0.0', to: '7.0.0' },
]

/** From the first install to verify (resume-late.test.ts). Seven boundaries, seven crossings; the controller's install with 5.2.0 -> 6.0.0, where the resumed run writes the configuration again over files it already moved and renamed. */
export const LATE_CASES: CrashCase[] = [
  { boundary: 'check@system-controller', from: '1.0.0', to: '2.0.0' },
  { boundary: 'install@control-panel', from: '2.0.0', to: '3.0.0' },
  { boundary: 'start@system-controller', from: '3.0.0', to: '4.0.0' },
  { boundary: 'start@control-panel', from: '4.0.0', to: '5.0.0' },
  { boundary: 'check@control-panel', from: '5.0.0', to: '5.2.0' },
  { boundary: 'install@system-controller', from: '5.2.0', to: '6.0.0' },
  { boundary: 'verify', from: '6.0.0', to: '7.0.0' },
]

/** Declares the kill-then-rollback and kill-then-resume cases, in order, on the lab `lab()` returns. */
export function describeLiveCrashResume(lab: () => LiveLab, cases: CrashCase[]): void {
  async function killedUpgrade(boundary: string, from: string, to: string): Promise<string> {
    expect(Object.values(lab().versions())).toEqual([from, from, from, from])
    const killed = await lab().svcopsKilledAt(
      ['upgrade', 'live', '--to', to, '--yes', '--ack', gateIds(lab().live(), from, to).join(',')],
      boundary,
    )
    expect(killed.signal, `${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
    const run = listRuns(lab().runsDir)[0]
    expect(run?.phase).toBe('running')
    return run?.id ?? ''
  }

  async function expectWhole(version: string): Promise<void> {
    expect(Object.values(lab().versions())).toEqual([version, version, version, version])
    const verify = await lab().svcops(['verify', 'live'])
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    expect(lab().read(LIVE_LOCK_PATH)).toBeUndefined()
  }

  describe('kill -9 at a step boundary of a live upgrade, then roll back or resume', () => {
    it('the two files together kill at every boundary', () => {
      expect([...EARLY_CASES, ...LATE_CASES].map((c) => c.boundary).sort()).toEqual([...BOUNDARIES].sort())
    })

    describe.each(cases)('killed after $boundary ($from -> $to)', ({ boundary, from, to, back }) => {
      it('svcops rollback live ends on the old release with the old files', async () => {
        const before = lab().snapshot()
        await killedUpgrade(boundary, from, to)
        const rolled = await lab().svcops(['rollback', 'live', '--yes'])
        expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0)
        await expectWhole(from)
        expect(lab().snapshot()).toEqual(before)
      })

      it(`svcops resume ID ends on the new release${back ? ', and its rollback on the old one' : ''}`, async () => {
        const before = lab().snapshot()
        const id = await killedUpgrade(boundary, from, to)
        const resumed = await lab().svcops(['resume', id])
        expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
        expect(listRuns(lab().runsDir).find((r) => r.id === id)?.phase).toBe('succeeded')
        await expectWhole(to)
        if (!back) return
        const rolled = await lab().svcops(['rollback', 'live', '--yes', '--run', id])
        expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0)
        await expectWhole(from)
        expect(lab().snapshot()).toEqual(before)
      })
    })

    it('shows no PSK in any output, journal or report', () => {
      expect(lab().psks().length).toBeGreaterThan(0)
      for (const text of lab().everythingPrinted()) for (const psk of lab().psks()) expect(text.includes(psk)).toBe(false)
    })
  })
}
