/**
 * The crash matrix of the recording service's playbooks, at the engine (test/support/crash-matrix.ts):
 * every step boundary of the upgrade (playbooks/upgrade.ts) and of its rollback (playbooks/rollback-procedure.ts),
 * automatic and asked for, killed through the journal's failpoint in-process, then resumed, and
 * separately rolled back, on the recording service in memory (test/support/recording-world.ts): two
 * hosts (the canary, then a batch), four recordings, a database whose schema the 2.x releases migrate.
 *
 * After each kill a studio writes one more recording through a host that still answers (users go on
 * while a run is stuck). Each case asserts what the end-to-end crash cases assert on the lab: the
 * run's phase, the release on every host, every service running and answering, the database's
 * schema fingerprint, every recording kept (those written after the backup too), no lock left on
 * the environment or a host; and that no host stopped before the verified backup existed.
 */
import { expect } from 'vitest'
import { recording } from '../../playbooks/upgrade.ts'
import { contentKey, isTestRecording } from '../../src/recording/content-snapshot.ts'
import { newUpgradeRecord } from '../../src/recording/recording-system.ts'
import { Journal } from '../../src/runs/journal.ts'
import { resumeRun, startRun } from '../../src/runs/playbook.ts'
import { withParams } from '../../src/runs/run-record.ts'
import { describeCrashMatrix, type Scenario } from '../support/crash-matrix.ts'
import { RecordingWorld, fingerprintOf, schemaOf } from '../support/recording-world.ts'

interface RecordingScenario extends Scenario {
  /** A host whose start of a release fails (its service exits). */
  failing?: { host: string; version: string }
}

const HOSTS = ['rec-1', 'rec-2']

const SCENARIOS: RecordingScenario[] = [
  { what: 'upgrade across a schema change (1.5.0 -> 2.0.0)', from: '1.5.0', to: '2.0.0' },
  { what: 'upgrade on the same schema (1.5.0 -> 1.6.0)', from: '1.5.0', to: '1.6.0' },
  {
    what: 'automatic rollback: the second host fails after the canary migrated (1.5.0 -> 2.0.0)',
    from: '1.5.0',
    to: '2.0.0',
    fails: true,
    failing: { host: 'rec-2', version: '2.0.0' },
  },
  {
    what: 'automatic rollback: the canary fails on the same schema (1.5.0 -> 1.6.0)',
    from: '1.5.0',
    to: '1.6.0',
    fails: true,
    failing: { host: 'rec-1', version: '1.6.0' },
  },
  { what: 'rollback asked for after an upgrade across a schema change', from: '1.5.0', to: '2.0.0', rollBackAfter: true },
  { what: 'rollback asked for after an upgrade on the same schema', from: '1.5.0', to: '1.6.0', rollBackAfter: true },
]

const urlOf = (host: string) => `http://${host}.invalid:8080`

await describeCrashMatrix<RecordingScenario, RecordingWorld, { kept: string[] }>(
  {
    world: (s) =>
      new RecordingWorld({
        hosts: HOSTS,
        version: s.from,
        recordings: 4,
        releases: [s.from, s.to],
        ...(s.failing ? { failing: s.failing } : {}),
      }),
    start(world, s) {
      const record = newUpgradeRecord({ env: world.env, to: s.to, batch: 1 })
      return {
        id: record.id,
        run: () =>
          startRun({
            playbook: recording.playbook(record),
            journal: Journal.create(record),
            lock: world.takeLock(record.id),
            open: world.opener(),
            system: recording,
          }),
      }
    },
    resume(world, id, rollback) {
      const opened = Journal.open(id)
      const journal = opened.typed(withParams(opened.run, recording.params, recording.title))
      const setup = {
        playbook: recording.playbook(journal.run),
        journal,
        lock: world.takeLock(id, id),
        open: world.opener(),
        system: recording,
      }
      return resumeRun(setup, rollback ? { rollback: true } : {}).catch((error: unknown) => error)
    },
    async afterKill(world, _s, boundary) {
      const kept = world.db.rows.map(contentKey)
      const answering = HOSTS.find((h) => world.healthy(h))
      if (answering) {
        const input = { channelName: 'studio-2', title: `written after the kill at ${boundary}`, startTime: 1, stopTime: 2 }
        await world.deps().content.create(urlOf(answering), input)
        kept.push(contentKey(input))
      }
      return { kept: kept.filter((k) => !k.includes('svcops-verify')) }
    },
    expectEnd(world, _s, version, { kept }) {
      expect(world.versions()).toEqual(Object.fromEntries(HOSTS.map((h) => [h, version])))
      expect(HOSTS.filter((h) => !world.healthy(h))).toEqual([])
      expect(fingerprintOf(world.db.schema)).toBe(fingerprintOf(schemaOf(version)))
      const present = new Set(world.db.rows.filter((r) => !isTestRecording(r)).map(contentKey))
      expect(kept.filter((k) => !present.has(k))).toEqual([])
      expect(world.envLock).toBeUndefined()
      expect(world.targetLocks()).toEqual([])
      const firstStop = world.did.findIndex((d) => d.startsWith('stop '))
      if (firstStop >= 0) expect(world.did.findIndex((d) => d.startsWith('backup '))).toBeLessThan(firstStop)
    },
  },
  SCENARIOS,
)
