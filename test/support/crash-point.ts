/**
 * The crash matrix's failpoint, in-process: the child's failpoint (test/support/crash-failpoint.ts)
 * kills svcops with SIGKILL right after a step's `ok` line is synced; here the same line is written
 * by the same `Journal.append`, and then the process is "killed" without leaving the test's worker:
 *
 *   - the run folder is copied as it is at that moment (run.json, journal.jsonl, the files steps
 *     wrote), and put back once the run's code has unwound: what the unwinding writes (a failed
 *     entry, a phase, a report) is lost, as it is when the process dies;
 *   - the world the run acts on (an in-memory platform) is frozen by `freeze`: every call after the
 *     kill throws and changes nothing, as no call of a dead process ever reaches a host; the
 *     services keep the state the kill left them in;
 *   - a `Crash` is thrown from `append`, so nothing after the boundary runs in the world.
 *
 * A boundary is the n-th `ok` line of a step (on a host), counted from the moment the failpoint is
 * armed: the failpoint of the journal can only name the first (`step@host`); a step a run passes
 * twice without a host (the content list before each batch) has a boundary at each pass here.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { Journal, type JournalEntry } from '../../src/runs/journal.ts'

/** The kill: thrown from the journal's append right after the boundary's line is written. */
export class Crash extends Error {
  constructor(boundary: string) {
    super(`killed (SIGKILL) after ${boundary}`)
  }
}

/** The n-th `ok` line of `step` on `host` (1-based). */
export interface Boundary {
  step: string
  host?: string
  nth: number
}

/** Lines the engine writes about the run itself, not a step of its playbook: never a boundary. */
const NOT_STEPS = new Set(['resume', 'resume-as-rollback', 'interrupted', 'keep-record', 'doctor-findings'])

/** `step@host`, with `#n` when the step passed there more than once before. */
export function boundaryName(b: Boundary): string {
  return `${b.step}${b.host ? `@${b.host}` : ''}${b.nth > 1 ? `#${b.nth}` : ''}`
}

/** Every step boundary among `entries` (a journal's, from where the failpoint would be armed), in order. */
export function boundariesOf(entries: JournalEntry[]): Boundary[] {
  const seen = new Map<string, number>()
  const out: Boundary[] = []
  for (const e of entries) {
    if (e.status !== 'ok' || NOT_STEPS.has(e.step)) continue
    const key = `${e.step}@${e.host ?? ''}`
    const nth = (seen.get(key) ?? 0) + 1
    seen.set(key, nth)
    out.push({ step: e.step, ...(e.host ? { host: e.host } : {}), nth })
  }
  return out
}

/** What the kill left: whether it happened, and how the run's code ended once it had unwound. */
export interface Killed {
  crashed: boolean
  /** The run's own outcome or error, had it not been killed (what the unwinding produced; for messages). */
  unwound: unknown
}

/**
 * Runs `run` (a playbook's start or resume) with the failpoint armed at `boundary`. At the kill,
 * `freeze()` stops the world; once `run` has settled, the run folder is put back as the kill left
 * it and `thaw()` lets a new process act on the world again.
 */
export async function runKilledAt(
  boundary: Boundary,
  world: { freeze(): void; thaw(): void },
  run: () => Promise<unknown>,
): Promise<Killed> {
  // The journal's own append, called by the stand-in before it decides whether this is the kill.
  const append = Object.getOwnPropertyDescriptor(Journal.prototype, 'append')?.value as (
    this: Journal,
    entry: Parameters<Journal['append']>[0],
  ) => JournalEntry
  let count = 0
  let frozen: { dir: string; copy: string } | undefined
  // Replaced on the prototype by hand, not with vitest's spy, which records every call's arguments
  // and result: a matrix appends tens of thousands of lines and reads none of those records.
  Journal.prototype.append = function (this: Journal, entry) {
    // What the unwinding writes after the kill is dropped when the folder is put back.
    const full = append.call(this, entry)
    if (frozen || entry.status !== 'ok' || entry.step !== boundary.step || entry.host !== boundary.host) return full
    if (++count < boundary.nth) return full
    // Beside the runs folder (the matrix keeps it in memory, test/support/crash-matrix.ts), not on disk.
    const copy = mkdtempSync(join(dirname(this.dir), '.killed-'))
    cpSync(this.dir, copy, { recursive: true })
    frozen = { dir: this.dir, copy }
    world.freeze()
    throw new Crash(boundaryName(boundary))
  }
  let unwound: unknown
  try {
    unwound = await run().catch((error: unknown) => error)
  } finally {
    Journal.prototype.append = append
    if (frozen) {
      rmSync(frozen.dir, { recursive: true, force: true })
      cpSync(frozen.copy, frozen.dir, { recursive: true })
      rmSync(frozen.copy, { recursive: true, force: true })
    }
    world.thaw()
  }
  return { crashed: frozen !== undefined, unwound }
}
