/**
 * What an operator sees of a live upgrade before it starts, on a real live lab on 6.0.0: a dry run
 * with an open gate exits 5 as the run would, closing with a summary (what would change, what blocks
 * it, the exact command that would go ahead) and `--json` `ok: false` with the gates' ids; the
 * refusal lists the `--ack` ids once; a version not in the package directory is refused naming the
 * versions there, in order; refusals leave no run folder behind.
 *
 * Then, on the same lab upgraded to 7.0.0, the live production system's upgrade never makes things
 * worse: an upgrade to the release every component already runs changes nothing (exit 0, the same processes,
 * a `no-op` run); one to an older release is refused before anything (exit 2), naming the rollback;
 * one whose packages would not fit on the host's filesystem is refused in its preflight, before
 * anything is staged (exit 5), and a run with room shows the room it read as a check row;
 * a rollback whose previous release's package left the host refuses before its first stop (exit 5);
 * so does an upgrade whose own rollback would miss a package; and a rollback that meets a package
 * gone after its check starts every component on the release it has and says which.
 *
 * The last two need a hand between two steps of one run: the upgrade runs in this process (the
 * playbook's entry point, as the CLI calls it) and a sink of its events removes the package when the
 * engine reports the step before, which it does before it starts the next one.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statfsSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { live } from '../../playbooks/upgrade-live.ts'
import { startSystemRun } from '../../src/runs/run-actions.ts'
import { useRunSystems } from '../../src/commands/run-systems.ts'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { errorMessage, exitCodeFor, SvcopsError } from '../../src/core/errors.ts'
import { events } from '../../src/core/events.ts'
import { LIVE_LOCK_PATH } from '../../src/live/hosts/live-hosts-platform.ts'
import { componentPackage } from '../../src/live/layout.ts'
import { listRuns } from '../../src/runs/journal.ts'
import type { CliRun } from '../support/cli.ts'
import { gateIds, LIVE_COMPONENTS, oneLiveHost, PRODUCT, startLiveLab, type LiveLab } from '../support/live-lab.ts'

let lab: LiveLab
/** The upgrade 6.0.0 -> 7.0.0 every test starts from, as the CLI printed it. */
let firstUpgrade: CliRun

/** The `--ack` of every gate between two releases (none for a patch release). */
function acks(from: string, to: string): string[] {
  const ids = gateIds(lab.live(), from, to)
  return ids.length ? ['--ack', ids.join(',')] : []
}

/** Each component's process id, as supervisord reports it (every one running: a pid, not 0). */
function pids(): number[] {
  const now = LIVE_COMPONENTS.map((c) => lab.pid(c))
  expect(
    now.every((pid) => pid > 0),
    `pids ${now.join(' ')}`,
  ).toBe(true)
  return now
}

/** The phase of the newest run, from `svcops runs list --json`. */
async function newestPhase(): Promise<string | undefined> {
  const list = await lab.svcops(['runs', 'list', '--json'])
  const runs = JSON.parse(list.stdout) as { runs?: { phase: string }[] } | { phase: string }[]
  return (Array.isArray(runs) ? runs : (runs.runs ?? []))[0]?.phase
}

/** A step event of the engine, as a sink sees it. */
interface StepSeen {
  step: string
  status: string
  host?: string
}

/**
 * `svcops upgrade live --to V --yes` run in this process, `onStep` told of every step event as the
 * engine emits it (synchronously: the next step starts after it returns). Returns what it threw.
 */
async function upgradeHere(to: string, onStep: (e: StepSeen) => void): Promise<unknown> {
  const runsDir = process.env.SVCOPS_RUNS_DIR
  process.env.SVCOPS_RUNS_DIR = lab.runsDir
  await useRunSystems()
  const stop = events.subscribe((e) => {
    if (e.kind === 'step') onStep({ step: e.step, status: e.status, ...(e.host ? { host: e.host } : {}) })
  })
  try {
    await startSystemRun(live, { env: loadEnvironmentFile(lab.envFile, 'lab'), to, acks: gateIds(lab.live(), '7.0.0', to) })
    return undefined
  } catch (error) {
    return error
  } finally {
    stop()
    if (runsDir === undefined) delete process.env.SVCOPS_RUNS_DIR
    else process.env.SVCOPS_RUNS_DIR = runsDir
  }
}

beforeAll(async () => {
  lab = await startLiveLab({ version: '6.0.0', cli: 'in-process' })
}, 240_000)

let upgraded: Promise<void> | undefined
/** The lab upgraded to 7.0.0, once, after the operator's words on 6.0.0 (each describe below waits for it). */
function onSeven(): Promise<void> {
  upgraded ??= (async () => {
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--yes', ...acks('6.0.0', '7.0.0')])
    expect(run.code, run.stderr).toBe(0)
    firstUpgrade = run
    expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
  })()
  return upgraded
}

afterAll(async () => {
  await lab?.stop()
})

const runFolders = () => (existsSync(lab.runsDir) ? readdirSync(lab.runsDir) : [])

describe('a live upgrade as the operator sees it before it starts', () => {
  it('a dry run with open gates exits 5 and closes with a summary naming the gates and the command that would go ahead', async () => {
    const gates = gateIds(lab.live(), '6.0.0', '7.0.0')
    const dry = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--dry-run'])
    expect(dry.code, dry.stderr).toBe(5)
    const tail = dry.stdout.trimEnd().split('\n').slice(-4)
    expect(tail[0]).toBe('Summary of this dry run (nothing was changed):')
    expect(tail[1]).toMatch(/^ {2}would change: system-controller, .* to 7\.0\.0 \(\d+ steps\)$/)
    expect(tail[2]).toMatch(/^ {2}blocks it \(exit 5\) at gates: \d+ gates? blocks? the upgrade from 6\.0\.0 to 7\.0\.0/)
    expect(tail[3]).toBe(
      `  once that is handled, go ahead with: svcops --stack-file ${lab.envFile} upgrade live --to 7.0.0 --ack ${gates.join(',')}`,
    )
    // The plan lists each open gate by its id, and one --ack line for all of them.
    for (const id of gates) expect(dry.stdout).toContain(`open: ${id} — `)
    expect(dry.stdout.match(/once every open gate is handled: --ack /g)).toHaveLength(1)

    const json = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--dry-run', '--json'])
    expect(json.code).toBe(5)
    const answer = JSON.parse(json.stdout) as { ok: boolean; summary: { blocking: string[] } }
    expect(answer.ok).toBe(false)
    expect(answer.summary.blocking).toEqual(gates)
    expect(runFolders()).toEqual([])
  })

  it('with every gate acknowledged the dry run exits 0 and names the command that goes ahead', async () => {
    const gates = gateIds(lab.live(), '6.0.0', '7.0.0').join(',')
    const dry = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--ack', gates, '--dry-run'])
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toContain('  blocks it: nothing found')
    expect(dry.stdout).toContain(`  to go ahead: svcops --stack-file ${lab.envFile} upgrade live --to 7.0.0 --ack ${gates}`)
    expect(dry.stdout).toContain(`acknowledged with --ack (${gates.split(',').length}): `)
    expect(dry.stdout).not.toContain('acknowledged with --ack;')
  })

  it('the refusal of an open gate lists the --ack ids once and leaves no run folder', async () => {
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--yes'])
    expect(run.code).toBe(5)
    expect(run.stderr.match(/--ack /g)).toHaveLength(1)
    expect(runFolders()).toEqual([])
  })

  it('a version not in the package directory is refused naming the versions there, oldest first, and leaves no run folder', async () => {
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.5.0', '--yes'])
    expect(run.code).toBe(2)
    const listed = /expected one of the versions there: ([\d., ]+)\./.exec(run.stderr)?.[1]?.split(', ') ?? []
    expect(listed.length, run.stderr).toBeGreaterThan(1)
    expect(listed).toContain('7.0.0')
    const sorted = [...listed].sort((a, b) => {
      const [x, y] = [a, b].map((v) => v.split('.').map(Number))
      return (x?.[0] ?? 0) - (y?.[0] ?? 0) || (x?.[1] ?? 0) - (y?.[1] ?? 0) || (x?.[2] ?? 0) - (y?.[2] ?? 0)
    })
    expect(listed).toEqual(sorted)
    expect(run.stderr).not.toContain('List the available versions with: ls')
    expect(runFolders()).toEqual([])
  })
})

describe('no-op and downgrade', () => {
  beforeAll(onSeven, 240_000)

  it('upgrade live --to 7.0.0 again changes nothing: exit 0, "Already on 7.0.0", the same pids, a no-op run', async () => {
    const before = pids()
    const files = lab.snapshot()
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--yes'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout + run.stderr).toContain('Already on 7.0.0')
    expect(pids()).toEqual(before)
    expect(lab.snapshot()).toEqual(files)
    expect(await newestPhase()).toBe('no-op')
  })

  it('upgrade live --to an older release refuses before anything (exit 2), naming the rollback', async () => {
    const before = pids()
    const files = lab.snapshot()
    const run = await lab.svcops(['upgrade', 'live', '--to', '6.0.0', '--yes'])
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--to: 6.0.0 is older than what')
    expect(run.stderr).toContain('svcops rollback live --env lab')
    expect(pids()).toEqual(before)
    expect(lab.snapshot()).toEqual(files)
    expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
  })
})

/** `s` as a regular expression matching it literally. */
function literally(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

describe('room on the host before anything is staged', () => {
  beforeAll(onSeven, 240_000)

  it("the upgrade's preflight shows the room on the live host: the folders' filesystem, the bytes free and needed", () => {
    const host = oneLiveHost(lab.live())
    const root = host.root ?? ''
    const row = firstUpgrade.stderr.split('\n').find((l) => l.startsWith(`[${host.name}] ok   room for `))
    expect(row, firstUpgrade.stderr).toMatch(
      new RegExp(
        `^\\[${host.name}\\] ok   room for the staged packages and the copies of the settings and environment files: ` +
          `the filesystem \\S+ of ${literally(root)}/var/cache/svcops/packages and ${literally(root)}/var/lib/svcops/runs on ${host.name}: ` +
          `\\d+ bytes \\([^)]+\\) free; the staged packages and the copies of the settings and environment files need [1-9]\\d* bytes \\([^)]+\\), plus 20%$`,
      ),
    )
  })

  it('an upgrade whose packages would not fit on the host refuses in its preflight (exit 5), naming the host, the folders, the bytes needed and free: nothing staged, every pid kept', async () => {
    const live = lab.live()
    const host = oneLiveHost(live)
    const root = host.root ?? ''
    const packages = live.packageDir ?? ''
    // The package directory the product takes, with a 7.0.1 ingest package larger than the host's
    // filesystem has free (a sparse file: it takes no room itself); the others as they are.
    const larger = mkdtempSync(join(tmpdir(), 'svcops-room-packages-'))
    const ingest = `${componentPackage(PRODUCT, 'ingest')}_7.0.1_`
    for (const f of readdirSync(packages)) if (!f.startsWith(ingest)) symlinkSync(join(packages, f), join(larger, f))
    const fs = statfsSync(root)
    const big = join(larger, `${ingest}all.deb`)
    writeFileSync(big, '')
    truncateSync(big, fs.bavail * fs.bsize + 2 ** 30)
    const cache = lab.file('/var/cache/svcops/packages')
    const cached = readdirSync(cache)
    const before = pids()
    const files = lab.snapshot()
    const runs = listRuns(lab.runsDir).map((r) => r.id)
    lab.setLive({ packageDir: larger })
    try {
      const dry = await lab.svcops(['upgrade', 'live', '--to', '7.0.1', '--dry-run'])
      expect(dry.code, dry.stderr).toBe(5)
      expect(dry.stdout + dry.stderr).toContain('was refused before anything was staged')

      const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.1', '--yes'])
      expect(run.code, run.stderr).toBe(5)
      const refused = new RegExp(
        'Nothing changed: the upgrade to 7\\.0\\.1 was refused before anything was staged, because the filesystem \\S+ of ' +
          `${literally(root)}/var/cache/svcops/packages and ${literally(root)}/var/lib/svcops/runs on ${host.name} has (\\d+) bytes \\([^)]+\\) free, ` +
          'and the staged packages and the copies of the settings and environment files need (\\d+) bytes \\([^)]+\\), (\\d+) bytes \\([^)]+\\) with the 20% margin\\.',
      ).exec(run.stderr)
      expect(refused, run.stderr).not.toBeNull()
      const [free, needed, wanted] = (refused ?? []).slice(1).map(Number)
      expect(needed).toBeGreaterThan(fs.bavail * fs.bsize) // the ingest package alone is larger than what was free
      expect(wanted).toBe(Math.ceil((needed ?? 0) * 1.2))
      expect(wanted).toBeGreaterThanOrEqual(free ?? 0)
      expect(run.stderr).toContain(`[${host.name}] FAIL room for the staged packages`)
      expect(run.stderr).toContain('svcops upgrade live --env lab --to 7.0.1')
      // Nothing changed: nothing staged, every component on 7.0.0 with its process, the files as they were, no run.
      expect(readdirSync(cache)).toEqual(cached)
      expect(pids()).toEqual(before)
      expect(lab.snapshot()).toEqual(files)
      expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
      expect(listRuns(lab.runsDir).map((r) => r.id)).toEqual(runs)
      expect(lab.read(LIVE_LOCK_PATH)).toBeUndefined()
    } finally {
      lab.setLive({ packageDir: packages })
      rmSync(larger, { recursive: true, force: true })
    }
  })
})

describe('preconditions before the first stop of a rollback', () => {
  beforeAll(onSeven, 240_000)

  it("a rollback whose previous package left the host's cache refuses (exit 5): nothing stopped, every component on 7.0.0", async () => {
    const cached = '/var/cache/svcops/packages/svc-ingest_6.0.0_all.deb'
    expect(lab.read(cached)).toBeDefined()
    rmSync(lab.file(cached))
    const before = pids()
    const files = lab.snapshot()

    const dry = await lab.svcops(['rollback', 'live', '--dry-run'])
    expect(dry.code).toBe(5)
    expect(dry.stderr + dry.stdout).toContain('svc-ingest 6.0.0 is not in the package cache')

    const run = await lab.svcops(['rollback', 'live', '--yes'])
    expect(run.code).toBe(5)
    expect(run.stderr).toMatch(
      /Nothing changed: the rollback of run \S+ would not get through — .*svc-ingest 6\.0\.0 is not in the package cache/,
    )
    expect(run.stderr).toMatch(/svcops rollback live --env lab --run \S+/)
    expect(pids()).toEqual(before)
    expect(lab.snapshot()).toEqual(files)
    expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
    for (const c of LIVE_COMPONENTS) expect(lab.state(c)).toBe('RUNNING')
  })
})

describe('preconditions before the first stop of an upgrade', () => {
  beforeAll(onSeven, 240_000)

  it("an upgrade whose rollback's package left the host's cache after staging refuses before its first stop (exit 5): every component keeps its pid", async () => {
    const cached = lab.file('/var/cache/svcops/packages/svc-ingest_7.0.0_all.deb')
    const before = pids()
    const files = lab.snapshot()
    const runs = listRuns(lab.runsDir).map((r) => r.id)
    const seen: string[] = []
    const error = await upgradeHere('7.0.1', (e) => {
      seen.push(`${e.step} ${e.status}`)
      // Staged (the current package copied to the cache) and the files backed up: then it goes.
      if (e.step === 'backup' && e.status !== 'start') rmSync(cached)
    })
    expect(seen).toContain('stage ok')
    expect(existsSync(cached)).toBe(false)
    expect(exitCodeFor(error), errorMessage(error)).toBe(5)
    expect(errorMessage(error)).toMatch(
      /^Nothing changed: the upgrade to 7\.0\.1 was refused before anything stopped, because its rollback would not get through — .*svc-ingest 7\.0\.0 is not in the package cache/,
    )
    expect(error instanceof SvcopsError ? error.hint : '').toBe(
      'Bring back what is missing, then run the upgrade again: svcops upgrade live --env lab --to 7.0.1',
    )
    expect(seen).toContain('rollback-ready failed')
    expect(seen.filter((s) => s.startsWith('stop '))).toEqual([])
    expect(pids()).toEqual(before)
    expect(lab.snapshot()).toEqual(files)
    expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
    for (const c of LIVE_COMPONENTS) expect(lab.state(c)).toBe('RUNNING')
    // A refusal is not a run: no folder, and the lock is free for the next one.
    expect(listRuns(lab.runsDir).map((r) => r.id)).toEqual(runs)
    expect(lab.read(LIVE_LOCK_PATH)).toBeUndefined()
  })
})

describe('a rollback that meets a missing part after its check', () => {
  beforeAll(onSeven, 240_000)

  it('starts every stopped component on the release it has and says which release each is on', async () => {
    const cached = lab.file('/var/cache/svcops/packages/svc-ingest_7.0.0_all.deb')
    // 7.0.1 never connects: the upgrade fails after its first stop and rolls back; once every
    // component is stopped again (the controller last), the ingest's 7.0.0 package goes.
    const error = await upgradeHere('7.0.1', (e) => {
      if (e.step === 'rollback:stop' && e.host === 'system-controller' && e.status !== 'start') rmSync(cached)
    })
    const message = errorMessage(error)
    expect(exitCodeFor(error), message).toBe(1)
    expect(message).toMatch(/^The rollback of run \S+ failed: /)
    expect(message).toContain('ingest, pipeline, control-panel started again on the release each has')
    expect(message).toContain(
      'Now: system-controller on 7.0.0 (running), ingest on 7.0.1 (running), pipeline on 7.0.0 (running), control-panel on 7.0.0 (running).',
    )
    expect(lab.versions()).toEqual({ 'system-controller': '7.0.0', ingest: '7.0.1', pipeline: '7.0.0', 'control-panel': '7.0.0' })
    for (const c of LIVE_COMPONENTS) expect(lab.state(c)).toBe('RUNNING')
    const run = listRuns(lab.runsDir)[0]
    expect(run?.phase).toBe('rollback-failed')
    expect(lab.read(LIVE_LOCK_PATH)).toBeUndefined()
  })
})
