/**
 * The crash matrix of a system's playbooks, declared once for every system (docs/testing.md, "The
 * crash matrix"): for each scenario, its run is first made without interruption, and the step
 * boundaries read from that journal (so a step added to a playbook is killed at too, with no change
 * to a test); then, for each boundary, a fresh world's run is killed there (test/support/crash-point.ts),
 * and
 *
 *   resumed      `svcops resume ID` must end as the uninterrupted run did (its phase and its end state);
 *   rolled back  `svcops resume ID --rollback` must end on the release before the run, `rolled-back`,
 *                or `failed` when the kill came before anything stopped (nothing to undo);
 *   chained      one run killed at the first boundary, its resume killed at the next boundary it
 *                passes, and so on; the last resume must end as the uninterrupted run.
 *   resumed, then rolled back
 *                of a run that succeeds: resumed to its end, then `svcops rollback --run ID` must
 *                end on the release before the run, `rolled-back` (the run's copies and previous
 *                releases found though two processes made them).
 *
 * A scenario with `rollBackAfter` is an upgrade that succeeded and is then rolled back on request:
 * its boundaries are those of that rollback. One whose run fails by itself (a fault of its world)
 * rolls back automatically: its boundaries include those of the automatic rollback.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Journal } from '../../src/runs/journal.ts'
import { boundariesOf, boundaryName, runKilledAt, type Boundary } from './crash-point.ts'

export interface Scenario {
  what: string
  from: string
  to: string
  /** The finished upgrade is then rolled back on request; the boundaries are that rollback's. */
  rollBackAfter?: boolean
  /** The run fails by itself (a fault of the world) and is rolled back automatically. */
  fails?: boolean
}

/** What the matrix needs of a system: its world, how a run starts and continues, and what its end must be. */
export interface MatrixSystem<S extends Scenario, W extends { freeze(): void; thaw(): void }, X> {
  world(s: S): W
  /** A new run of `s` on `world`: its id, and its start (resolving or rejecting once the run ended). */
  start(world: W, s: S): { id: string; run: () => Promise<unknown> }
  /** `svcops resume ID [--rollback]` on `world`. */
  resume(world: W, id: string, rollback: boolean): Promise<unknown>
  /** What goes on in the world between the kill and the next process (a studio writing): facts for `expectEnd`. */
  afterKill(world: W, s: S, boundary: string): Promise<X>
  /** Asserts `world` is whole on `version` after run `id` (every component, its data, no lock). */
  expectEnd(world: W, s: S, version: string, after: X, id: string): void
}

const phaseOf = (id: string) => Journal.open(id).run.phase

/**
 * Declares the matrix of `system` over `scenarios` (call it at the top level of a test file: the
 * uninterrupted runs are made while the file is collected, so each boundary is a case of its own).
 */
export async function describeCrashMatrix<S extends Scenario, W extends { freeze(): void; thaw(): void }, X>(
  system: MatrixSystem<S, W, X>,
  scenarios: S[],
): Promise<void> {
  // The journal syncs every line it writes; on a disk that costs milliseconds a line, and the matrix
  // writes thousands: its run folders are in memory (tmpfs) where the machine has one.
  const runs = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'svcops-matrix-'))
  const runsBefore = process.env.SVCOPS_RUNS_DIR
  process.env.SVCOPS_RUNS_DIR = runs
  afterAll(() => {
    if (runsBefore === undefined) delete process.env.SVCOPS_RUNS_DIR
    else process.env.SVCOPS_RUNS_DIR = runsBefore
    rmSync(runs, { recursive: true, force: true })
  })

  /** The run of `s` that ran through: where its boundaries are, the phase it ended in. */
  async function reference(s: S): Promise<{ boundaries: Boundary[]; phase: string }> {
    const world = system.world(s)
    const { id, run } = system.start(world, s)
    await run().catch(() => undefined)
    if (!s.rollBackAfter) return { boundaries: boundariesOf(Journal.open(id).entries()), phase: phaseOf(id) }
    const before = Journal.open(id).entries().length
    await system.resume(world, id, true)
    return { boundaries: boundariesOf(Journal.open(id).entries().slice(before)), phase: phaseOf(id) }
  }

  /** A run of `s` killed at `boundary`, and what happened in its world before the next process. */
  async function killedAt(s: S, boundary: Boundary): Promise<{ world: W; id: string; after: X }> {
    const world = system.world(s)
    const { id, run } = system.start(world, s)
    const killed = s.rollBackAfter
      ? await run().then(() => runKilledAt(boundary, world, () => system.resume(world, id, true)))
      : await runKilledAt(boundary, world, run)
    expect(killed.crashed, `the run never passed ${boundaryName(boundary)}; it ended with: ${String(killed.unwound)}`).toBe(true)
    expect(['running', 'rolling-back']).toContain(phaseOf(id))
    return { world, id, after: await system.afterKill(world, s, boundaryName(boundary)) }
  }

  const references: Array<{ s: S; boundaries: Boundary[]; phase: string }> = []
  for (const s of scenarios) references.push({ s, ...(await reference(s)) })

  describe.each(references)('$s.what', ({ s, boundaries, phase }) => {
    const at = (name: string) => boundaries.find((b) => boundaryName(b) === name) as Boundary

    it('the uninterrupted run passes the steps of its playbook and ends as expected', () => {
      expect(boundaries.length).toBeGreaterThan(5)
      expect(phase).toBe(s.fails || s.rollBackAfter ? 'rolled-back' : 'succeeded')
      if (s.fails || s.rollBackAfter) expect(boundaries.some((b) => b.step.startsWith('rollback:'))).toBe(true)
    })

    it.each(boundaries.map(boundaryName))('killed after %s, then resumed: ends as the uninterrupted run', async (name) => {
      const { world, id, after } = await killedAt(s, at(name))
      await system.resume(world, id, false)
      expect(phaseOf(id)).toBe(phase)
      system.expectEnd(world, s, phase === 'succeeded' ? s.to : s.from, after, id)
    })

    it('killed at each boundary in turn, each resume killed at the next it passes: the last resume ends as the uninterrupted run', async () => {
      const [first, ...rest] = boundaries
      const { world, id, after } = await killedAt(s, first as Boundary)
      for (const boundary of rest) {
        // A resume skips what finished before (a step done once): the chain goes on at the next boundary it passes.
        const killed = await runKilledAt(boundary, world, () => system.resume(world, id, s.rollBackAfter === true))
        if (!killed.crashed) break
      }
      if (['running', 'rolling-back'].includes(phaseOf(id))) await system.resume(world, id, s.rollBackAfter === true)
      expect(phaseOf(id)).toBe(phase)
      system.expectEnd(world, s, phase === 'succeeded' ? s.to : s.from, after, id)
    })

    if (phase === 'succeeded' && !s.rollBackAfter)
      it.each(boundaries.map(boundaryName))(
        'killed after %s, resumed, then rolled back on request: ends on the release before the run',
        async (name) => {
          const { world, id, after } = await killedAt(s, at(name))
          await system.resume(world, id, false)
          expect(phaseOf(id)).toBe('succeeded')
          await system.resume(world, id, true)
          expect(phaseOf(id)).toBe('rolled-back')
          system.expectEnd(world, s, s.from, after, id)
        },
      )

    it.each(boundaries.map(boundaryName))('killed after %s, then rolled back: ends on the release before the run', async (name) => {
      const { world, id, after } = await killedAt(s, at(name))
      const disrupted = Journal.open(id).disrupted()
      await system.resume(world, id, true)
      expect(phaseOf(id)).toBe(disrupted ? 'rolled-back' : 'failed')
      system.expectEnd(world, s, s.from, after, id)
    })
  })
}
