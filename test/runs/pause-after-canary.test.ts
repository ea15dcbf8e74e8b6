/**
 * A run that waits for a person after its canary, followed from elsewhere, on the lab (two hosts,
 * 1.4.0 -> 1.5.0). Killed while it waits, it is shown interrupted; `resume` waits again, and `runs
 * abort` from a machine with another runs folder (through the environment's store) rolls back what
 * it changed, exit 4, which `runs watch --json` there follows to its end. Then `upgrade recording
 * --pause-after-canary` upgrades the canary and waits holding its lock; `runs show|list` say it is
 * paused; `runs watch` prints its steps as they are journaled and exits as it ended; `runs promote`
 * lets it go on.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSvcops, runSvcopsInProcess, type CliRun } from '../support/cli.ts'
import { startUpgradeLab, waitForPausedRun, type UpgradeLab } from '../recording/fixture.ts'

let lab: UpgradeLab
/** A second machine's runs folder: it reads runs from the environment's store only. */
let elsewhere: string

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 2, version: '1.4.0', recordings: 3 })
  elsewhere = mkdtempSync(join(lab.dir, 'elsewhere-'))
}, 400_000)

afterAll(async () => {
  for (const pid of started)
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // it had ended
    }
  await lab?.stop()
})

/** Every svcops this file started: a failed case leaves none waiting when the file ends. */
const started: number[] = []

const cli = (
  args: string[],
  options: { runsDir?: string; onSpawn?: (pid: number) => void; onStdout?: (stdout: string) => void } = {},
): Promise<CliRun> =>
  runSvcops(['--stack-file', lab.envFile, ...args], {
    env: { SVCOPS_RUNS_DIR: options.runsDir ?? lab.runsDir },
    onSpawn: (pid) => {
      started.push(pid)
      options.onSpawn?.(pid)
    },
    ...(options.onStdout ? { onStdout: options.onStdout } : {}),
  })

/**
 * A command that ends by itself while the test waits for it, read in this worker
 * (`runSvcopsInProcess`): what another svcops does meanwhile is a process of its own (`cli`), the
 * runs that wait, are killed or are followed.
 */
const cliHere = (args: string[], options: { runsDir?: string } = {}): Promise<CliRun> =>
  runSvcopsInProcess(['--stack-file', lab.envFile, ...args], { env: { SVCOPS_RUNS_DIR: options.runsDir ?? lab.runsDir } })

/** The runs in this machine's runs folder (none before the first run creates it). */
const runIds = (): string[] => (existsSync(lab.runsDir) ? readdirSync(lab.runsDir) : [])

const journalOf = (id: string) =>
  readFileSync(join(lab.runsDir, id, 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { step: string; status: string; host?: string; detail?: string })

describe('--pause-after-canary, runs watch, promote and abort', () => {
  it('killed while it waits, it is interrupted; resumed, it waits again; aborted from another machine, it rolls back (exit 4)', async () => {
    // The dry run shows the wait where the real run would wait.
    const dry = await cliHere(['upgrade', 'recording', '--to', '1.5.0', '--pause-after-canary', '--dry-run'])
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toContain('pause — pause after the canary (rec-1): wait for a person\n    go on with: svcops runs promote ID')
    expect(dry.stdout.indexOf('pause — ')).toBeLessThan(dry.stdout.indexOf('[rec-2] batch 1: stop'))
    let pid = 0
    const started = cli(['upgrade', 'recording', '--to', '1.5.0', '--pause-after-canary', '--yes'], {
      onSpawn: (p) => (pid = p),
    })
    const id = await waitForPausedRun(lab.runsDir, [])
    process.kill(pid, 'SIGKILL')
    await started
    const shown = await cliHere(['runs', 'list', '--json'])
    expect((JSON.parse(shown.stdout) as { runs: { id: string; phase: string }[] }).runs.find((r) => r.id === id)?.phase).toBe('interrupted')

    const resumed = cli(['resume', id])
    // It waits again: the record says so once more (the resume cleared it first).
    await waitFor(() => {
      const r = JSON.parse(readFileSync(join(lab.runsDir, id, 'run.json'), 'utf8')) as { pausedAt?: string; pid: number }
      return r.pausedAt !== undefined && r.pid !== pid
    })
    const watch = cli(['runs', 'watch', id, '--json'], { runsDir: elsewhere })
    const aborted = await cliHere(['runs', 'abort', id], { runsDir: elsewhere })
    expect(aborted.code, aborted.stderr).toBe(0)
    expect(aborted.stdout).toMatch(/aborted; it rolls back what it changed \(by recording \(database role\), kept in the svcops schema of /)

    const ended = await resumed
    expect(ended.code, ended.stderr).toBe(4)
    expect(ended.stderr).toContain(`Aborted after the canary by `)
    // Its last line sums it up as a successful run's does: outcome, what changed, downtime, the report.
    expect(ended.stderr.trim().split('\n').at(-1)).toMatch(
      new RegExp(
        `^Run ${id}: Upgrade of lab to 1\\.5\\.0 was aborted after the canary and rolled back \\(database kept\\).* Every host on its version before the run; downtime .* Report: .*${id}/report\\.md$`,
      ),
    )
    expect(await lab.versions()).toEqual({ 'rec-1': '1.4.0', 'rec-2': '1.4.0' })
    expect(
      journalOf(id)
        .filter((e) => e.step === 'pause')
        .map((e) => e.status),
    ).toEqual(['start', 'start', 'failed'])

    const watched = await watch
    expect(watched.code, watched.stderr).toBe(4)
    const objects = watched.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; step?: string; status?: string; exitCode?: number; phase?: string; summary?: string })
    expect(objects.some((o) => o.kind === 'step' && o.step === 'rollback:verify-host' && o.status === 'ok')).toBe(true)
    expect(objects.at(-1)).toMatchObject({ kind: 'end', ok: false, phase: 'rolled-back', exitCode: 4 })
    expect(objects.at(-1)?.summary).toMatch(/: Upgrade of lab to 1\.5\.0 was aborted after the canary and rolled back \(database kept\)/)
    expect(objects.at(-1)?.summary).toMatch(new RegExp(`Report: svcops runs show ${id} --env lab$`))
  }, 600_000)

  it('waits after the canary, shows it paused, and goes on when promoted; runs watch follows it to its last line', async () => {
    const known = runIds()
    const upgrade = cli(['upgrade', 'recording', '--to', '1.5.0', '--batch', '1', '--pause-after-canary', '--yes'])
    const id = await waitForPausedRun(lab.runsDir, known)
    let watching = ''
    const watch = cli(['runs', 'watch', id], { onStdout: (text) => (watching = text) })

    // The canary is upgraded and verified; the other host waits on 1.4.0.
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0', 'rec-2': '1.4.0' })
    const shown = await cliHere(['runs', 'show', id])
    expect(shown.stdout).toContain(
      `is paused after the canary since ${(JSON.parse(readFileSync(join(lab.runsDir, id, 'run.json'), 'utf8')) as { pausedAt: string }).pausedAt.slice(11, 19)} and keeps its lock (go on: svcops runs promote ${id}; roll back: svcops runs abort ${id})`,
    )
    const listed = await cliHere(['runs', 'list'])
    expect(listed.stdout).toMatch(new RegExp(`${id} +lab +recording +upgrade +1\\.5\\.0 +paused`))
    // Another upgrade cannot start: the paused run keeps the environment's lock.
    const second = await cliHere(['upgrade', 'recording', '--to', '1.5.0', '--yes'])
    expect(second.code, second.stderr).toBe(3)

    // A dry run of either decision says where it would be kept, and keeps nothing: the run goes on
    // waiting, and the promotion below is the first decision, which it could not be after another.
    for (const decision of ['abort', 'promote'] as const) {
      const dry = await cliHere(['runs', decision, id, '--dry-run', '--json'])
      expect(dry.code, dry.stderr).toBe(0)
      expect(JSON.parse(dry.stdout)).toMatchObject({ ok: true, dryRun: true, runId: id, decision })
      expect((JSON.parse(dry.stdout) as { wouldKeep: string[] }).wouldKeep).toContain(join(lab.runsDir, id))
    }
    expect(existsSync(join(lab.runsDir, id, 'decision.json'))).toBe(false)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0', 'rec-2': '1.4.0' })

    // The person watching sees the wait before deciding (runs watch reads the run twice a second).
    await waitFor(() => watching.includes('Paused after the canary since'))
    const promoted = await cliHere(['runs', 'promote', id])
    expect(promoted.code, promoted.stderr).toBe(0)
    expect(promoted.stdout).toMatch(
      new RegExp(
        `^Run ${id} promoted; it goes on after its canary \\(by \\S+@\\S+ \\(local account\\), kept in .*\\)\\. Follow it: svcops runs watch ${id}`,
      ),
    )

    const ended = await upgrade
    expect(ended.code, ended.stderr).toBe(0)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0', 'rec-2': '1.5.0' })
    const pause = journalOf(id).filter((e) => e.step === 'pause')
    expect(pause.map((e) => e.status)).toEqual(['start', 'ok'])
    // The decision is kept in the store first, then in the run folder: the holder acts on whichever
    // copy it reads first, both the same promotion, authenticated by the store or this machine.
    expect(pause[1]?.detail).toMatch(/^promoted by \S+ \((local account|database role)\) at 20/)

    const watched = await watch
    expect(watched.code, watched.stderr).toBe(0)
    const lines = watched.stdout.trim().split('\n')
    expect(lines).toContainEqual(expect.stringMatching(/^\d\d:\d\d:\d\d {2}✓ \[rec-1\] verify-host/))
    expect(lines).toContainEqual(expect.stringMatching(/^\d\d:\d\d:\d\d {2}✓ pause \([^)]+\): promoted by /))
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^Paused after the canary since \\d\\d:\\d\\d:\\d\\d; go on: svcops runs promote ${id} {3}roll back: svcops runs abort ${id}$`,
        ),
      ),
    )
    // Each step in the order it was journaled, the canary's before the pause, the batch's after it.
    const at = (pattern: RegExp) => lines.findIndex((l) => pattern.test(l))
    expect(at(/✓ \[rec-1\] verify-host/)).toBeLessThan(at(/✓ pause/))
    expect(at(/✓ pause/)).toBeLessThan(at(/✓ \[rec-2\] verify-host/))
    expect(lines.at(-2)).toMatch(new RegExp(`^Run ${id}: Upgrade of lab to 1\\.5\\.0 succeeded.* Report: .*${id}/report\\.md$`))
    expect(lines.at(-1)).toBe('(exit 0: the run succeeded)')

    // The report draws the wait, and nothing can decide a run that is not waiting.
    const html = readFileSync(join(lab.runsDir, id, 'report.html'), 'utf8')
    expect(html).toMatch(/<rect class="bar stage-paused status-ok" data-step="pause"/)
    const late = await cliHere(['runs', 'abort', id])
    expect(late.code).toBe(2)
    expect(late.stderr).toContain(`Run ${id} is not waiting after its canary (it is succeeded)`)
    const lateDry = await cliHere(['runs', 'abort', id, '--dry-run'])
    expect(lateDry.code).toBe(2)
    expect(lateDry.stderr).toBe(late.stderr)
  }, 600_000)
})

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    let done = false
    try {
      done = check()
    } catch {
      // run.json is replaced atomically, but may not be there yet
    }
    if (done) return
    await new Promise((r) => setTimeout(r, 250))
  }
  throw new Error('the condition did not come true within 300 s')
}
