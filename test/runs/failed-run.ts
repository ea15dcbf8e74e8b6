/**
 * A realistic run written as its journal would be, with real timestamps: five hosts, the canary and
 * batch 1 upgraded, batch 2 fails on rec-5 (the service does not come up), and the automatic
 * rollback puts every touched host back and restores the database, re-creating one recording.
 * The renderer's tests read this the way `svcops runs show` reads a real run folder.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { recordingDescription } from '../../src/recording/recording-description.ts'

export { recordingDescription }
import { Journal, type JournalEntry } from '../../src/runs/journal.ts'
import type { RunRecord } from '../../src/runs/run-record.ts'

export const T0 = Date.parse('2026-11-24T02:30:00.000Z')
export const HOSTS = ['rec-1', 'rec-2', 'rec-3', 'rec-4', 'rec-5']

/**
 * Writes the run into a new runs folder (or `base`) and returns its journal; its report is built
 * with `recordingDescription` (re-exported here), as the CLI gives it from the registry.
 */
export function writeFailedRun(options: { base?: string; secret?: string; diagnosis?: boolean } = {}): Journal {
  const base = options.base ?? mkdtempSync(join(tmpdir(), 'svcops-runs-'))
  let t = T0
  const entries: JournalEntry[] = []
  const at = (seconds: number) => new Date((t += seconds * 1000)).toISOString()
  const step = (name: string, seconds: number, host?: string, end: Partial<JournalEntry> = {}, start: Partial<JournalEntry> = {}) => {
    entries.push({ time: at(0), step: name, status: 'start', ...(host ? { host } : {}), ...start })
    entries.push({ time: at(seconds), step: name, status: 'ok', durationMs: seconds * 1000, ...(host ? { host } : {}), ...end })
  }
  const upgradeHost = (host: string, failAt?: string) => {
    step('stop', 2, host, {}, { disruptive: true })
    step('install', 6, host, { data: { to: '2.0.0' } })
    step('review-config', 1, host, {
      report: 'config-review',
      data: { review: { configPath: '/etc/opt/svc/recording.json', newDefaults: [], obsoleteOptions: [], newOptions: ['retention'] } },
    })
    if (failAt === 'start') {
      entries.push({ time: at(0), step: 'start', host, status: 'start' })
      entries.push({
        time: at(9),
        step: 'start',
        host,
        status: 'failed',
        detail: `svc-recording on ${host} exited: invalid logLevel 'loud'`,
      })
      return
    }
    step('start', 4, host)
    step('wait-healthy', 5, host)
    step('check-logs', 1, host)
    step('verify-host', 3, host, { report: 'verified' })
  }
  step('preflight', 3)
  step('snapshot-content', 2)
  step('backup', 20, undefined, {
    changed: ['created and verified backup 20261124T023005Z-b4c2'],
    data: { backupId: '20261124T023005Z-b4c2' },
  })
  upgradeHost('rec-1')
  t += 2000
  upgradeHost('rec-2')
  t -= 22_000 // batch 1 ran concurrently: rec-3 started with rec-2
  upgradeHost('rec-3')
  t += 3000
  const batch2 = t
  upgradeHost('rec-4')
  t = batch2 + 500
  upgradeHost('rec-5', 'start')
  if (options.diagnosis)
    step('diagnose', 2, 'rec-5', {
      report: 'diagnosis',
      data: {
        failure: "svc-recording on rec-5 exited: invalid logLevel 'loud'",
        status: 'FATAL',
        logs: [
          '2026-11-24T02:31:20Z level=info msg="recording service 2.0.0 starting"',
          '2026-11-24T02:31:20Z level=error msg="invalid logLevel \'loud\'; expected debug, info, warn or error"',
        ],
        findings: [],
        checks: [
          { cause: 'config-syntax', host: 'rec-5', status: 'ok', check: 'the config parses', detail: 'parsed' },
          { cause: 'storage-unwritable', host: 'rec-5', status: 'ok', check: 'storage writable', detail: 'writable' },
          { cause: 'password-unreadable', host: 'rec-5', status: 'skipped', check: 'password file', detail: 'no password file' },
        ],
      },
    })
  t = batch2 + 24_000
  step('rollback:decide', 1, undefined, {
    report: 'restore-decision',
    data: { restore: true, reason: 'the canary migrated the schema', hosts: HOSTS },
  })
  step('rollback:export', 2, undefined, { data: { exported: 1 } })
  const rollbackStart = t
  for (const [i, host] of HOSTS.entries()) {
    t = rollbackStart + i * 300
    step('rollback:stop', 2, host, {}, { disruptive: true })
  }
  step('rollback:restore', 15, undefined, { changed: ['restored backup 20261124T023005Z-b4c2'] })
  const reinstall = t
  for (const [i, host] of HOSTS.entries()) {
    t = reinstall + i * 200
    step('rollback:install', 5, host, { data: { to: '1.5.0' } })
    step('rollback:start', 3, host)
    step('rollback:wait-healthy', 4, host)
    step('rollback:verify-host', 2, host, { report: 'verified' })
  }
  step('rollback:recreate', 2, 'rec-1', {
    report: 'recreated',
    data: {
      recreated: [
        { channelName: 'studio-a', title: `late news${options.secret ? ` ${options.secret}` : ''}`, startTime: '02:31', stopTime: '02:32' },
      ],
    },
  })
  const run: RunRecord = {
    id: '20261124T023000Z-a1b2c3',
    kind: 'upgrade',
    environment: 'prod',
    envFile: '/etc/svcops/stacks/Pulumi.prod.yaml',
    system: 'recording',
    targetVersion: '2.0.0',
    autoRollback: true,
    phase: 'rolled-back',
    startedAt: new Date(T0).toISOString(),
    finishedAt: at(1),
    holder: 'svcops@cron',
    pid: 4242,
    cause: "svc-recording on rec-5 exited: invalid logLevel 'loud'",
    params: {
      previousVersions: Object.fromEntries(HOSTS.map((h) => [h, '1.5.0'])),
      hosts: HOSTS,
      batchSize: 2,
      maxFail: '0',
      backupId: '20261124T023005Z-b4c2',
      deadline: new Date(T0 + 4 * 60_000).toISOString(),
    },
  }
  const journal = Journal.create(run, base)
  entries.sort((a, b) => a.time.localeCompare(b.time))
  writeFileSync(journal.file('journal.jsonl'), entries.map((e) => JSON.stringify(e)).join('\n') + '\n')
  return journal
}
