/**
 * The live system's runs kept with the environment, on a real live lab host (5.2.0 -> 7.0.0): the
 * upgrade writes its record and journal to files under /var/lib/svcops/runs on the live host as it
 * goes, so from a machine with an empty local runs folder (another `SVCOPS_RUNS_DIR`) `runs list`,
 * `runs show` and `rollback live` work with the stack file alone, and the rollback is kept there too;
 * a journal entry the host's SSH user adds afterwards makes the run refused (src/runs/run-mac.ts).
 */
import { appendFileSync, lstatSync, mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { LIVE_RUNS_PATH } from '../../src/live/hosts/live-host-run-store.ts'
import { listRuns } from '../../src/runs/journal.ts'
import { runSvcopsInProcess } from '../support/cli.ts'
import { gateIds, startLiveLab, type LiveLab } from '../support/live-lab.ts'

let lab: LiveLab

beforeAll(async () => {
  lab = await startLiveLab({ version: '5.2.0', cli: 'in-process' })
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

interface Listed {
  runs: { id: string; phase: string; kind: string; system: string }[]
}

/** `svcops --stack-file <lab> ...args` from a machine whose local runs folder is `runsDir`. */
function elsewhere(args: string[], runsDir: string) {
  return runSvcopsInProcess(['--stack-file', lab.envFile, ...args], { env: { SVCOPS_RUNS_DIR: runsDir } })
}

it('another machine lists, shows and rolls back the live runs from the live host alone', async () => {
  const before = lab.snapshot()
  const up = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--yes', '--ack', gateIds(lab.live(), '5.2.0', '7.0.0').join(',')])
  expect(up.code, up.stderr).toBe(0)
  const run = listRuns(lab.runsDir)[0]
  const id = run?.id ?? ''
  const envName = run?.environment ?? ''

  // On the host: one record file and one journal file per run, regular files (written through a rename, not links),
  // and the run's backup of the files it changes (what a rollback from another machine puts back).
  const files = readdirSync(lab.file(LIVE_RUNS_PATH)).sort()
  expect(files).toEqual([`${id}.backup`, `${id}.journal.jsonl`, `${id}.json`].sort())
  files.splice(files.indexOf(`${id}.backup`), 1)
  for (const f of files) expect(lstatSync(join(lab.file(LIVE_RUNS_PATH), f)).isFile()).toBe(true)

  const other = mkdtempSync(join(tmpdir(), 'svcops-other-machine-'))
  const listed = await elsewhere(['--env', envName, 'runs', 'list', '--json'], other)
  expect(listed.code, listed.stderr).toBe(0)
  expect((JSON.parse(listed.stdout) as Listed).runs.find((r) => r.id === id)).toMatchObject({
    phase: 'succeeded',
    kind: 'upgrade',
    system: 'live',
  })
  const shown = await elsewhere(['--env', envName, 'runs', 'show', id, '--json'], other)
  expect(shown.code, shown.stderr).toBe(0)
  expect((JSON.parse(shown.stdout) as { timeline: unknown[] }).timeline.length).toBeGreaterThan(5)

  const rolledBack = await elsewhere(['--env', envName, 'rollback', 'live', '--yes'], other)
  expect(rolledBack.code, `${rolledBack.stdout}\n${rolledBack.stderr}`).toBe(0)
  expect(Object.values(lab.versions())).toEqual(['5.2.0', '5.2.0', '5.2.0', '5.2.0'])
  expect(lab.snapshot()).toEqual(before)

  // A third machine reads the run as it ended, from the host.
  const third = await elsewhere(['--env', envName, 'runs', 'list', '--json'], mkdtempSync(join(tmpdir(), 'svcops-third-')))
  expect((JSON.parse(third.stdout) as Listed).runs.find((r) => r.id === id)?.phase).toBe('rolled-back')

  // The host's SSH user adds a step to the run's journal (a rollback's restore of a file of its choice): the run,
  // signed with the lab's run key, is refused by the views and by a resume, and nothing is copied here.
  const journalFile = join(lab.file(LIVE_RUNS_PATH), `${id}.journal.jsonl`)
  const forged = { time: new Date().toISOString(), step: 'rollback:restore-config', status: 'start', disruptive: true }
  appendFileSync(journalFile, `${JSON.stringify(forged)}\n`)
  const fourth = mkdtempSync(join(tmpdir(), 'svcops-fourth-'))
  const refusedShow = await elsewhere(['--env', envName, 'runs', 'show', id], fourth)
  expect(refusedShow.code, refusedShow.stderr).toBe(0)
  expect(refusedShow.stdout).toContain(`Run ${id}: refused.`)
  expect(refusedShow.stdout).toContain('fails its MAC check')
  const refusedResume = await elsewhere(['--env', envName, 'resume', id, '--rollback', '--yes'], fourth)
  expect(refusedResume.code, refusedResume.stdout).toBe(2)
  expect(refusedResume.stderr).toContain('fails its MAC check')
  expect(readdirSync(fourth)).toEqual([])

  for (const text of lab.everythingPrinted()) for (const psk of lab.psks()) expect(text.includes(psk)).toBe(false)
}, 900_000)
