/**
 * `svcops upgrade recording --env prod --to 2.0.0 --dry-run` on the shipped prod stack (platform
 * kubernetes): the plan is the Kubernetes steps with the exact `pulumi` commands and API calls. The
 * API answers come from an in-test STAND-IN of the API server (test/support/kube-api-standin.ts),
 * reached through the stack's `kubernetes:context` in KUBECONFIG; `pulumi` on PATH is an argv
 * recorder (test/support/pulumi-argv-recorder.ts) that shows the dry run starts no pulumi at all.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PlannedStep } from '../../src/runs/engine.ts'
import { ROOT, runSvcops } from '../support/cli.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import { createPulumiArgvRecorder, type ArgvRecorder } from '../support/pulumi-argv-recorder.ts'

let api: KubeApiStandin
let recorder: ArgvRecorder

beforeAll(async () => {
  api = await startKubeApiStandin({ version: '1.5.0' }, 'prod-cluster')
  recorder = createPulumiArgvRecorder()
})
afterAll(() => api.close())

function actionsOf(steps: PlannedStep[], name: string): string[] {
  return steps.filter((s) => s.step === name).flatMap((s) => s.actions)
}

describe('svcops upgrade recording --env prod --to 2.0.0 --dry-run', () => {
  it('plans the Kubernetes steps with the exact pulumi commands and API calls, changes nothing, and exits 1 where the lock cannot be read', async () => {
    const stackBefore = readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')
    const run = await runSvcops(['upgrade', 'recording', '--env', 'prod', '--to', '2.0.0', '--dry-run', '--json'], {
      env: {
        KUBECONFIG: api.kubeconfig,
        PATH: `${recorder.binDir}:${process.env.PATH ?? ''}`,
        SVCOPS_RUNS_DIR: mkdtempSync(join(tmpdir(), 'svcops-k8s-dry-')),
      },
    })
    // This machine cannot read the database's password: the run would stop at its lock, so the dry run
    // shows the whole plan and then ends as the run would (exit 1), saying why.
    expect(run.code, run.stderr).toBe(1)
    const plan = JSON.parse(run.stdout) as {
      ok: boolean
      summary: { blockers: { step: string; reason: string; exitCode: number }[] }
      batches: string[][]
      steps: PlannedStep[]
    }
    expect(plan.ok).toBe(false)
    expect(plan.summary.blockers).toEqual([
      expect.objectContaining({
        step: 'preflight',
        exitCode: 1,
        reason: expect.stringContaining("The run lock of environment 'prod' could not be read") as string,
      }),
    ])
    expect(plan.batches).toEqual([['svc-recording']])
    const inProject = `   (in ${ROOT.replace(/\/$/, '')})`
    expect(actionsOf(plan.steps, 'preflight')).toEqual(
      expect.arrayContaining([
        `the Pulumi CLI and its version: pulumi version${inProject}`,
        `the stack 'prod' exists and no update of it runs: pulumi stack ls --json --non-interactive${inProject}`,
        'the Kubernetes API with context prod-cluster: GET /version; GET /apis/apps/v1/namespaces/svc-prod/deployments/svc-recording',
        `no change but the recording service's version: pulumi preview --stack prod --json --refresh --non-interactive${inProject}; refused, listing every other change, and a field the program owns that somebody changed outside svcops (kubectl edit), naming the manager`,
      ]),
    )
    expect(actionsOf(plan.steps, 'preflight').join('\n')).toContain('patch apps/deployments svc-recording; ')
    expect(actionsOf(plan.steps, 'preflight').join('\n')).not.toContain('deployments/scale')
    // The stop is the program's: the stack holds 0 replicas and pulumi up applies them (svcops writes no Deployment).
    const rule =
      'only svc-recording-deployment (image, version label, replicas) and svc-svcops-stack (data) may change; anything else fails the step'
    const up = `pulumi up --stack prod --yes --refresh --non-interactive --skip-preview --target URN --target ...${inProject} with a --target per changed URN`
    expect(actionsOf(plan.steps, 'stop')).toEqual([
      `hold the Deployment at 0 replicas in the stack file: pulumi config set --path --stack prod --non-interactive -- svcops:deploy.recording.heldReplicas 0${inProject}`,
      `pulumi preview --stack prod --json --refresh --non-interactive${inProject}: ${rule}`,
      `${up}: the program sets the Deployment's replicas to 0`,
      'GET /api/v1/namespaces/svc-prod/pods?labelSelector=app.kubernetes.io/name=recording-service,app.kubernetes.io/instance=svc-recording until no pod is left, at most 60 s',
    ])
    expect(actionsOf(plan.steps, 'install')).toEqual([
      `set svcops:recording.version to 2.0.0 in the stack file: pulumi config set --path --stack prod --non-interactive -- svcops:recording.version 2.0.0${inProject}`,
    ])
    expect(actionsOf(plan.steps, 'start')).toEqual([
      `hold the Deployment at 1 replica: pulumi config set --path --stack prod --non-interactive -- svcops:deploy.recording.heldReplicas 1${inProject}`,
      `pulumi preview --stack prod --json --refresh --non-interactive${inProject} (same rule), then ${up}: Recreate stops every old pod, one new pod starts and migrates; pulumi up waits until it is ready`,
      `release the hold: pulumi config rm --path --stack prod --non-interactive -- svcops:deploy.recording.heldReplicas${inProject}`,
      `pulumi preview --stack prod --json --refresh --non-interactive${inProject} (same rule), then ${up}: the Deployment runs the stack's 3 replica(s)`,
      'GET /apis/apps/v1/namespaces/svc-prod/deployments/svc-recording',
    ])
    // No step of the plan writes a Deployment through the API: every PATCH or PUT is Pulumi's.
    expect(plan.steps.flatMap((s) => s.actions).filter((a) => /^(PATCH|PUT) .*\/deployments\//.test(a))).toEqual([])
    expect(actionsOf(plan.steps, 'check-logs')).toContain(
      'GET /api/v1/namespaces/svc-prod/pods/POD/log?container=recording-service&tailLines=50&limitBytes=262144 (every pod); fail on a log record whose level is ERROR | FATAL | PANIC | CRITICAL (the level field only)',
    )
    // The version the rollback returns to was read from the Deployment through the API.
    expect(actionsOf(plan.steps, 'rollback:install')).toEqual([
      `set svcops:recording.version to 1.5.0 in the stack file: pulumi config set --path --stack prod --non-interactive -- svcops:recording.version 1.5.0${inProject}`,
    ])
    expect(actionsOf(plan.steps, 'stage')).toEqual([
      'nothing to stage: the kubelet pulls the image when the new pod starts (imagePullPolicy IfNotPresent)',
    ])
    // Plan mode: the API was only read, no pulumi was started, the stack file is as it was.
    expect(api.requests.map((r) => r.method)).not.toContain('PATCH')
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toContain('GET /apis/apps/v1/namespaces/svc-prod/deployments/svc-recording')
    expect(recorder.calls()).toEqual([])
    expect(readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')).toBe(stackBefore)
  })

  it("knows the jobs' stack copy of a stack whose only schedule is the live upgrade: its version change is allowed, and its patch asked", async () => {
    // The program declares the ConfigMap for any schedule (src/infra/index.ts); a recording run that
    // did not know it would refuse the version it writes there as somebody else's change.
    // A project folder as an operator has it: Pulumi.yaml, its stack file under stackConfigDir.
    const project = mkdtempSync(join(tmpdir(), 'svcops-k8s-live-only-'))
    const stacks = join(project, 'stacks')
    mkdirSync(stacks)
    copyFileSync(join(ROOT, 'Pulumi.yaml'), join(project, 'Pulumi.yaml'))
    const doc = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')) as {
      config: Record<string, Record<string, unknown>>
    }
    const deploy = doc.config['svcops:deploy'] ?? {}
    delete deploy.upgradeSchedule
    delete deploy.backupSchedule
    expect(deploy.liveUpgradeSchedule).toBeDefined()
    writeFileSync(join(stacks, 'Pulumi.prod.yaml'), toYaml(doc))
    const run = await runSvcops(['upgrade', 'recording', '--env', 'prod', '--to', '2.0.0', '--dry-run', '--json'], {
      env: {
        KUBECONFIG: api.kubeconfig,
        PATH: `${recorder.binDir}:${process.env.PATH ?? ''}`,
        SVCOPS_STACKS_DIR: stacks,
        SVCOPS_RUNS_DIR: mkdtempSync(join(tmpdir(), 'svcops-k8s-dry-')),
      },
    })
    const plan = JSON.parse(run.stdout || '{}') as { steps?: PlannedStep[] }
    expect(plan.steps, run.stderr).toBeDefined()
    expect(actionsOf(plan.steps ?? [], 'stop').join('\n')).toContain('and svc-svcops-stack (data) may change')
    expect(actionsOf(plan.steps ?? [], 'preflight').join('\n')).toContain('patch configmaps svc-svcops-stack')
  })

  it('refuses a bad version in one sentence, before anything is read', async () => {
    const before = api.requests.length
    const run = await runSvcops(['upgrade', 'recording', '--env', 'prod', '--to', 'latest', '--dry-run'], {
      env: { KUBECONFIG: api.kubeconfig },
    })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("--to: 'latest' is not a version; expected a version like 2.0.0.")
    expect(api.requests.length).toBe(before)
  })

  it('is the Kubernetes platform, where the doctor reads the Deployment through the API: no Secret and no claim here, each found with its fix', async () => {
    const run = await runSvcops(['doctor', 'recording', '--env', 'prod'], { env: { KUBECONFIG: api.kubeconfig } })
    expect(run.code, run.stderr).toBe(5)
    expect(run.stdout).toContain(
      'ERROR svc-recording config-syntax: The Secret svc-recording-database the pods read their database connection from cannot be read.',
    )
    expect(run.stdout).toContain('ERROR svc-recording storage-claim: The recordings claim svc-recording-recordings cannot be read')
  })
})
