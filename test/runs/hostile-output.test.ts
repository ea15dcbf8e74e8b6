/**
 * What a service logs carries user data: a recording's channel name with terminal escapes — an
 * OSC 52 clipboard write, ESC[2K with a fake green "✓ all good", a right-to-left override, a C1
 * CSI, a line break and `<!channel>`. A real playbook run through the engine fails on a host
 * whose log line quotes that name, and its rollback re-creates the recording; every place the text
 * reaches — the terminal (live progress and plain lines), report.md, report.html, report.json,
 * `svcops runs show` (text, --markdown, --json), the webhooks (JSON and Slack) and the metrics
 * textfile (checked by promtool) — shows the escapes as visible text and acts on none of them.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { stringify as toYaml } from 'yaml'
import { RolledBackError } from '../../src/core/errors.ts'
import { consoleSink, events } from '../../src/core/events.ts'
import { useRunSystems } from '../../src/commands/run-systems.ts'
import { Journal } from '../../src/runs/journal.ts'
import { newRunId, type RunRecord } from '../../src/runs/run-record.ts'
import { startRun, type Playbook } from '../../src/runs/playbook.ts'
import { progressSink } from '../../src/reports/progress.ts'
import { defineStep } from '../../src/runs/step.ts'
import { runSvcops, runSvcopsInProcess } from '../support/cli.ts'

const PROMTOOL = '/usr/bin/promtool'

// The channel name a user typed, as the service's log line quotes it.
const CHANNEL =
  'News\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2K\r\x1b[32m✓ all good\x1b[0m \u202eevil\u202c \u009b31m<!channel> <@U024BE7LH>\nINFO faked'
const LOG_LINE = `2026-11-24T02:31:20Z ERROR could not index recording 7 on channel ${CHANNEL}`
// A host name from a stack file is data too: it reaches labels, lanes and sentences.
const HOST = 'rec-1\u202e'

/** Every control character but newline and tab (those a multi-line output may hold itself). */
const RAW_CONTROL = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u

function expectNoRawControl(text: string, where: string): void {
  const at = RAW_CONTROL.exec(text)
  expect(
    at
      ? `${where}: raw U+${(at[0].codePointAt(0) ?? 0).toString(16)} at ${at.index}: ${JSON.stringify(text.slice(Math.max(0, at.index - 40), at.index + 40))}`
      : '',
  ).toBe('')
}

const stop = defineStep<object, [{ name: string }]>({
  id: 'stop',
  title: 'stop',
  disruptive: true,
  describe: () => [],
  act: () => Promise.resolve({ changed: ['stopped svc-recording'] }),
})
const checkLogs = defineStep<object, [{ name: string }]>({
  id: 'check-logs',
  title: 'check status and the last log lines',
  describe: () => [],
  act: (_ctx, h) =>
    Promise.reject(new Error(`The log of svc-recording on ${h.name} has 1 error line(s) since the start, first: ${LOG_LINE}`)),
})
const decide = defineStep<object>({
  id: 'decide-restore',
  title: 'decide',
  report: 'restore-decision',
  describe: () => [],
  act: () => Promise.resolve({ data: { restore: true, reason: `the log said: ${LOG_LINE}`, hosts: [HOST] } }),
})
const recreate = defineStep<object>({
  id: 'recreate',
  title: 'recreate',
  report: 'recreated',
  describe: () => [],
  act: () => Promise.resolve({ data: { recreated: [{ channelName: CHANNEL, title: 'Evening news', startTime: 1, stopTime: 2 }] } }),
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
    await run.onHost({ name: HOST }, stop)
    await run.onHost({ name: HOST }, checkLogs)
  },
  rollback: async (run) => {
    await run.step(decide)
    await run.step(recreate)
    await run.onHost({ name: HOST }, verify)
    return 'rolled back to 1.5.0; database restored'
  },
}

let receiver: Server
let receiverUrl: string
const received: Array<{ path: string; body: string }> = []

beforeAll(async () => {
  if (!existsSync(PROMTOOL))
    throw new Error(`${PROMTOOL} is missing; install it with: apt-get install -y --no-install-recommends prometheus`)
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
})
afterAll(async () => {
  await new Promise((resolve) => receiver?.close(resolve))
})

// The wiring and the variables stay with this file: the worker goes on to other files' runs.
let unwire: () => void = () => undefined
afterAll(() => {
  unwire()
  delete process.env.SVCOPS_TEST_HOSTILE_JSON
  delete process.env.SVCOPS_TEST_HOSTILE_SLACK
})

describe('text read from outside reaches no output raw', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-hostile-'))
  const runsDir = join(dir, 'runs')
  const textfileDir = join(dir, 'textfile')
  let journal: Journal
  const screen: string[] = []
  const plain: string[] = []

  beforeAll(async () => {
    process.env.SVCOPS_TEST_HOSTILE_JSON = `${receiverUrl}/json`
    process.env.SVCOPS_TEST_HOSTILE_SLACK = `${receiverUrl}/slack`
    const envFile = join(dir, 'Pulumi.prod.yaml')
    const notify = {
      webhooks: [{ url: { env: 'SVCOPS_TEST_HOSTILE_JSON' } }, { url: { env: 'SVCOPS_TEST_HOSTILE_SLACK' }, format: 'slack' }],
      metrics: { textfileDir },
    }
    writeFileSync(envFile, toYaml({ config: { 'svcops:notify': notify } }))
    // The observers (webhooks, metrics), as the CLI wires them; the run is given its system, as the engine is.
    unwire = await useRunSystems()
    const record: RunRecord = {
      id: newRunId(),
      kind: 'upgrade',
      system: 'recording',
      environment: 'prod',
      envFile,
      targetVersion: '2.0.0',
      params: { previousVersions: { [HOST]: '1.5.0' }, hosts: [HOST], batchSize: 1, maxFail: '0' },
      autoRollback: true,
      phase: 'running',
      startedAt: new Date().toISOString(),
      holder: 'svcops@cron',
      pid: process.pid,
    }
    journal = Journal.create(record, runsDir)
    const stream = (into: string[], isTTY: boolean) =>
      Object.assign(new Writable({ write: (c: Buffer, _e, cb) => (into.push(c.toString()), cb()) }), {
        isTTY,
      }) as unknown as NodeJS.WriteStream
    const unsubscribe = [
      events.subscribe(progressSink(stream(screen, true))),
      events.subscribe(consoleSink({ stream: stream(plain, false), verbose: true })),
    ]
    const error = await startRun({
      playbook: failing,
      journal,
      lock: { release: () => Promise.resolve() },
      system: recordingDescription,
      open: () => Promise.resolve({ ctx: {}, close: () => Promise.resolve() }),
    }).catch((e: unknown) => e)
    for (const u of unsubscribe) u()
    expect(error).toBeInstanceOf(RolledBackError)
  })

  it('the terminal: the live progress and plain lines show the escapes as text', () => {
    // The progress display's own sequences (cursor up, clear, green, red, reset) are the only ones.
    const own = new RegExp(String.raw`\x1b\[(\d+F|0J|3[12]m|0m)`, 'g')
    const live = screen.join('')
    expectNoRawControl(live.replace(own, ''), 'progress')
    expect(live).toContain('\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2K\\r\\x1b[32m✓ all good')
    const lines = plain.join('')
    expectNoRawControl(lines, 'plain lines')
    // One event is one line: the log line's newline does not start a line of its own.
    expect(lines.split('\n').filter((l) => l.startsWith('INFO faked'))).toEqual([])
    expect(lines).toContain('\\u202eevil\\u202c \\x9b31m')
  })

  it('report.md, report.html and report.json in the run folder', () => {
    const md = readFileSync(journal.file('report.md'), 'utf8')
    expectNoRawControl(md, 'report.md')
    expect(md).toContain('channel News\\x1b]52;c;cm0gLXJmIH4=\\x07')
    expect(md.split('\n').filter((l) => l.startsWith('INFO faked'))).toEqual([])
    const html = readFileSync(journal.file('report.html'), 'utf8')
    expectNoRawControl(html, 'report.html')
    expect(html).toContain('&#60;!channel&#62;')
    const raw = readFileSync(journal.file('report.json'), 'utf8')
    expectNoRawControl(raw, 'report.json')
    // The same value for a program: JSON escapes only.
    expect(JSON.stringify(JSON.parse(raw))).toContain(JSON.stringify(CHANNEL).slice(1, -1))
  })

  it('svcops runs show: the timeline, --markdown and --json', async () => {
    const env = { SVCOPS_RUNS_DIR: runsDir, SVCOPS_ENV: '' }
    // The timeline from a real process (what reaches a terminal); --markdown and --json from the same command in this process.
    for (const args of [[], ['--markdown'], ['--json']]) {
      const shown = await (args.length ? runSvcopsInProcess : runSvcops)(['runs', 'show', journal.run.id, ...args], { env })
      expect(shown.code, shown.stderr).toBe(0)
      expectNoRawControl(shown.stdout, `runs show ${args.join(' ')}`)
      expectNoRawControl(shown.stderr, `runs show ${args.join(' ')} (stderr)`)
    }
    const list = await runSvcops(['runs', 'list'], { env })
    expectNoRawControl(list.stdout, 'runs list')
  })

  it('the webhooks: no raw control character, and no live mention in Slack text', () => {
    const bodies = received.map((r) => ({ path: r.path, raw: r.body, json: JSON.parse(r.body) as Record<string, unknown> }))
    expect(bodies.map((b) => b.path).sort()).toEqual(['/json', '/json', '/slack', '/slack'])
    for (const b of bodies) expectNoRawControl(b.raw, b.path)
    for (const b of bodies.filter((x) => x.path === '/slack')) {
      const text = String(b.json.text)
      expectNoRawControl(text, 'slack text')
      expect(text).not.toMatch(/<!channel>|<@U|@channel\b|@here\b/)
    }
    const summary = String(bodies.find((b) => b.path === '/json' && b.json.event === 'rollback')?.json.summary)
    expectNoRawControl(summary, 'json summary')
    expect(summary).toContain('rec-1\\u202e')
  })

  it('the metrics textfile: labels escaped, and promtool accepts it', async () => {
    const text = readFileSync(join(textfileDir, 'svcops_prod.prom'), 'utf8')
    expectNoRawControl(text, 'textfile')
    expect(text).toMatch(/svcops_host_last_downtime_seconds\{environment="prod",kind="upgrade",host="rec-1\\\\u202e"\} /)
    const check = await new Promise<{ code: number; out: string }>((resolve) => {
      const child = execFile(PROMTOOL, ['check', 'metrics'], (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      )
      child.stdin?.end(text)
    })
    expect(check).toEqual({ code: 0, out: '' })
  })
})
