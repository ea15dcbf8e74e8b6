/**
 * `svcops upgrade live --dry-run` on the shipped Kubernetes stacks (prod, staging) from a machine
 * whose kubeconfig names the stack's context but whose API server cannot be reached (a loopback port
 * nothing listens on): the preflight says which API it could not reach, the steps that depend on the
 * running release say it was not read, and `--from` plans them from the release given.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { PlannedStep } from '../../src/runs/engine.ts'
import { ROOT, runSvcopsInProcess } from '../support/cli.ts'

interface DryRunAnswer {
  ok: boolean
  summary: { blockers: { step: string; reason: string; exitCode: number }[]; command: string }
  steps: PlannedStep[]
}

let env: Record<string, string>

beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-live-unread-'))
  const kubeconfig = join(dir, 'kubeconfig')
  // Port 9 (discard) on the loopback: nothing listens there, so every API call is refused at once.
  writeFileSync(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters:
  - name: unreachable
    cluster: { server: 'https://127.0.0.1:9' }
users:
  - name: nobody
    user: { token: not-a-token }
contexts:
  - name: prod-cluster
    context: { cluster: unreachable, user: nobody }
  - name: staging-cluster
    context: { cluster: unreachable, user: nobody }
current-context: prod-cluster
`,
  )
  env = { KUBECONFIG: kubeconfig, SVCOPS_RUNS_DIR: join(dir, 'runs') }
})

function actionsOf(answer: DryRunAnswer, step: string): string {
  return answer.steps
    .filter((s) => s.step === step)
    .flatMap((s) => s.actions)
    .join('\n')
}

describe('a live dry run that cannot read the running release', () => {
  it('says which API it could not reach and that the gates depend on the release, instead of refusing an empty version', async () => {
    const stackBefore = readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')
    const run = await runSvcopsInProcess(['upgrade', 'live', '--env', 'prod', '--to', '7.0.0', '--dry-run', '--json'], { env })
    expect(run.stderr).not.toContain("The version ''")
    const answer = JSON.parse(run.stdout) as DryRunAnswer
    expect(answer.summary.blockers).toEqual([
      expect.objectContaining({
        step: 'preflight',
        reason: expect.stringContaining('The Kubernetes API at https://127.0.0.1:9 could not be reached') as string,
      }),
    ])
    expect(run.code).toBe(answer.summary.blockers[0]?.exitCode)
    expect(actionsOf(answer, 'gates')).toContain('could not be read (see the preflight)')
    expect(actionsOf(answer, 'gates')).toContain('give --from VERSION')
    expect(actionsOf(answer, 'write-config')).toContain('give --from VERSION')
    expect(readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')).toBe(stackBefore)
  })

  it('plans the gates, the configuration and the way back from --from, and leaves --from out of the command to go ahead with', async () => {
    const run = await runSvcopsInProcess(['upgrade', 'live', '--env', 'prod', '--to', '7.0.0', '--from', '6.2.0', '--dry-run', '--json'], {
      env,
    })
    const answer = JSON.parse(run.stdout) as DryRunAnswer
    expect(answer.summary.blockers.map((b) => b.step)).toEqual(['preflight', 'gates'])
    expect(answer.summary.blockers[1]?.reason).toContain('block the upgrade from 6.2.0 to 7.0.0')
    expect(actionsOf(answer, 'gates')).toContain('7.0.0/api-v3')
    // 6.2.0 -> 7.0.0 keeps the PSK's rules: the plan reads whether it passes, rather than not knowing.
    expect(actionsOf(answer, 'write-config')).not.toContain('give --from VERSION')
    expect(actionsOf(answer, 'rollback:check')).toContain('the metric names of 6.2.0')
    expect(actionsOf(answer, 'preflight')).toContain('--from 6.2.0: planned from only when the running release cannot be read')
    expect(answer.summary.command).toMatch(/^svcops upgrade live --env prod --to 7\.0\.0 --ack 7\.0\.0\/api-v3,/)
  })

  it('refuses --from without --dry-run in one sentence, before reading anything', async () => {
    const run = await runSvcopsInProcess(['upgrade', 'live', '--env', 'prod', '--to', '7.0.0', '--from', '6.2.0', '--yes'], { env })
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      "svcops: --from: '6.2.0' is read by the dry run only (a run reads the release the live system runs); expected it with --dry-run.\n",
    )
  })

  it('refuses a --from that is not a version, naming it', async () => {
    const run = await runSvcopsInProcess(['upgrade', 'live', '--env', 'prod', '--to', '7.0.0', '--from', 'six', '--dry-run'], { env })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("--from: 'six' is not a version")
  })
})

describe('the staging stack', () => {
  it('configures the live system on Kubernetes, so upgrade live plans there (svcops:live is no longer missing)', async () => {
    const run = await runSvcopsInProcess(
      ['upgrade', 'live', '--env', 'staging', '--to', '7.1.0', '--from', '7.0.1', '--dry-run', '--json'],
      {
        env,
      },
    )
    expect(run.stderr).not.toContain('svcops:live: missing')
    const answer = JSON.parse(run.stdout) as DryRunAnswer
    expect(actionsOf(answer, 'preflight')).toContain('on svc-staging')
    expect(answer.summary.blockers[0]?.reason).toContain('https://127.0.0.1:9')
    expect(actionsOf(answer, 'gates')).not.toContain('give --from VERSION')
  })
})

describe('svcops upgrade live --help', () => {
  it("lists the procedure's steps in the order the playbook runs them, as its dry run shows them", async () => {
    const help = await runSvcopsInProcess(['upgrade', 'live', '--help'])
    const block = help.stdout.slice(help.stdout.indexOf('Procedure'), help.stdout.indexOf('On failure after the first stop'))
    const listed = [...block.matchAll(/^ {2}([a-z-]+(?: component)?)\s/gm)].flatMap((m) =>
      m[1] === 'per component' ? ['install', 'start', 'check'] : [m[1] ?? ''],
    )
    const run = await runSvcopsInProcess(['upgrade', 'live', '--env', 'prod', '--to', '7.0.0', '--from', '6.2.0', '--dry-run', '--json'], {
      env,
    })
    const planned: string[] = []
    for (const s of (JSON.parse(run.stdout) as DryRunAnswer).steps) {
      // The procedure's own steps, once each (a site's steps and the rollback are not the procedure).
      if (s.step.startsWith('site-') || s.step.startsWith('rollback:') || planned.includes(s.step)) continue
      planned.push(s.step)
    }
    expect(listed).toEqual(planned)
  })
})
