/**
 * A run nobody watches still tells people and machines: a real playbook run through the engine
 * (a step that stops, a failure, the automatic rollback) notifies each webhook exactly once per
 * event with no secret in it, an unreachable webhook only warns, and the run's metrics reach the
 * textfile (checked by Prometheus' own `promtool check metrics`) and a real Pushgateway on loopback.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify as toYaml } from 'yaml'
import { BlockedError, RolledBackError } from '../../src/core/errors.ts'
import { collect } from '../../src/core/events.ts'
import { clearSecretsForTests } from '../../src/core/redact.ts'
import { publishRunMetrics } from '../../src/metrics/run-metrics.ts'
import { notifyOfRun } from '../../src/notify/run-hooks.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { writeReport } from '../../src/reports/report.ts'
import { Journal, type JournalEntry } from '../../src/runs/journal.ts'
import { startRun, type Playbook } from '../../src/runs/playbook.ts'
import { observeRuns, tellObservers } from '../../src/runs/run-events.ts'
import { newRunId, type RunRecord } from '../../src/runs/run-record.ts'
import { defineStep } from '../../src/runs/step.ts'

const PUSHGATEWAY = '/usr/bin/prometheus-pushgateway'
const PROMTOOL = '/usr/bin/promtool'
const TOKEN = 'T0KEN-in-the-webhook-url-5b1d'

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createNetServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}

let gateway: ChildProcess
// The observers the CLI registers at its edge (src/commands/run-systems.ts).
const unobserve = [observeRuns(notifyOfRun), observeRuns((event) => publishRunMetrics(event, [recordingDescription]))]
let gatewayUrl: string
let receiver: Server
let receiverUrl: string
const received: Array<{ path: string; body: string }> = []

beforeAll(async () => {
  for (const bin of [PUSHGATEWAY, PROMTOOL])
    if (!existsSync(bin))
      throw new Error(`${bin} is missing; install it with: apt-get install -y --no-install-recommends prometheus prometheus-pushgateway`)
  const port = await freePort()
  gatewayUrl = `http://127.0.0.1:${port}`
  gateway = spawn(PUSHGATEWAY, [`--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' })
  for (let i = 0; ; i++) {
    const ready = await fetch(`${gatewayUrl}/-/ready`).then(
      (r) => r.ok,
      () => false,
    )
    if (ready) break
    if (i > 100) throw new Error('The Pushgateway did not become ready.')
    await new Promise((r) => setTimeout(r, 100))
  }
  receiver = createServer((req, res) => {
    let body = ''
    req.on('data', (d: Buffer) => (body += d.toString()))
    req.on('end', () => {
      received.push({ path: req.url ?? '', body })
      res.end('ok')
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`
}, 60_000)

afterAll(async () => {
  for (const stop of unobserve) stop()
  gateway?.kill('SIGTERM')
  await new Promise((resolve) => receiver?.close(resolve))
  clearSecretsForTests()
})

/** A playbook whose procedure stops a host, then fails; its rollback puts it back. */
const stop = defineStep<object, [{ name: string }]>({
  id: 'stop',
  title: 'stop',
  disruptive: true,
  describe: () => [],
  act: () => Promise.resolve({ changed: ['stopped'] }),
})
const start = defineStep<object, [{ name: string }]>({
  id: 'start',
  title: 'start',
  describe: () => [],
  // The failure quotes the webhook's URL: the redaction layer knows it from the moment it was read.
  act: () => Promise.reject(new Error(`the service did not start (told ${process.env.SVCOPS_TEST_HOOK_URL ?? ''})`)),
})
const verify = defineStep<object, [{ name: string }]>({
  id: 'verify-host',
  title: 'verify',
  report: 'verified',
  describe: () => [],
  act: () => Promise.resolve({}),
})
const failing: Playbook<object> = {
  kind: 'upgrade',
  what: (r) => `Upgrade to ${r.targetVersion}`,
  rollbackCommand: () => 'svcops rollback recording',
  procedure: async (run) => {
    await run.onHost({ name: 'rec-1' }, stop)
    await run.onHost({ name: 'rec-1' }, start)
  },
  rollback: async (run) => {
    await run.onHost({ name: 'rec-1' }, stop)
    await run.onHost({ name: 'rec-1' }, verify)
    return 'rolled back to 1.5.0; database kept'
  },
}

/** A recording upgrade 1.5.0 -> 2.0.0 of rec-1 in `environment`, started by a scheduler. */
function upgradeRecord(environment: string, envFile: string): RunRecord {
  return {
    id: newRunId(),
    kind: 'upgrade',
    system: 'recording',
    environment,
    envFile,
    targetVersion: '2.0.0',
    params: { previousVersions: { 'rec-1': '1.5.0' }, hosts: ['rec-1'], batchSize: 1, maxFail: '0' },
    autoRollback: true,
    phase: 'running',
    startedAt: new Date().toISOString(),
    holder: 'svcops@cron',
    pid: process.pid,
  }
}

describe('notifications and metrics of a run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-watch-'))
  const runsDir = join(dir, 'runs')
  const textfileDir = join(dir, 'textfile')

  it('tells each webhook once per event (start, rollback) with no secret in it; an unreachable webhook only warns', async () => {
    process.env.SVCOPS_TEST_HOOK_URL = `${receiverUrl}/hooks/${TOKEN}`
    process.env.SVCOPS_TEST_SLACK_URL = `${receiverUrl}/slack/${TOKEN}`
    process.env.SVCOPS_TEST_DEAD_URL = `http://127.0.0.1:${await freePort()}/gone/${TOKEN}`
    const envFile = join(dir, 'Pulumi.prod.yaml')
    const notify = {
      webhooks: [
        { url: { env: 'SVCOPS_TEST_HOOK_URL' } },
        { url: { env: 'SVCOPS_TEST_SLACK_URL' }, format: 'slack' },
        { url: { env: 'SVCOPS_TEST_DEAD_URL' } },
      ],
      metrics: { textfileDir, pushgateway: gatewayUrl },
    }
    writeFileSync(envFile, toYaml({ config: { 'svcops:notify': notify } }))
    const record = upgradeRecord('prod', envFile)
    const journal = Journal.create(record, runsDir)
    const log = collect()
    const error = await startRun({
      playbook: failing,
      journal,
      lock: { release: () => Promise.resolve() },
      open: () => Promise.resolve({ ctx: {}, close: () => Promise.resolve() }),
      system: recordingDescription,
    }).catch((e: unknown) => e)
    log.stop()
    expect(error).toBeInstanceOf(RolledBackError)
    expect(journal.run.phase).toBe('rolled-back')

    const bodies = (prefix: string) =>
      received.filter((r) => r.path.startsWith(prefix)).map((r) => JSON.parse(r.body) as Record<string, unknown>)
    const json = bodies('/hooks/')
    expect(json.map((b) => b.event)).toEqual(['start', 'rollback'])
    expect(json[1]).toMatchObject({
      runId: record.id,
      environment: 'prod',
      phase: 'rolled-back',
      report: journal.file('report.html'),
      downtime: [{ host: 'rec-1', seconds: expect.any(Number) as number }],
    })
    expect(json[1]?.summary).toMatch(
      /^Upgrade of prod to 2\.0\.0 failed in the canary on rec-1 at start and was rolled back; longest downtime/,
    )
    const slack = bodies('/slack/')
    expect(slack).toHaveLength(2)
    expect(slack[1]?.text).toMatch(/svcops upgrade .* \(prod\): Upgrade of prod to 2\.0\.0 failed .* Report: \//)
    for (const r of received) expect(r.body).not.toContain(TOKEN)

    const warnings = log.events.filter((e) => e.kind === 'warn').map((e) => (e as { message: string }).message)
    expect(warnings).toHaveLength(2)
    for (const w of warnings) expect(w).toMatch(/^Could not notify the webhook at 127\.0\.0\.1:\d+ of (start|rollback)/)
    for (const file of ['report.html', 'report.md', 'report.json', 'journal.jsonl', 'run.json'])
      expect(readFileSync(journal.file(file), 'utf8')).not.toContain(TOKEN)
    expect(JSON.stringify(log.events)).not.toContain(TOKEN)
  })

  it('tells a webhook that heard "started" of a run refused before anything changed, and keeps no run', async () => {
    process.env.SVCOPS_TEST_HOOK_URL = `${receiverUrl}/refused/${TOKEN}`
    const envFile = join(dir, 'Pulumi.refused.yaml')
    writeFileSync(envFile, toYaml({ config: { 'svcops:notify': { webhooks: [{ url: { env: 'SVCOPS_TEST_HOOK_URL' } }] } } }))
    const refusing: Playbook<object> = {
      ...failing,
      // A check before the first stop finds what a person must fix (exit 5): nothing changed.
      procedure: () => Promise.reject(new BlockedError('The previous release 1.5.0 cannot be installed again: its package is gone.')),
    }
    const record = upgradeRecord('refused', envFile)
    const journal = Journal.create(record, runsDir)
    const error = await startRun({
      playbook: refusing,
      journal,
      lock: { release: () => Promise.resolve() },
      open: () => Promise.resolve({ ctx: {}, close: () => Promise.resolve() }),
      system: recordingDescription,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BlockedError)
    const bodies = received.filter((r) => r.path.startsWith('/refused/')).map((r) => JSON.parse(r.body) as Record<string, unknown>)
    expect(bodies.map((b) => [b.event, b.phase])).toEqual([
      ['start', 'running'],
      ['failure', 'refused'],
    ])
    expect(bodies[1]?.summary).toBe(
      'Refused upgrade to 2.0.0 of refused before anything changed: The previous release 1.5.0 cannot be installed again: its package is gone.',
    )
    expect(bodies[1]?.report).toBe('none (the run was refused before it began)')
    expect(existsSync(journal.dir)).toBe(false)
  })

  it('writes metrics promtool accepts, with the last backup and restore test; the Pushgateway serves them', async () => {
    // A nightly backup run of the same environment, as its journal reads.
    const backup: RunRecord = {
      ...Journal.open(readdirSync(runsDir)[0] as string, runsDir).run,
      id: '20261123T021500Z-0b0b0b',
      kind: 'backup',
      targetVersion: '',
      params: { hosts: [], previousVersions: {}, batchSize: 1, maxFail: '0' },
      phase: 'succeeded',
      startedAt: '2026-11-23T02:15:00.000Z',
      finishedAt: '2026-11-23T02:16:40.000Z',
    }
    const j = Journal.create(backup, runsDir)
    const entries: JournalEntry[] = [
      { time: '2026-11-23T02:16:00.000Z', step: 'create', status: 'ok', data: { backupId: 'b-1', bytes: 73_400_320 } },
      { time: '2026-11-23T02:16:30.000Z', step: 'verify', status: 'ok', data: { backupId: 'b-1', restoreTest: true } },
    ]
    writeFileSync(j.file('journal.jsonl'), entries.map((e) => JSON.stringify(e)).join('\n') + '\n')
    // The next run of the environment publishes the whole environment: tell the observers as the engine does.
    const upgrade = Journal.open(readdirSync(runsDir).find((d) => d !== backup.id) as string, runsDir)
    received.length = 0
    await tellObservers({ kind: 'run-ended', journal: upgrade, report: writeReport(upgrade, recordingDescription) })
    expect(received).toHaveLength(2) // the same rollback told again: one message per webhook per call

    const file = join(textfileDir, 'svcops_prod.prom')
    const text = readFileSync(file, 'utf8')
    const check = await new Promise<{ code: number; out: string }>((resolve) => {
      const child = execFile(PROMTOOL, ['check', 'metrics'], (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      )
      child.stdin?.end(text)
    })
    expect(check).toEqual({ code: 0, out: '' })
    expect(text).toContain('svcops_run_last_outcome{environment="prod",kind="upgrade",outcome="rolled-back"} 1')
    expect(text).toContain('svcops_run_last_outcome{environment="prod",kind="upgrade",outcome="succeeded"} 0')
    expect(text).toMatch(/svcops_host_last_downtime_seconds\{environment="prod",kind="upgrade",host="rec-1"\} \d/)
    expect(text).toContain(
      `svcops_backup_last_success_timestamp_seconds{environment="prod"} ${Date.parse('2026-11-23T02:16:00.000Z') / 1000}`,
    )
    expect(text).toContain('svcops_backup_last_success_size_bytes{environment="prod"} 73400320')
    expect(text).toContain(
      `svcops_restore_test_last_success_timestamp_seconds{environment="prod"} ${Date.parse('2026-11-23T02:16:30.000Z') / 1000}`,
    )
    expect(text).toContain(
      `svcops_run_last_success_timestamp_seconds{environment="prod",kind="backup"} ${Date.parse('2026-11-23T02:16:40.000Z') / 1000}`,
    )

    const served = await (await fetch(`${gatewayUrl}/metrics`)).text()
    expect(served).toMatch(/svcops_run_last_outcome\{environment="prod",instance="",job="svcops",kind="upgrade",outcome="rolled-back"\} 1/)
    expect(served).toMatch(/svcops_backup_last_success_size_bytes\{environment="prod",instance="",job="svcops"\} 7\.340032e\+07/)
  })
})
