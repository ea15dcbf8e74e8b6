/**
 * The promotion gate on the lab (real PostgreSQL, sandboxed hosts, the runs kept in the database's
 * `svcops` schema): two stacks side by side, `staging` and `prod` (`svcops:upgrade.promoteFrom:
 * staging`), over the lab's one host and database. prod's upgrade to V is refused before anything
 * starts until staging's run store holds a succeeded upgrade to V; the dry run shows the gate as
 * read; `--skip-promotion-gate` goes on and the run and its report keep what was skipped.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { processInfo } from '../support/supervisorctl.ts'
import { runCliInProcess, startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab
let staging: string
let prod: string

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.5.0', recordings: 2 })
  const doc = parseYaml(readFileSync(lab.envFile, 'utf8')) as { config: Record<string, unknown> }
  staging = join(lab.dir, 'stacks', 'Pulumi.staging.yaml')
  prod = join(lab.dir, 'stacks', 'Pulumi.prod.yaml')
  writeFileSync(staging, toYaml({ ...doc, config: { ...doc.config, 'svcops:environment': 'staging' } }))
  writeFileSync(
    prod,
    toYaml({
      ...doc,
      config: { ...doc.config, 'svcops:environment': 'prod', 'svcops:upgrade': { promoteFrom: 'staging', promoteMaxAgeHours: 24 } },
    }),
  )
}, 600_000)

afterAll(async () => {
  await lab?.stop()
})

/** The run records of `environment` in the runs folder, newest first. */
function runsOf(environment: string): Array<{ id: string; phase: string; params: Record<string, unknown> }> {
  if (!existsSync(lab.runsDir)) return []
  return readdirSync(lab.runsDir)
    .map((id) => join(lab.runsDir, id, 'run.json'))
    .filter((f) => existsSync(f))
    .map(
      (f) =>
        JSON.parse(readFileSync(f, 'utf8')) as {
          id: string
          environment: string
          phase: string
          startedAt: string
          params: Record<string, unknown>
        },
    )
    .filter((r) => r.environment === environment)
    .sort((a, b) => b.startedAt.localeCompare(a.startedAt))
}

const upgrade = (stack: string, to: string, ...more: string[]) =>
  runCliInProcess(['--stack-file', stack, 'upgrade', 'recording', '--to', to, ...more], { SVCOPS_RUNS_DIR: lab.runsDir })

describe('svcops:upgrade.promoteFrom: staging', () => {
  it("refuses prod's upgrade to 2.0.0 before anything starts while staging has none (exit 5, one sentence naming staging)", async () => {
    const host = lab.env().recording!.hosts[0]!
    const before = processInfo(host, 'svc-recording')
    const out = await upgrade(prod, '2.0.0', '--yes')
    expect(out.code).toBe(5)
    expect(out.stderr).toContain(
      "svcops:upgrade.promoteFrom: environment 'staging' has no upgrade of the recording service to 2.0.0 in its run store; the upgrade of 'prod' to 2.0.0 was refused before anything started.",
    )
    expect(out.stderr).toContain('svcops upgrade recording --env staging --to 2.0.0')
    expect(processInfo(host, 'svc-recording')).toEqual(before)
    expect(await lab.versions()).toEqual({ 'rec-1': '1.5.0' })
    expect(runsOf('prod')).toEqual([])
  }, 300_000)

  it('the dry run shows the gate as it would judge it now', async () => {
    const out = await upgrade(prod, '2.0.0', '--dry-run')
    expect(out.code).toBe(0)
    expect(out.stdout).toContain(
      "promotion gate (svcops:upgrade.promoteFrom: staging, within 24 h): would refuse: environment 'staging' has no upgrade of the recording service to 2.0.0",
    )
  }, 300_000)

  it('--skip-promotion-gate where no gate is set is bad input (exit 2), nothing started', async () => {
    const out = await upgrade(staging, '2.0.0', '--skip-promotion-gate', '--yes')
    expect(out.code).toBe(2)
    expect(out.stderr).toContain("--skip-promotion-gate: given, but the stack of 'staging' sets no svcops:upgrade.promoteFrom")
    expect(runsOf('staging')).toEqual([])
  }, 300_000)

  it('lets prod go once staging upgraded to the same version, and the run names the staging run', async () => {
    const first = await upgrade(staging, '2.0.0', '--yes')
    expect(first.code).toBe(0)
    const stagingRun = runsOf('staging')[0]!
    expect(stagingRun.phase).toBe('succeeded')

    const plan = await upgrade(prod, '2.0.0', '--dry-run')
    expect(plan.stdout).toContain(
      `promotion gate (svcops:upgrade.promoteFrom: staging, within 24 h): passes: run ${stagingRun.id} upgraded 'staging' to 2.0.0`,
    )

    // The host is already on 2.0.0 (staging and prod share the lab): the run passes the gate, then changes nothing.
    const out = await upgrade(prod, '2.0.0', '--yes')
    expect(out.code).toBe(0)
    const prodRun = runsOf('prod')[0]!
    expect(prodRun.params.promotion).toMatchObject({ from: 'staging', run: stagingRun.id })
  }, 600_000)

  it('--skip-promotion-gate goes on without staging, and the run and its report keep what the gate would have said', async () => {
    const out = await upgrade(prod, '2.1.0', '--skip-promotion-gate', '--yes')
    expect(out.code).toBe(0)
    expect(out.stderr + out.stdout).toContain("--skip-promotion-gate: the promotion gate from 'staging' was skipped")
    expect(await lab.versions()).toEqual({ 'rec-1': '2.1.0' })
    const run = runsOf('prod')[0]!
    expect(run.phase).toBe('succeeded')
    expect(run.params.skipPromotionGate).toBe(true)
    expect(run.params.promotion).toMatchObject({ from: 'staging', skipped: true })
    expect(String((run.params.promotion as { finding: string }).finding)).toContain(
      "it would have refused: environment 'staging' has no upgrade of the recording service to 2.1.0",
    )
    const report = readFileSync(join(lab.runsDir, run.id, 'report.md'), 'utf8')
    expect(report).toContain("promotion gate from 'staging': SKIPPED (--skip-promotion-gate; it would have refused")
  }, 600_000)
})
