/**
 * Crash-resume of `svcops upgrade live` at every step boundary, shared by resume-early.test.ts and
 * resume-late.test.ts (two files, each with a lab of its own, so they run in parallel). The CLI
 * dies by SIGKILL right after its journal records a step boundary finished (`lab.svcopsKilledAt`,
 * through the journal's failpoint `SVCOPS_CRASH_AFTER`; a resume with `lab.svcopsKilledInRun`, at
 * a boundary that resume itself finishes). Each file climbs the lab's releases one crossing at a time; on each crossing,
 * for the boundaries it names, in the playbook's order:
 *
 *   rollback  one case per boundary: an upgrade killed at it, then `svcops rollback live`, must end
 *             with every component on the old release, `verify live` exit 0, no lock and the
 *             settings and environment files byte for byte as before. The lab is back on `from`.
 *   resume    one chain for all of them: the upgrade killed at the first boundary, `svcops resume
 *             ID` killed at the second, the next resume killed at the third, and so on; the last
 *             resume must end with the run succeeded, every component on the new release, `verify
 *             live` exit 0 and no lock. Every boundary is thus followed by a resume (the next link),
 *             and the run that finishes has been killed at each of them. The lab is then on `to`,
 *             the next crossing's `from`; on a file's last crossing marked `back`, the finished
 *             run is rolled back and must end as the rollback cases do.
 *
 * The boundaries, in the playbook's order (playbooks/upgrade-live.ts): preflight, gates (the
 * check-gates step), stage@<component>, check-config, backup, rollback-ready, stop@<component> (control panel
 * first), write-config, then per component (controller first) install, start, check, and verify.
 * The bound: a step run once per component (stage, stop, install, start, check) is killed at its
 * first and its last component in that step's order, not at the two between; every distinct step
 * id is covered at least at its first and its last instance. A resume skips the steps done once
 * (preflight, gates, backup) and the components already checked, and runs the others again: each
 * chain's next boundary is one the resume runs (the test fails if the resume is not killed).
 */
import { describe, expect, it } from 'vitest'
import { listRuns } from '../../src/runs/journal.ts'
import { LIVE_LOCK_PATH } from '../../src/live/hosts/live-hosts-platform.ts'
import { gateIds, type LiveLab } from '../support/live-lab.ts'

/** One upgrade the lab makes, and the boundaries killed on it (in the playbook's order). */
export interface Crossing {
  from: string
  to: string
  boundaries: Boundary[]
  /** The chain's finished run is then rolled back with `svcops rollback live --run ID` (a file's last crossing: the lab ends on `from`). */
  back?: boolean
}

/** Every boundary of a live upgrade, in the order a run passes them (per-component steps at their first and last component). */
export const BOUNDARIES = [
  'preflight',
  'gates',
  'stage@system-controller',
  'stage@control-panel',
  'check-config',
  'backup',
  'rollback-ready',
  'stop@control-panel',
  'stop@system-controller',
  'write-config',
  'install@system-controller',
  'start@system-controller',
  'check@system-controller',
  'install@control-panel',
  'start@control-panel',
  'check@control-panel',
  'verify',
] as const

export type Boundary = (typeof BOUNDARIES)[number]

/**
 * Up to write-config (resume-early.test.ts), ten boundaries on three crossings: the control
 * panel's stop with 1.0.0 -> 2.0.0 (the PSK introduced: settings file and every environment
 * written); the controller's stop with 2.0.0 -> 5.2.0 (the /api/v2 prefix and three majors at
 * once); everything before the first stop and write-config with 5.2.0 -> 6.0.0 (settings file
 * moved, TCP endpoint renamed), the crossing that changes the most files. That chain's run, whose
 * backup a resume took, is then rolled back: a resumed run can still be undone, files byte for byte.
 */
export const EARLY_CROSSINGS: Crossing[] = [
  { from: '1.0.0', to: '2.0.0', boundaries: ['stop@control-panel'] },
  { from: '2.0.0', to: '5.2.0', boundaries: ['stop@system-controller'] },
  {
    from: '5.2.0',
    to: '6.0.0',
    boundaries: [
      'preflight',
      'gates',
      'stage@system-controller',
      'stage@control-panel',
      'check-config',
      'backup',
      'rollback-ready',
      'write-config',
    ],
    back: true,
  },
]

/**
 * From the first install to verify (resume-late.test.ts), seven boundaries on four crossings: the
 * controller's check and the control panel's install with 1.0.0 -> 2.0.0 (the first release with
 * a PSK); the starts and the control panel's check with 2.0.0 -> 5.2.0; the controller's install
 * with 5.2.0 -> 6.0.0, where each resume writes the configuration again over files it already
 * moved and renamed; verify with 6.0.0 -> 7.0.0 (/api/v3).
 */
export const LATE_CROSSINGS: Crossing[] = [
  { from: '1.0.0', to: '2.0.0', boundaries: ['check@system-controller', 'install@control-panel'] },
  { from: '2.0.0', to: '5.2.0', boundaries: ['start@system-controller', 'start@control-panel', 'check@control-panel'] },
  { from: '5.2.0', to: '6.0.0', boundaries: ['install@system-controller'] },
  { from: '6.0.0', to: '7.0.0', boundaries: ['verify'] },
]

/** Declares, per crossing, the kill-then-rollback cases and the kill-then-resume chain, in order, on the lab `lab()` returns. */
export function describeLiveCrashResume(lab: () => LiveLab, crossings: Crossing[]): void {
  const phaseOf = (id: string) => listRuns(lab().runsDir).find((r) => r.id === id)?.phase

  async function killedUpgrade(boundary: Boundary, from: string, to: string): Promise<string> {
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
    it('the two files together kill at every boundary, each crossing in the order a run passes them', () => {
      const all = [...EARLY_CROSSINGS, ...LATE_CROSSINGS].flatMap((c) => c.boundaries)
      expect([...all].sort()).toEqual([...BOUNDARIES].sort())
      for (const list of [EARLY_CROSSINGS, LATE_CROSSINGS]) expect(list.slice(0, -1).some((c) => c.back)).toBe(false)
      for (const c of [...EARLY_CROSSINGS, ...LATE_CROSSINGS]) {
        const order = c.boundaries.map((b) => BOUNDARIES.indexOf(b))
        expect(order).toEqual([...order].sort((a, b) => a - b))
      }
    })

    describe.each(crossings)('$from -> $to', ({ from, to, boundaries, back }) => {
      it.each(boundaries)('killed after %s: svcops rollback live ends on the old release with the old files', async (boundary) => {
        const before = lab().snapshot()
        await killedUpgrade(boundary, from, to)
        const rolled = await lab().svcops(['rollback', 'live', '--yes'])
        expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0)
        await expectWhole(from)
        expect(lab().snapshot()).toEqual(before)
      })

      const rolledBack = back ? ', and svcops rollback live --run ID of it on the old release with the old files' : ''
      it(`killed after ${boundaries.join(', then its resume after ')}: the last svcops resume ID ends on the new release${rolledBack}`, async () => {
        const before = lab().snapshot()
        const [first, ...rest] = boundaries
        const id = await killedUpgrade(first as Boundary, from, to)
        for (const boundary of rest) {
          const killed = await lab().svcopsKilledInRun(['resume', id], id, boundary)
          expect(killed.signal, `resume not killed after ${boundary}:\n${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL')
          expect(phaseOf(id)).toBe('running')
        }
        const resumed = await lab().svcops(['resume', id])
        expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
        expect(phaseOf(id)).toBe('succeeded')
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
