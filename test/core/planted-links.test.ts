/**
 * Every file svcops writes into a directory others may write is created exclusively under a
 * random name and renamed into place: a user who can write that directory plants symlinks at every
 * name svcops used to write through (`NAME.prom.<pid>.tmp`, `.known_hosts.<pid>.partial`,
 * `run.json.tmp`, `<name>.partial` in a backup store, the live host's `<file>.svcops-new`), and at
 * the target names themselves (reports, `--out` files), each pointing at a file only its owner may write. None is followed:
 * every victim keeps its bytes, every written file is a regular file with the new content.
 */
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeFileAtomic } from '../../src/core/atomic-write.ts'
import { LocalStore } from '../../src/backup/store.ts'
import { recordHostKey } from '../../src/drivers/known-hosts.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { lookupUser, startSshd, type Sshd } from '../../src/lab/sshd.ts'
import { writeHostFile } from '../../src/live/hosts/host-files.ts'
import { textfilePath, writeTextfile } from '../../src/metrics/publish.ts'
import { Journal } from '../../src/runs/journal.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'
import { emptyRecordingParams } from '../../src/recording/recording-params.ts'
import { writeReport } from '../../src/reports/report.ts'
import { runSvcops } from '../support/cli.ts'

const PRECIOUS = 'root-only secret, never to be overwritten\n'
let dir: string

/** A 0600 file only its owner may write: what a planted link points svcops at. */
function victim(name: string): string {
  const file = join(dir, 'victims', name)
  writeFileSync(file, PRECIOUS, { mode: 0o600 })
  return file
}

/** A world-writable directory (sticky bit off: anyone may add, remove and rename entries), as an attacker finds it. */
function sharedDir(name: string): string {
  const d = join(dir, name)
  mkdirSync(d, { recursive: true })
  chmodSync(d, 0o777)
  return d
}

function plant(link: string, target: string): void {
  symlinkSync(target, link)
}

/** The names svcops wrote through before: this process' pid and the next ones. */
function guessedPids(): number[] {
  return Array.from({ length: 20 }, (_, i) => process.pid + i)
}

function expectUntouched(file: string): void {
  expect(readFileSync(file, 'utf8')).toBe(PRECIOUS)
}

function expectRegular(file: string, content: string): void {
  expect(lstatSync(file).isFile()).toBe(true)
  expect(readFileSync(file, 'utf8')).toBe(content)
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svcops-planted-'))
  chmodSync(dir, 0o755)
  mkdirSync(join(dir, 'victims'))
})
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

describe('no write through a planted link', () => {
  it('the Prometheus textfile (--metrics-file, the textfile directory)', () => {
    const collector = sharedDir('textfile')
    const file = textfilePath(collector, 'lab')
    const target = victim('metrics')
    for (const pid of guessedPids()) plant(`${file}.${pid}.tmp`, target)
    plant(file, victim('metrics-final'))
    writeTextfile(file, 'svcops_run_last_outcome 1\n')
    expectUntouched(target)
    expectUntouched(join(dir, 'victims', 'metrics-final'))
    expectRegular(file, 'svcops_run_last_outcome 1\n')
    expect(lstatSync(file).mode & 0o777).toBe(0o644)
    // Nothing of svcops' is left beside it (the collector reads only *.prom anyway).
    expect(readdirSync(collector).filter((n) => !n.endsWith('.tmp'))).toEqual(['svcops_lab.prom'])
  })

  it('the known_hosts file of hosts trusted on first use', () => {
    const state = sharedDir('state')
    const file = join(state, 'known_hosts.json')
    const target = victim('known-hosts')
    for (const pid of guessedPids()) plant(join(state, `.known_hosts.${pid}.partial`), target)
    const fingerprint = `SHA256:${'A'.repeat(43)}`
    recordHostKey('rec-1', 22, fingerprint, file)
    expectUntouched(target)
    expectRegular(file, JSON.stringify({ 'rec-1:22': fingerprint }, null, 2) + '\n')
    expect(lstatSync(file).mode & 0o777).toBe(0o600)
  })

  it('the run folder: run.json, the journal and the reports', () => {
    const runs = sharedDir('runs')
    const record = newRunRecord({
      kind: 'backup',
      system: 'recording',
      environment: 'lab',
      envFile: '/nonexistent/Pulumi.lab.yaml',
      params: {},
    })
    // A folder planted under the next run's id is refused, not reused.
    const planted = newRunRecord({ kind: 'backup', system: 'recording', environment: 'lab', envFile: '/x', params: emptyRecordingParams() })
    mkdirSync(join(runs, planted.id), { mode: 0o777 })
    expect(() => Journal.create(planted, runs)).toThrow(/EEXIST/)
    const journal = Journal.create(record, runs)
    const target = victim('run-json')
    plant(journal.file('run.json.tmp'), target)
    for (const name of ['report.json', 'report.md', 'report.html']) plant(journal.file(name), victim(name))
    journal.append({ step: 'create', status: 'start' })
    journal.update({ phase: 'succeeded', finishedAt: new Date().toISOString() })
    writeReport(journal, undefined)
    expectUntouched(target)
    for (const name of ['report.json', 'report.md', 'report.html']) {
      expectUntouched(join(dir, 'victims', name))
      expect(lstatSync(journal.file(name)).isFile()).toBe(true)
    }
    expect(JSON.parse(readFileSync(journal.file('run.json'), 'utf8'))).toMatchObject({ id: record.id, phase: 'succeeded' })
    expect(readFileSync(journal.file('report.md'), 'utf8')).toContain(`run ${record.id}`)
  })

  it('a local backup store: manifests, signatures and dumps', async () => {
    const storeDir = sharedDir('store')
    const store = new LocalStore(storeDir)
    const manifest = 'lab-20260101T020000Z-1a2b.manifest.json'
    const dump = 'lab-20260101T020000Z-1a2b.dump.pgp'
    plant(join(storeDir, `${manifest}.partial`), victim('manifest'))
    plant(join(storeDir, `${dump}.partial`), victim('dump'))
    await store.writeText(manifest, '{"id":"lab"}\n')
    const writer = await store.createWriter(dump)
    writer.stream.end('encrypted bytes')
    await writer.commit()
    expectUntouched(join(dir, 'victims', 'manifest'))
    expectUntouched(join(dir, 'victims', 'dump'))
    expectRegular(join(storeDir, manifest), '{"id":"lab"}\n')
    expectRegular(join(storeDir, dump), 'encrypted bytes')
    expect(lstatSync(join(storeDir, dump)).mode & 0o777).toBe(0o600)
  })

  it('a file svcops writes where it is told (--out), through the CLI', async () => {
    const shared = sharedDir('out')
    const calls = join(shared, 'calls.yaml')
    writeFileSync(calls, '- name: create stream\n  method: POST\n  path: /api/v2/streams\n  body: { source_id: cam-1 }\n')
    const out = join(shared, 'calls-4.yaml')
    plant(out, victim('out'))
    const run = await runSvcops(['migrate', 'requests', '--from', '3.0.0', '--to', '4.0.0', calls, '--out', out])
    expect(run.code, run.stderr).toBe(0)
    expectUntouched(join(dir, 'victims', 'out'))
    expect(lstatSync(out).isFile()).toBe(true)
    expect(readFileSync(out, 'utf8')).toContain('audio_format: AAC-LC')
  })

  it('the one helper: a link at the target is replaced, never written through, and a failed write leaves nothing', () => {
    const shared = sharedDir('helper')
    const file = join(shared, 'run.html')
    plant(file, victim('helper'))
    writeFileAtomic(file, '<html></html>\n')
    expectUntouched(join(dir, 'victims', 'helper'))
    expectRegular(file, '<html></html>\n')
    expect(() => writeFileAtomic(join(shared, 'missing-dir', 'x'), 'x')).toThrow(/ENOENT/)
    expect(readdirSync(shared)).toEqual(['run.html'])
  })
})

describe('no write through a planted link on a host, over a real sshd', () => {
  let sshd: Sshd
  let root: string

  beforeAll(async () => {
    sshd = await startSshd()
    root = join(dir, 'live-1')
    mkdirSync(join(root, 'etc/opt/svc'), { recursive: true })
    chmodSync(root, 0o755)
    chmodSync(join(root, 'etc'), 0o755)
    chmodSync(join(root, 'etc/opt'), 0o755)
    chmodSync(join(root, 'etc/opt/svc'), 0o777)
  })
  afterAll(async () => {
    await sshd?.stop()
  })

  it("the live host's settings file: a link at its new file's fixed name and the target itself", async () => {
    const settings = join(root, 'etc/opt/svc/svc_sc_settings.json')
    // The victim belongs to the user svcops logs in as: the write could reach it through a link.
    const target = victim('settings')
    const owner = lookupUser(sshd.user)
    if (owner) chownSync(target, owner.uid, owner.gid)
    chmodSync(join(dir, 'victims'), 0o755)
    plant(`${settings}.svcops-new`, target)
    const transport = transportFor({
      name: 'live-1',
      url: 'http://127.0.0.1:1',
      root,
      canary: false,
      ssh: { host: sshd.host, port: sshd.port, user: sshd.user, keyFile: sshd.privateKeyPath, hostKey: sshd.hostKey },
    })
    try {
      const host = { name: 'live-1', config: { name: 'live-1', root }, transport }
      await writeHostFile(host, '/etc/opt/svc/svc_sc_settings.json', '{"psk":"new"}\n')
      expectUntouched(target)
      expectRegular(settings, '{"psk":"new"}\n')
      expect(lstatSync(settings).mode & 0o777).toBe(0o600)
      // Now the target itself is a link: it is replaced by the new file, the victim stays.
      rmSync(settings)
      plant(settings, target)
      await writeHostFile(host, '/etc/opt/svc/svc_sc_settings.json', '{"psk":"newer"}\n')
      expectUntouched(target)
      expectRegular(settings, '{"psk":"newer"}\n')
      // The link planted at the new file's fixed name was replaced, never followed; nothing is left behind.
      expect(readdirSync(join(root, 'etc/opt/svc')).sort()).toEqual(['svc_sc_settings.json'])
    } finally {
      await transport.close()
    }
  })
})
