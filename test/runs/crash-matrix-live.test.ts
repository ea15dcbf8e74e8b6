/**
 * The crash matrix of the live production system's playbook, at the engine
 * (test/support/crash-matrix.ts): every step boundary of the upgrade (playbooks/upgrade-live.ts,
 * the site's steps included) and of its rollback, automatic and asked for, killed through the
 * journal's failpoint in-process, then resumed, and separately rolled back, on the live system in
 * memory (test/support/live-world.ts): four components and the settings and environment files
 * their releases read, on each crossing the lab's end-to-end cases made (the PSK introduced at
 * 2.0.0; three majors at once to 5.2.0; the settings file moved and the TCP endpoint renamed at
 * 6.0.0; 7.0.0).
 *
 * Each case asserts what the end-to-end crash cases assert on the lab: the run's phase, every
 * component on the release and running on files it reads, connected to the controller; after a
 * rollback the files byte for byte as before the run; no lock left; no PSK in the run's journal,
 * record or report.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'vitest'
import { live } from '../../playbooks/upgrade-live.ts'
import { gateItems } from '../../src/live/gates.ts'
import { Journal } from '../../src/runs/journal.ts'
import { resumeRun, startRun } from '../../src/runs/playbook.ts'
import { newSystemRecord } from '../../src/runs/run-actions.ts'
import { withParams } from '../../src/runs/run-record.ts'
import { describeCrashMatrix, type Scenario } from '../support/crash-matrix.ts'
import { LiveWorld } from '../support/live-world.ts'
import type { LiveComponentName } from '../../src/live/layout.ts'

interface LiveScenario extends Scenario {
  /** A component whose start of a release fails (it exits with an ERROR line). */
  failing?: { component: LiveComponentName; version: string }
  /** The instances spread over three hosts, as `lab up --live-hosts 3` places them. */
  hosts?: 3
}

const SCENARIOS: LiveScenario[] = [
  { what: 'upgrade 5.2.0 -> 6.0.0 (settings file moved, TCP endpoint renamed)', from: '5.2.0', to: '6.0.0' },
  { what: 'upgrade 1.0.0 -> 2.0.0 (the PSK introduced)', from: '1.0.0', to: '2.0.0' },
  { what: 'upgrade 2.0.0 -> 5.2.0 (three majors at once)', from: '2.0.0', to: '5.2.0' },
  { what: 'upgrade 6.0.0 -> 7.0.0', from: '6.0.0', to: '7.0.0' },
  {
    what: 'upgrade 6.0.0 -> 7.0.0 across three hosts (the controller on live-1, each other type on live-2 and live-3)',
    from: '6.0.0',
    to: '7.0.0',
    hosts: 3,
  },
  {
    what: 'automatic rollback across three hosts: the ingest fails on 7.0.0 at its canary (live-2)',
    from: '6.0.0',
    to: '7.0.0',
    fails: true,
    failing: { component: 'ingest', version: '7.0.0' },
    hosts: 3,
  },
  {
    what: 'automatic rollback: the pipeline fails on 6.0.0 after the files were written',
    from: '5.2.0',
    to: '6.0.0',
    fails: true,
    failing: { component: 'pipeline', version: '6.0.0' },
  },
  { what: 'rollback asked for after 5.2.0 -> 6.0.0', from: '5.2.0', to: '6.0.0', rollBackAfter: true },
  { what: 'rollback asked for after 1.0.0 -> 2.0.0', from: '1.0.0', to: '2.0.0', rollBackAfter: true },
]

/** Every file of a run folder, as text. */
function filesOf(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesOf(path) : [readFileSync(path, 'utf8')]
  })
}

await describeCrashMatrix<LiveScenario, LiveWorld, undefined>(
  {
    world: (s) =>
      new LiveWorld({
        version: s.from,
        releases: [s.from, s.to],
        ...(s.failing ? { failing: s.failing } : {}),
        ...(s.hosts ? { hosts: s.hosts } : {}),
      }),
    start(world, s) {
      const acks = gateItems(s.from, s.to, world.live).map((g) => g.id)
      const record = newSystemRecord(live, { env: world.env, to: s.to, acks })
      return {
        id: record.id,
        run: () =>
          startRun({
            playbook: live.playbook(record),
            journal: Journal.create(record),
            lock: world.takeLock(record.id),
            open: world.opener(),
            system: live,
          }),
      }
    },
    resume(world, id, rollback) {
      const opened = Journal.open(id)
      const journal = opened.typed(withParams(opened.run, live.params, live.title))
      const setup = { playbook: live.playbook(journal.run), journal, lock: world.takeLock(id, id), open: world.opener(), system: live }
      return resumeRun(setup, rollback ? { rollback: true } : {}).catch((error: unknown) => error)
    },
    afterKill: () => Promise.resolve(undefined),
    expectEnd(world, s, version, _after, id) {
      expect(world.versions()).toEqual(world.allOn(version))
      expect(world.whole(version)).toBe(true)
      if (version === s.from) expect(world.files).toEqual(world.before)
      expect(world.envLock).toBeUndefined()
      const printed = filesOf(Journal.open(id).dir).join('\n')
      for (const psk of world.psks) expect(printed.includes(psk)).toBe(false)
    },
  },
  SCENARIOS,
)
