/**
 * What an operator meets at the terminal before anything runs, and with a run already recorded: a
 * typo of a required option named as the typo, `--yes` accepted by resume, `plan live` without
 * `--from` asking for it (or an environment), `--pause-after-canary` refused for a live
 * system whose types run one instance each, `runs show --open` without a display saying so, and `runs watch` / `runs promote|abort`
 * on a finished run (the journal of test/runs/failed-run.ts: rolled back after batch 2 failed).
 */
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runSvcops, runSvcopsInProcess } from '../support/cli.ts'
import { writeFailedRun } from '../runs/failed-run.ts'
import { emptyRecordingParams } from '../../src/recording/recording-params.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { Journal } from '../../src/runs/journal.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'
import { liveDescription } from '../../src/live/live-description.ts'

// writeFailedRun makes the recording service known to reports, as the CLI does.

const RUN = '20261124T023000Z-a1b2c3'

// Each behaviour at the process (exit 2 with the sentence on stderr, exit 0 with the report on stdout
// and where it went on stderr, exit 4) is read from a real `svcops`; the other answers come from the
// same command run in this process (runSvcopsInProcess), which spares a Node start of ~0.4 s of CPU each.

describe('options an operator mistypes or expects', () => {
  it('a typo of a required option is named as the typo with its suggestion, not as the option missing', async () => {
    const typo = await runSvcops(['upgrade', 'recording', '--env', 'nowhere', '--too', '2.0.0'])
    expect(typo.code).toBe(2)
    expect(typo.stderr).toContain("error: unknown option '--too'")
    expect(typo.stderr).toContain('(Did you mean --to?)')
    expect(typo.stderr).not.toContain('required option')
    const missing = await runSvcopsInProcess(['upgrade', 'recording', '--env', 'nowhere'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("error: required option '--to <version>' not specified")
  })

  it('resume accepts --yes like every command that changes an environment', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'svcops-frictions-'))
    const resumed = await runSvcopsInProcess(['resume', '20990101T000000Z-abcdef', '--yes'], { env: { SVCOPS_RUNS_DIR: runsDir } })
    expect(resumed.code).toBe(2)
    expect(resumed.stderr).not.toContain('unknown option')
    expect(resumed.stderr).toContain("There is no run '20990101T000000Z-abcdef'")
  })

  it('plan live without --from asks for it, or for an environment to read it from', async () => {
    const plan = await runSvcopsInProcess(['plan', 'live', '--to', '7.0.0'])
    expect(plan.code).toBe(2)
    expect(plan.stderr).toContain(
      'svcops: --from: missing; expected the version running now (e.g. 3.2.0), or --env ENV to read it from that live system.',
    )
  })

  it('upgrade live refuses --pause-after-canary in one sentence where every type runs one instance (no type has a canary)', async () => {
    const live = await runSvcopsInProcess(['upgrade', 'live', '--env', 'dev', '--to', '7.0.0', '--pause-after-canary'])
    expect(live.code).toBe(2)
    expect(live.stderr).toMatch(
      /^svcops: --pause-after-canary: \S*Pulumi\.dev\.yaml runs one instance of each live component type, so no type has a canary to wait after; expected svcops:live\.hosts with a type on more than one host\.$/m,
    )
  })
})

describe('a recorded run, from the terminal', () => {
  const base = mkdtempSync(join(tmpdir(), 'svcops-frictions-'))
  writeFailedRun({ base })
  const env = { SVCOPS_RUNS_DIR: base, DISPLAY: '', WAYLAND_DISPLAY: '' }

  it('runs show --open without a display writes report.html and says where, and that nothing could open it', async () => {
    const shown = await runSvcops(['runs', 'show', RUN, '--open'], { env })
    expect(shown.code, shown.stderr).toBe(0)
    const file = join(base, RUN, 'report.html')
    expect(existsSync(file)).toBe(true)
    expect(shown.stderr).toContain(`Report: ${file}`)
    expect(shown.stderr).toContain(
      `--open: no display here (neither DISPLAY nor WAYLAND_DISPLAY is set); open ${file} in a browser on a machine with one.`,
    )
    expect(shown.stdout).toMatch(/^Upgrade of prod to 2\.0\.0 failed in batch 2 on rec-5/)
  })

  it('runs watch of a finished run prints its steps in order, its last line, and exits as it ended (4: rolled back)', async () => {
    const watched = await runSvcops(['runs', 'watch', RUN], { env })
    expect(watched.code, watched.stderr).toBe(4)
    const lines = watched.stdout.trim().split('\n')
    expect(lines[0]).toBe('02:30:00  … preflight')
    expect(lines[1]).toBe('02:30:03  ✓ preflight (3.0 s)')
    expect(lines).toContainEqual(
      expect.stringMatching(/^02:3\d:\d\d {2}✗ \[rec-5\] start: svc-recording on rec-5 exited: invalid logLevel 'loud'$/),
    )
    expect(lines.at(-2)).toMatch(
      new RegExp(`^Run ${RUN}: Upgrade of prod to 2\\.0\\.0 failed in batch 2 on rec-5 .* Report: ${base}/${RUN}/report\\.md$`),
    )
    expect(lines.at(-1)).toBe('(exit 4: the run failed and was rolled back)')
    const json = await runSvcopsInProcess(['runs', 'watch', RUN, '--json'], { env })
    expect(json.code).toBe(4)
    const objects = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(objects[0]).toMatchObject({ kind: 'step', step: 'preflight', status: 'start' })
    expect(objects.at(-1)).toMatchObject({ kind: 'end', ok: false, runId: RUN, phase: 'rolled-back', exitCode: 4 })
  })

  it('runs watch of a run that is not there exits 2 naming it', async () => {
    const watched = await runSvcopsInProcess(['runs', 'watch', '20990101T000000Z-abcdef'], { env })
    expect(watched.code).toBe(2)
    expect(watched.stderr).toContain("There is no run '20990101T000000Z-abcdef'")
  })

  it('runs promote and abort refuse a run that is not waiting after its canary, keeping nothing', async () => {
    for (const decision of ['promote', 'abort']) {
      const refused = await runSvcopsInProcess(['runs', decision, RUN], { env })
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain(
        `svcops: Run ${RUN} is not waiting after its canary (it is rolled-back); svcops runs ${decision} applies to a run started with --pause-after-canary while it waits.`,
      )
      expect(existsSync(join(base, RUN, 'decision.json'))).toBe(false)
    }
  })
})

describe('an interrupted backup run', () => {
  it('is not resumed (the upgrade playbook would take it for an upgrade): one sentence, exit 2, and the command that takes a new one', async () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-backup-run-'))
    const record = newRunRecord({
      kind: 'backup',
      system: recordingDescription.name,
      environment: 'lab',
      envFile: '/nowhere/Pulumi.lab.yaml',
      params: emptyRecordingParams(),
    })
    Journal.create({ ...record, phase: 'interrupted' }, base)
    const resumed = await runSvcopsInProcess(['resume', record.id, '--yes'], { env: { SVCOPS_RUNS_DIR: base } })
    expect(resumed.code, resumed.stderr).toBe(2)
    expect(resumed.stderr).toContain(
      `svcops: run ${record.id}: a backup run (interrupted); expected an upgrade or rollback run, since a backup is not resumed but taken again.\nTake a new one: svcops backup run --env lab`,
    )
    expect(Journal.open(record.id, base).run.phase).toBe('interrupted')
  })
})

describe("resume finds the run's system by the name its record gives", () => {
  const interrupted = (system: string, params: Record<string, unknown>) => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-resume-system-'))
    const record = newRunRecord({
      kind: 'upgrade',
      system,
      environment: 'lab',
      envFile: '/nowhere/Pulumi.lab.yaml',
      params,
      targetVersion: '7.0.0',
    })
    Journal.create({ ...record, phase: 'interrupted' }, base)
    return { base, id: record.id }
  }

  it('refuses --retry of a live run in one sentence naming how that system starts again; the run is left as it was', async () => {
    const { base, id } = interrupted(liveDescription.name, { components: ['system-controller'] })
    const resumed = await runSvcopsInProcess(['resume', id, '--retry'], { env: { SVCOPS_RUNS_DIR: base } })
    expect(resumed.code, resumed.stderr).toBe(2)
    expect(resumed.stderr).toContain(
      `svcops: --retry: run ${id} is an upgrade of the live production system; expected a run of a system that retries its upgrades (the recording service), since the live production system is started again with svcops upgrade live.`,
    )
    expect(Journal.open(id, base).run.phase).toBe('interrupted')
  })

  it('refuses a run of a system svcops does not run, listing the systems there are', async () => {
    const { base, id } = interrupted('teleprompter', {})
    const resumed = await runSvcopsInProcess(['resume', id, '--yes'], { env: { SVCOPS_RUNS_DIR: base } })
    expect(resumed.code, resumed.stderr).toBe(2)
    expect(resumed.stderr).toContain("svcops: system: 'teleprompter' is not a system svcops runs; expected one of recording, live.")
    expect(Journal.open(id, base).run.phase).toBe('interrupted')
  })
})
