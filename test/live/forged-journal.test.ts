/**
 * A live run's journal forged on the live host, where its run store lies (/var/lib/svcops/runs):
 * an attacker with the hosts' SSH user adds a `backup` entry naming what the rollback should put
 * back or remove. On a real live lab host (5.0.0 -> 5.2.0), `svcops rollback live --env lab --yes`
 * run by on-call from an empty runs folder refuses each forged entry with one sentence naming it,
 * before anything stops: no file is written or removed on the host or the operator's machine, no
 * component changes release, and the dry run shows the same refusal instead of the lines. The
 * entries: a path that climbs out of a file of the stack, a path the stack does not define, a copy
 * without its checksum, and a copy named outside the run's backup folder (an operator's 0600 file).
 */
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { LIVE_RUNS_PATH } from '../../src/live/hosts/live-host-run-store.ts'
import { listRuns } from '../../src/runs/journal.ts'
import { runSvcopsInProcess, type CliRun } from '../support/cli.ts'
import { startLiveLab, type LiveLab } from '../support/live-lab.ts'

/**
 * Whether a record read from the environment may drive a rollback at all is the run's MAC's to say
 * (src/runs/run-mac.ts): the attacker here writes an unsigned run (no `mac` anywhere) and the
 * operator lets it through with --trust-unsigned-run, so that what refuses is the rollback's own
 * check of what the journal names, the layer this file is about.
 */
const TRUST_UNSIGNED = ['--trust-unsigned-run']

/** A stored record or journal line without its MAC, as a run written with no run key. */
function unsigned(line: string): string {
  const { mac: _mac, ...rest } = JSON.parse(line) as Record<string, unknown>
  return JSON.stringify(rest)
}

let lab: LiveLab
let id = ''
let envName = ''
/** The run's journal and record on the live host as the upgrade left them (without their MACs). */
let journal = ''
let record = ''
const operator = mkdtempSync(join(tmpdir(), 'svcops-operator-'))
const secret = join(operator, 'secret.key')

beforeAll(async () => {
  lab = await startLiveLab({ version: '5.0.0', cli: 'in-process' })
  const up = await lab.svcops(['upgrade', 'live', '--to', '5.2.0', '--yes'])
  expect(up.code, `${up.stdout}\n${up.stderr}`).toBe(0)
  const run = listRuns(lab.runsDir)[0]
  id = run?.id ?? ''
  envName = run?.environment ?? ''
  journal = readFileSync(journalOnHost(), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => `${unsigned(l)}\n`)
    .join('')
  record = `${unsigned(readFileSync(recordOnHost(), 'utf8'))}\n`
  writeFileSync(secret, 'operator-only-secret\n', { mode: 0o600 })
}, 600_000)

afterAll(async () => {
  await lab?.stop()
})

function recordOnHost(): string {
  return lab.file(`${LIVE_RUNS_PATH}/${id}.json`)
}

function journalOnHost(): string {
  return lab.file(`${LIVE_RUNS_PATH}/${id}.journal.jsonl`)
}

/** The run's copy of the ingest's environment file on the host, and its checksum (what a well-formed entry names). */
function ingestCopy(): { backup: string; sha256: string } {
  const backup = 'backup/etc__default__svc-ingest'
  const text = readFileSync(lab.file(`${LIVE_RUNS_PATH}/${id}.${backup}`), 'utf8')
  return { backup, sha256: createHash('sha256').update(text).digest('hex') }
}

/** `svcops --stack-file <lab> ...args` from a machine whose runs folder is empty, as on-call's. */
function fromEmptyMachine(args: string[]): Promise<CliRun> {
  const runsDir = mkdtempSync(join(tmpdir(), 'svcops-on-call-'))
  return runSvcopsInProcess(['--stack-file', lab.envFile, '--env', envName, ...args], { env: { SVCOPS_RUNS_DIR: runsDir } })
}

/** Every file under the operator's folder and the host's sandbox that the attack aims at, as it is. */
function aimedAt(paths: string[]): Record<string, string | undefined> {
  return Object.fromEntries(paths.map((p) => [p, existsSync(p) ? readFileSync(p, 'utf8') : undefined]))
}

const cases: Array<{ what: string; entry: () => Record<string, unknown>; aims: () => string[]; names: RegExp }> = [
  {
    what: 'a path that climbs out of a file of the stack (an authorized_keys line written anywhere)',
    entry: () => ({ path: '/etc/default/../../tmp/forged/authorized_keys', existed: true, ...ingestCopy() }),
    aims: () => [lab.file('/tmp/forged/authorized_keys')],
    names:
      /files\.0 \(\/etc\/default\/\.\.\/\.\.\/tmp\/forged\/authorized_keys\): the path '\/etc\/default\/\.\.\/\.\.\/tmp\/forged\/authorized_keys' is not a settings or environment file the stack defines on /,
  },
  {
    what: 'a path the stack does not define (a file removed)',
    entry: () => {
      mkdirSync(lab.file('/srv/studio'), { recursive: true })
      writeFileSync(lab.file('/srv/studio/victim'), 'keep me\n')
      return { path: '/srv/studio/victim', existed: false }
    },
    aims: () => [lab.file('/srv/studio/victim')],
    names:
      /files\.0 \(\/srv\/studio\/victim\): the path '\/srv\/studio\/victim' is not a settings or environment file the stack defines on /,
  },
  {
    what: 'a copy without its checksum',
    entry: () => ({ path: '/etc/default/svc-ingest', existed: true, backup: ingestCopy().backup }),
    aims: () => [],
    names: /data\.files\.0\.sha256: expected the SHA-256 of its copy for a file that existed/,
  },
  {
    what: "a copy named outside the run's backup folder (an operator's 0600 file sent to the host)",
    entry: () => ({
      path: '/etc/default/svc-ingest',
      existed: true,
      // From the run folder an empty machine makes, up to the operator's file.
      backup: `backup/${relative(join(tmpdir(), 'x', id, 'backup'), secret)}`,
      sha256: createHash('sha256').update(readFileSync(secret)).digest('hex'),
    }),
    aims: () => [secret],
    names: /data\.files\.0\.backup: expected backup\/NAME, a plain file name in the run's backup folder \(no '\/', no '\.\.'\)/,
  },
]

it.each(cases)(
  'refuses $what, naming the entry, before anything stops; the dry run shows the refusal',
  async (c) => {
    // Each attack starts from the run as the upgrade left it, written unsigned.
    writeFileSync(recordOnHost(), record)
    writeFileSync(journalOnHost(), journal)
    const forged = { time: new Date().toISOString(), step: 'backup', status: 'ok', data: { files: [c.entry()] } }
    appendFileSync(journalOnHost(), `${JSON.stringify(forged)}\n`)
    const files = lab.snapshot()
    const aimed = aimedAt([...c.aims(), lab.file(`/etc/default/svc-ingest`)])
    const pids = ['system-controller', 'ingest', 'pipeline', 'control-panel'] as const

    const before = pids.map((p) => lab.pid(p))
    const dry = await fromEmptyMachine(['rollback', 'live', '--dry-run', ...TRUST_UNSIGNED])
    expect(dry.code, `${dry.stdout}\n${dry.stderr}`).not.toBe(0)
    const dryOut = `${dry.stdout}\n${dry.stderr}`
    expect(dryOut).toMatch(new RegExp(`Run ${id}: the journal's entry of step backup is refused: `))
    expect(dryOut).toMatch(c.names)

    const rollback = await fromEmptyMachine(['rollback', 'live', '--yes', ...TRUST_UNSIGNED])
    const out = `${rollback.stdout}\n${rollback.stderr}`
    expect(rollback.code, out).toBe(2)
    expect(out).toMatch(new RegExp(`Run ${id}: the journal's entry of step backup is refused: `))
    expect(out).toMatch(c.names)
    expect(out).not.toMatch(/rollback:stop|rollback:restore-config/)

    // Nothing stopped, nothing written or removed on the host or the operator's machine.
    expect(pids.map((p) => lab.pid(p))).toEqual(before)
    expect(Object.values(lab.versions())).toEqual(['5.2.0', '5.2.0', '5.2.0', '5.2.0'])
    expect(lab.snapshot()).toEqual(files)
    expect(aimedAt(Object.keys(aimed))).toEqual(aimed)
    expect(existsSync(dirname(lab.file('/tmp/forged/authorized_keys')))).toBe(false)
  },
  300_000,
)
