import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { batchFitsWindow, parseMaxFail, parseWindow, planBatches, runConcurrently } from '../../src/runs/rollout.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { newRunId, newRunRecord, type RunRecord } from '../../src/runs/run-record.ts'
import { aptDriver, dnfDriver, dpkgDriver, findDebFile, showCommand } from '../../src/drivers/packages.ts'
import { findLogErrors, linesSince, supervisorDriver, systemdDriver } from '../../src/drivers/services.ts'
import { downtimeOf } from '../../src/reports/report.ts'
import { recordingsAfter } from '../../src/recording/content-snapshot.ts'
import type { CommandResult } from '../../src/core/runner.ts'

const real = { name: 'rec-1' }
const lab = { name: 'h1', root: '/tmp/h1' }

describe('package drivers build the exact commands', () => {
  it('apt installs the pinned version, allows downgrades and keeps modified conffiles', () => {
    expect(aptDriver.installCommands(real, 'svc-recording', '2.0.0')).toEqual([
      {
        argv: [
          'apt-get',
          'install',
          '-y',
          '--no-install-recommends',
          '--allow-downgrades',
          '-o',
          'Dpkg::Options::=--force-confdef',
          '-o',
          'Dpkg::Options::=--force-confold',
          '--',
          'svc-recording=2.0.0',
        ],
        env: { DEBIAN_FRONTEND: 'noninteractive' },
        mutates: true,
        // Root's command: through sudo -n where the host says ssh.become: sudo.
        asRoot: true,
      },
    ])
  })

  it('apt downloads the pinned version before anything stops', () => {
    expect(aptDriver.stageCommands(real, 'svc-recording', '2.0.0').map((c) => c.argv)).toEqual([
      ['apt-get', 'update'],
      ['apt-get', 'install', '--download-only', '-y', '--allow-downgrades', '--', 'svc-recording=2.0.0'],
    ])
  })

  it('dnf pins name-version, goes down with dnf downgrade, and downloads first', () => {
    expect(dnfDriver.installCommands(real, 'svc-recording', '1.5.0')[0]?.argv).toEqual([
      'sh',
      '-c',
      'dnf install -y -- "$1" || dnf downgrade -y -- "$1"',
      'sh',
      'svc-recording-1.5.0',
    ])
    expect(dnfDriver.stageCommands(real, 'svc-recording', '1.5.0')[0]?.argv).toEqual([
      'dnf',
      'install',
      '-y',
      '--downloadonly',
      '--',
      'svc-recording-1.5.0',
    ])
    expect(dnfDriver.queryVersionCommand(real, 'svc-recording').argv).toEqual(['rpm', '-q', '--qf', '%{VERSION}', '--', 'svc-recording'])
    expect(dnfDriver.newConfigSuffixes).toEqual(['.rpmnew'])
  })

  it('dpkg installs the cached .deb in the sandbox root, keeping the old config', () => {
    const argv = dpkgDriver.installCommands(lab, 'svc-recording', '2.0.0', '/pkgs/svc-recording_2.0.0_all.deb')[0]?.argv
    expect(argv?.[0]).toBe('dpkg')
    expect(argv).toContain('--root=/tmp/h1')
    expect(argv).toContain('--force-script-chrootless')
    expect(argv?.slice(-4)).toEqual([
      '--force-confdef',
      '--force-confold',
      '-i',
      '/tmp/h1/var/cache/svcops/packages/svc-recording_2.0.0_all.deb',
    ])
  })

  it('reads the installed version only from an installed package', () => {
    expect(dpkgDriver.parseVersion('installed 1.5.0')).toBe('1.5.0')
    expect(dpkgDriver.parseVersion('config-files 1.5.0')).toBeUndefined()
    expect(dpkgDriver.parseVersion('')).toBeUndefined()
  })

  it('finds the .deb of a version and names what is missing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcops-debs-'))
    writeFileSync(join(dir, 'svc-recording_2.1.0+crash_all.deb'), '')
    writeFileSync(join(dir, 'svc-recording_2.1.0_all.deb'), '')
    expect(findDebFile(dir, 'svc-recording', '2.1.0')).toBe(join(dir, 'svc-recording_2.1.0_all.deb'))
    expect(() => findDebFile(dir, 'svc-recording', '9.9.9')).toThrow(
      /Version 9\.9\.9 of svc-recording is not in .*; expected one of the versions there: 2\.1\.0, 2\.1\.0\+crash\./,
    )
  })
})

describe('service drivers build the exact commands', () => {
  it('systemd uses systemctl and journalctl --unit, the unit never read as an option', () => {
    expect(systemdDriver.stopCommand(real, 'svc-recording').argv).toEqual(['systemctl', 'stop', '--', 'svc-recording'])
    expect(systemdDriver.startCommand(real, 'svc-recording').argv).toEqual(['systemctl', 'start', '--', 'svc-recording'])
    expect(systemdDriver.statusCommand(real, 'svc-recording').argv).toEqual([
      'systemctl',
      'show',
      '--property=ActiveState,SubState,NRestarts',
      '--',
      'svc-recording',
    ])
    const show = (stdout: string) => systemdDriver.parseStatus({ code: 0, signal: null, stdout, stderr: '', durationMs: 1 }, real)
    expect(show('ActiveState=active\nSubState=running\nNRestarts=0\n')).toEqual({ running: true, status: 'active (running)' })
    // Restart= brought it back: running, and the status says it crashed.
    expect(show('NRestarts=2\nActiveState=active\nSubState=running\n')).toEqual({
      running: true,
      status: 'active (running), restarted 2 times by systemd (Restart=)',
    })
    expect(show('ActiveState=activating\nSubState=auto-restart\nNRestarts=1\n')).toEqual({
      running: false,
      status: 'activating (auto-restart), exited and about to be restarted by systemd (Restart=), restarted 1 time by systemd (Restart=)',
    })
    // Only the stop and the start need root; the status and the journal are read as the SSH user.
    expect([systemdDriver.stopCommand(real, 'x').asRoot, systemdDriver.startCommand(real, 'x').asRoot]).toEqual([true, true])
    expect([systemdDriver.statusCommand(real, 'x').asRoot, systemdDriver.logsCommand(real, 'x', 5, '/l').asRoot]).toEqual([
      undefined,
      undefined,
    ])
    expect(systemdDriver.logsCommand(real, 'svc-recording', 50, '/ignored').argv).toEqual([
      'journalctl',
      '--unit=svc-recording',
      '-n',
      '50',
      '--no-pager',
      '-o',
      'short-iso',
    ])
    expect(systemdDriver.parseStatus(result(0, 'ActiveState=active\nSubState=running\nNRestarts=0\n'), real)).toEqual({
      running: true,
      status: 'active (running)',
    })
    // Restart= gave up (StartLimitBurst): failed, with the restarts it made.
    expect(systemdDriver.parseStatus(result(0, 'ActiveState=failed\nSubState=failed\nNRestarts=4\n'), real)).toEqual({
      running: false,
      status: 'failed (failed), restarted 4 times by systemd (Restart=)',
    })
    expect(systemdDriver.parseStatus(result(1, '', 'Failed to connect to bus'), real)).toEqual({
      running: false,
      status: 'Failed to connect to bus',
    })
    expect(systemdDriver.stopOutcome(result(0, ''), real).ok).toBe(true)
    expect(systemdDriver.startOutcome(result(1, '', 'Job for svc-recording.service failed.'), real)).toEqual({
      ok: false,
      detail: 'Job for svc-recording.service failed.',
    })
  })

  it("supervisor posts supervisorctl's XML-RPC calls to the sandbox's supervisord socket with curl", () => {
    const curl = [
      'curl',
      '--silent',
      '--show-error',
      '--max-time',
      '120',
      '--unix-socket',
      '/tmp/h1/run/supervisor.sock',
      '--header',
      'Content-Type: text/xml',
      '--data-binary',
      '@-',
      'http://localhost/RPC2',
    ]
    const stop = supervisorDriver.stopCommand(lab, 'svc-recording')
    expect(stop.argv).toEqual(curl)
    expect(stop.input?.shown).toBe('supervisor.stopProcess("svc-recording", true)')
    expect(stop.input?.data).toBe(
      '<?xml version="1.0"?><methodCall><methodName>supervisor.stopProcess</methodName><params><param><value><string>svc-recording</string></value></param><param><value><boolean>1</boolean></value></param></params></methodCall>',
    )
    expect(supervisorDriver.startCommand(lab, 'svc-recording').input?.shown).toBe('supervisor.startProcess("svc-recording", true)')
    expect(supervisorDriver.statusCommand(real, 'svc-recording').argv).toContain('/run/supervisor.sock')
    expect(showCommand(stop)).toBe(
      `${curl.slice(0, 8).join(' ')} 'Content-Type: text/xml' --data-binary @- http://localhost/RPC2 <<< supervisor.stopProcess("svc-recording", true)`,
    )
    expect(supervisorDriver.logsCommand(lab, 'svc-recording', 20, '/var/log/svc/recording.log').argv).toEqual([
      'tail',
      '-n',
      '20',
      '/tmp/h1/var/log/svc/recording.log',
    ])
  })

  it("reads supervisord's answers: process state, faults that are fine (not running, already started) and faults that are not", () => {
    expect(supervisorDriver.parseStatus(result(0, processInfo('RUNNING', 'pid 8262, uptime 0:00:04')), lab)).toEqual({
      running: true,
      status: 'RUNNING pid 8262, uptime 0:00:04',
    })
    expect(supervisorDriver.parseStatus(result(0, processInfo('FATAL', 'Exited too quickly (process log may have details)')), lab)).toEqual(
      { running: false, status: 'FATAL Exited too quickly (process log may have details)' },
    )
    expect(
      supervisorDriver.parseStatus(result(7, '', 'curl: (7) Failed to connect to localhost port 80: Connection refused'), lab),
    ).toEqual({
      running: false,
      status:
        'supervisord does not answer on /tmp/h1/run/supervisor.sock: curl: (7) Failed to connect to localhost port 80: Connection refused',
    })
    expect(supervisorDriver.stopOutcome(result(0, fault(70, 'NOT_RUNNING: svc-recording')), lab).ok).toBe(true)
    expect(supervisorDriver.stopOutcome(result(0, BOOLEAN_TRUE), lab).ok).toBe(true)
    expect(supervisorDriver.startOutcome(result(0, fault(60, 'ALREADY_STARTED: svc-recording')), lab).ok).toBe(true)
    expect(supervisorDriver.startOutcome(result(0, fault(50, 'SPAWN_ERROR: svc-recording')), lab)).toEqual({
      ok: false,
      detail: 'SPAWN_ERROR: svc-recording',
    })
    expect(() => supervisorDriver.parseStatus(result(0, '<html>502 Bad Gateway</html>'), lab)).toThrow(
      "supervisord at h1:/tmp/h1/run/supervisor.sock did not answer with XML-RPC: '<html>502 Bad Gateway</html>'.",
    )
  })

  it('reads only what the service logged after a cursor taken before the start', () => {
    expect(supervisorDriver.logCursorCommand(lab, 'svc-recording', '/var/log/svc/recording.log').argv).toEqual([
      'sh',
      '-c',
      'stat -c %s "$1" 2>/dev/null || echo 0',
      'sh',
      '/tmp/h1/var/log/svc/recording.log',
    ])
    expect(supervisorDriver.logsCommand(lab, 'svc-recording', 50, '/var/log/svc/recording.log', '1200').argv).toEqual([
      'sh',
      '-c',
      'tail -c +"$1" "$2" | tail -n "$3"',
      'sh',
      '1201',
      '/tmp/h1/var/log/svc/recording.log',
      '50',
    ])
    expect(systemdDriver.logsCommand(real, 'svc-recording', 50, '/x', '1700000000.5').argv).toContain('--since=@1700000000.5')
  })

  it('judges only the log lines written since the start', () => {
    const lines = [
      '2026-11-22T03:00:00.000Z ERROR old failure',
      '2026-11-22T03:10:00.000Z INFO listening',
      '2026-11-22T03:10:01.000Z ERROR migration failed',
    ]
    const recent = linesSince(lines, '2026-11-22T03:09:59.000Z')
    expect(recent).toHaveLength(2)
    expect(findLogErrors(recent, ['\\bERROR\\b'])).toEqual(['2026-11-22T03:10:01.000Z ERROR migration failed'])
  })

  it('judges a log record by its level field only: ERROR, control characters or a newline in a message fail nothing', () => {
    const lines = [
      'continued from an older record: ERROR',
      '2026-11-22T03:10:00.000Z INFO created recording 7 on channel cam ERROR \x1b[31mred',
      '2026-11-22T03:10:00.500Z ERROR planted',
      '2026-11-22T03:10:00.600Z INFO created recording 8 on channel two',
      '2026-11-22T03:10:01.000Z ERROR \x1b[2Jdatabase connection lost',
      'FATAL this line continues the record above',
    ]
    // The third line is a record of its own here; the emulator escapes a newline in a message, so user data never starts one.
    expect(findLogErrors(lines.slice(0, 2))).toEqual([])
    expect(findLogErrors([lines[1]!, lines[3]!])).toEqual([])
    expect(findLogErrors(lines.slice(3))).toEqual([
      '2026-11-22T03:10:01.000Z ERROR \\x1b[2Jdatabase connection lost\\nFATAL this line continues the record above',
    ])
    // The stack key's old patterns still name the levels.
    expect(findLogErrors(lines.slice(3), ['\\bERROR\\b', 'panic'])).toHaveLength(1)
    expect(findLogErrors(['2026-11-22T03:10:00.000Z WARN cam ERROR'], ['\\bERROR\\b'])).toEqual([])
  })
})

describe('fleet rollout', () => {
  const hosts = ['a', 'b', 'c', 'd', 'e'].map((name) => ({ name, canary: name === 'c' }))

  it('puts the canary alone first, then batches of N', () => {
    expect(planBatches(hosts, 2).map((b) => b.map((h) => h.name))).toEqual([['c'], ['a', 'b'], ['d', 'e']])
  })

  it('reads --max-fail as a count or a percentage and refuses anything else', () => {
    expect(parseMaxFail('1', 10)).toBe(1)
    expect(parseMaxFail('25%', 10)).toBe(2)
    expect(() => parseMaxFail('many', 10)).toThrow(/--max-fail: 'many' is not valid/)
    expect(() => planBatches(hosts, 0)).toThrow(/--batch/)
  })

  it.each([
    ['90m', 5_400_000],
    ['2h', 7_200_000],
    ['1h30m', 5_400_000],
    ['45s', 45_000],
    ['1h0m5s', 3_605_000],
  ])('reads --window %s as %i ms', (text, ms) => {
    expect(parseWindow(text)).toBe(ms)
  })

  it.each(['', '0m', '90', '1.5h', 'soon', '30m1h'])('refuses --window %j with one sentence', (text) => {
    expect(() => parseWindow(text)).toThrow(
      `--window: '${text}' is not a duration; expected hours, minutes or seconds like 2h, 90m, 1h30m or 45s.`,
    )
  })

  it('starts a batch only inside the window, and only if a batch as long as the longest so far ends inside it', () => {
    const deadline = 1_000_000
    expect(batchFitsWindow(900_000, deadline, 0)).toBe(true) // the canary: the window is open
    expect(batchFitsWindow(1_000_000, deadline, 0)).toBe(false) // closed
    expect(batchFitsWindow(900_000, deadline, 100_000)).toBe(true) // ends exactly at the deadline
    expect(batchFitsWindow(900_001, deadline, 100_000)).toBe(false) // would overrun it
  })

  it('runs a batch concurrently and reports each outcome in order', async () => {
    let running = 0
    let peak = 0
    const results = await runConcurrently([1, 2, 3, 4], 4, async (n) => {
      running++
      peak = Math.max(peak, running)
      await new Promise((r) => setTimeout(r, 20))
      running--
      if (n === 3) throw new Error('host 3 failed')
      return n
    })
    expect(peak).toBe(4)
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
  })
})

describe('journal and report', () => {
  it('keeps every step of a run, survives a torn last line, and computes downtime per host', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-runs-'))
    const run: RunRecord = {
      id: newRunId(),
      kind: 'upgrade',
      system: 'recording',
      environment: 'lab',
      envFile: '/x',
      targetVersion: '2.0.0',
      params: { previousVersions: { h1: '1.5.0' }, hosts: ['h1'], batchSize: 1, maxFail: '0' },
      autoRollback: true,
      phase: 'running',
      startedAt: new Date().toISOString(),
      holder: 'me@here',
      pid: 1,
    }
    const j = Journal.create(run, base)
    // The report reads the journal's flags (a disruptive start, a verified end), never step names.
    j.append({ step: 'stop', host: 'h1', status: 'start', disruptive: true })
    j.append({ step: 'stop', host: 'h1', status: 'ok', changed: ['stopped svc-recording'] })
    j.append({ step: 'verify-host', host: 'h1', status: 'ok', report: 'verified' })
    writeFileSync(j.file('journal.jsonl'), '{"torn', { flag: 'a' })
    const again = Journal.open(run.id, base)
    expect(again.entries()).toHaveLength(3)
    expect(again.finished('stop', 'h1')?.changed).toEqual(['stopped svc-recording'])
    expect(listRuns(base).map((r) => r.id)).toEqual([run.id])
    const [d] = downtimeOf(again.entries(), ['h1'])
    expect(d?.downtimeMs).toBeGreaterThanOrEqual(0)
    expect(again.disrupted()).toBe(true)
    expect(again.disruptedHosts(['h0', 'h1'])).toEqual(['h1'])
    expect(() => Journal.open('nope', base)).toThrow(/Run id 'nope' is not valid/)
  })

  it('reads what was appended since its last read, by itself or another writer, and a torn line once more follows is refused', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-runs-'))
    const j = Journal.create(
      newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/x', targetVersion: '2.0.0', params: {} }),
      base,
    )
    j.append({ step: 'preflight', status: 'ok' })
    expect(j.entries().map((e) => e.step)).toEqual(['preflight'])
    j.append({ step: 'stage', host: 'h1', status: 'ok' })
    Journal.open(j.run.id, base).append({ step: 'stop', host: 'h1', status: 'start', disruptive: true })
    expect(j.entries().map((e) => e.step)).toEqual(['preflight', 'stage', 'stop'])
    expect(j.finished('stage', 'h1')).toBeDefined()
    writeFileSync(j.file('journal.jsonl'), '{"torn', { flag: 'a' })
    expect(j.entries()).toHaveLength(3)
    writeFileSync(j.file('journal.jsonl'), '\n{"time":"t","step":"install","host":"h1","status":"ok"}\n', { flag: 'a' })
    expect(() => j.entries()).toThrow(/journal.jsonl:4: is not a journal entry/)
  })

  it('refuses damaged run records and journals with the file named, and lists the other runs', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-runs-'))
    const good = Journal.create(
      newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/x', targetVersion: '2.0.0', params: {} }),
      base,
    )
    good.append({ step: 'preflight', status: 'ok' })
    const bad = newRunId()
    mkdirSync(join(base, bad))
    writeFileSync(join(base, bad, 'run.json'), '{"id": "not a run"')
    expect(() => Journal.open(bad, base)).toThrow(new RegExp(`${bad}/run.json: is not valid JSON`))
    expect(listRuns(base).map((r) => r.id)).toEqual([good.run.id])
    const wrong = newRunId()
    mkdirSync(join(base, wrong))
    writeFileSync(join(base, wrong, 'run.json'), JSON.stringify({ ...good.run, id: wrong, phase: 'exploded' }))
    expect(() => Journal.open(wrong, base)).toThrow(/run.json: phase: /)
    // A bad line in the middle is tampering, not a torn write: refused, naming the line.
    writeFileSync(
      good.file('journal.jsonl'),
      '{"time":"t","step":"preflight","status":"ok"}\nnot json\n{"time":"t","step":"stage","status":"ok"}\n',
    )
    expect(() => Journal.open(good.run.id, base).entries()).toThrow(/journal.jsonl:2: is not a journal entry/)
  })

  it('exports only recordings written after the snapshot, never test recordings', () => {
    const after = recordingsAfter(
      ['id:1'],
      [
        { id: '1', channelName: 'c', title: 'old', startTime: 1, stopTime: 2 },
        { id: '7', channelName: 'c', title: 'new', startTime: 3, stopTime: 4 },
        { id: '8', channelName: 'svcops-verify', title: 'svcops verify run x', startTime: 3, stopTime: 4 },
      ],
    )
    expect(after.map((r) => r.title)).toEqual(['new'])
  })
})

describe('progress', () => {
  it('redraws one line per host on a terminal, and writes plain lines otherwise', async () => {
    const { progressSink } = await import('../../src/reports/progress.ts')
    const { EventLog } = await import('../../src/core/events.ts')
    const written: string[] = []
    const tty = Object.assign(
      new (await import('node:stream')).Writable({ write: (c: Buffer, _e, cb) => (written.push(c.toString()), cb()) }),
      { isTTY: true },
    ) as unknown as NodeJS.WriteStream
    const log = new EventLog()
    log.subscribe(progressSink(tty))
    log.emit({ kind: 'step', step: 'stop', status: 'start', host: 'rec-1' })
    log.emit({ kind: 'step', step: 'stop', status: 'start', host: 'rec-2' })
    log.emit({ kind: 'step', step: 'stop', status: 'ok', host: 'rec-1', durationMs: 300 })
    const screen = written.join('')
    expect(screen).toContain('\x1b[3F') // moved up over the run line and two host lines to redraw them
    expect(screen).toContain('rec-1  \x1b[32m✓ stop (300 ms)')
    const plain: string[] = []
    const pipe = Object.assign(
      new (await import('node:stream')).Writable({ write: (c: Buffer, _e, cb) => (plain.push(c.toString()), cb()) }),
      { isTTY: false },
    ) as unknown as NodeJS.WriteStream
    const log2 = new EventLog()
    log2.subscribe(progressSink(pipe))
    log2.emit({ kind: 'step', step: 'stop', status: 'ok', host: 'rec-1', durationMs: 300 })
    expect(plain.join('')).toBe('[rec-1] ✓ stop (300 ms)\n')
  })
})

describe('config review', () => {
  it('diffs the new default left beside a kept config, checks the syntax, and names obsolete and new options', async () => {
    const { reviewConfig } = await import('../../src/recording/hosts/config-review.ts')
    const { local } = await import('../../src/core/runner.ts')
    const root = mkdtempSync(join(tmpdir(), 'svcops-review-'))
    const { mkdirSync } = await import('node:fs')
    mkdirSync(join(root, 'etc/opt/svc'), { recursive: true })
    writeFileSync(
      join(root, 'etc/opt/svc/recording.json'),
      JSON.stringify({ listen: { port: 9000 }, oldCache: 5, database: { password: 'db-secret-value' } }, null, 2),
    )
    writeFileSync(
      join(root, 'etc/opt/svc/recording.json.dpkg-dist'),
      JSON.stringify({ listen: { port: 8090 }, logLevel: 'info', database: { password: 'changeme-default' } }, null, 2),
    )
    const review = await reviewConfig(local, { name: 'h', root }, '/etc/opt/svc/recording.json', ['.dpkg-dist', '.dpkg-new'])
    expect(review.syntaxOk).toBe(true)
    expect(review.obsoleteOptions).toEqual(['oldCache'])
    expect(review.newOptions).toEqual(['logLevel'])
    expect(review.newDefaults.map((d) => d.path)).toEqual(['/etc/opt/svc/recording.json.dpkg-dist'])
    expect(review.newDefaults[0]?.diff).toContain('+  "logLevel": "info"')
    expect(review.newDefaults[0]?.diff).not.toContain('db-secret-value')
    writeFileSync(join(root, 'etc/opt/svc/recording.json'), '{ "listen": ')
    const broken = await reviewConfig(local, { name: 'h', root }, '/etc/opt/svc/recording.json', ['.dpkg-dist'])
    expect(broken.syntaxOk).toBe(false)
    expect(broken.syntaxError).toMatch(/is not valid JSON/)
  })
})

/** A finished command, as the runner reports it. */
function result(code: number, stdout: string, stderr = ''): CommandResult {
  return { code, signal: null, stdout, stderr, durationMs: 1 }
}

// Answers in the exact layout supervisord 4 (Python's xmlrpc.client) sends them.
const BOOLEAN_TRUE =
  "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n<value><boolean>1</boolean></value>\n</param>\n</params>\n</methodResponse>\n"

function fault(code: number, message: string): string {
  return `<?xml version='1.0'?>\n<methodResponse>\n<fault>\n<value><struct>\n<member>\n<name>faultCode</name>\n<value><int>${code}</int></value>\n</member>\n<member>\n<name>faultString</name>\n<value><string>${message}</string></value>\n</member>\n</struct></value>\n</fault>\n</methodResponse>\n`
}

function processInfo(state: string, description: string): string {
  const members: Array<[string, string]> = [
    ['name', '<string>svc-recording</string>'],
    ['start', '<int>1795451111</int>'],
    ['state', '<int>20</int>'],
    ['statename', `<string>${state}</string>`],
    ['spawnerr', '<string></string>'],
    ['exitstatus', '<int>0</int>'],
    ['pid', '<int>8262</int>'],
    ['description', `<string>${description}</string>`],
  ]
  return `<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n<value><struct>\n${members.map(([n, v]) => `<member>\n<name>${n}</name>\n<value>${v}</value>\n</member>\n`).join('')}</struct></value>\n</param>\n</params>\n</methodResponse>\n`
}
