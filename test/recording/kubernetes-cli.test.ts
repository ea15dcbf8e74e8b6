/**
 * The CLI on the Kubernetes platform, as a scheduler or a person runs it (a child process: the verify
 * and the killed run; the refusals and the dry runs, which read only its answer, run it in the test's
 * process, `runSvcopsInProcess`, where it does not load @kubernetes/client-node again), on the
 * real lab's PostgreSQL, manager and recording service: `svcops upgrade recording` stops at its
 * preflight, in one sentence, with nothing changed, when the preview shows somebody else's change or
 * the identity lacks a right, and before its first stop (exit 5) when a pod cannot pull the image its
 * rollback goes back to; `svcops verify recording` checks the service through a port-forward
 * the client library makes, to the lab's service standing behind the pod's port. The
 * API server is an in-test STAND-IN (test/support/kube-api-standin.ts) and `pulumi` on PATH an ARGV
 * RECORDER that prints recorded documents (test/support/pulumi-argv-recorder.ts).
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT, runSvcops, runSvcopsInProcess, runSvcopsKilledAt } from '../support/cli.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import { createPulumiArgvRecorder, type ArgvRecorder } from '../support/pulumi-argv-recorder.ts'
import { startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab
let api: KubeApiStandin
let recorder: ArgvRecorder
let stackFile: string
let backups: string

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.5.0', recordings: 2 })
  api = await startKubeApiStandin({}, 'lab-cluster')
  stackFile = join(lab.dir, 'project', 'stacks', 'Pulumi.lab.yaml')
  // `pulumi config set|rm --path` write the stack file as Pulumi does: the stop's hold is read back from it.
  recorder = createPulumiArgvRecorder({ applyConfigSetTo: stackFile })
  recorder.answer('version', 'v3.150.0\n')
  recorder.answer('stack', JSON.stringify([{ name: 'lab', current: true, updateInProgress: false }]))
  // A project as Pulumi sees it: Pulumi.yaml (stackConfigDir: stacks) and the lab's stack on the kubernetes platform.
  const project = join(lab.dir, 'project')
  mkdirSync(join(project, 'stacks'), { recursive: true })
  copyFileSync(join(ROOT, 'Pulumi.yaml'), join(project, 'Pulumi.yaml'))
  const doc = parseYaml(readFileSync(lab.envFile, 'utf8')) as { config: Record<string, Record<string, unknown>> }
  const prod = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')) as { config: Record<string, Record<string, unknown>> }
  // The lab's hosts and its host checks (a command check: refused on Kubernetes, which has no host) stay behind.
  const { hosts: _hosts, checks: _checks, ...recording } = doc.config['svcops:recording'] ?? {}
  doc.config['svcops:recording'] = { ...recording, platform: 'kubernetes' }
  doc.config['svcops:deploy'] = prod.config['svcops:deploy'] ?? {}
  doc.config['kubernetes:context'] = 'lab-cluster' as never
  stackFile = join(project, 'stacks', 'Pulumi.lab.yaml')
  writeFileSync(stackFile, toYaml(doc))
  backups = String((doc.config['svcops:backup'] as { store: { path: string } }).store.path)
  const service = new URL(lab.env().recording?.hosts[0]?.url ?? '')
  api.state.forwardTo = { host: service.hostname, port: Number(service.port) }
})
afterAll(async () => {
  await api.close()
  await lab.stop()
})

function upgrade() {
  return runSvcopsInProcess(['upgrade', 'recording', '--stack-file', stackFile, '--env', 'lab', '--to', '2.0.0', '--yes', '--json'], {
    env: { KUBECONFIG: api.kubeconfig, PATH: `${recorder.binDir}:${process.env.PATH ?? ''}`, SVCOPS_RUNS_DIR: lab.runsDir },
  })
}

/** Nothing changed: no write reached the API, no pulumi but the reading ones ran, no backup, the stack file as it was. */
function expectNothingChanged(stackBefore: string): void {
  expect(api.requests.filter((r) => r.method !== 'GET' && !r.path.endsWith('/selfsubjectaccessreviews'))).toEqual([])
  expect(recorder.calls().map((c) => c.argv[0])).not.toContain('up')
  expect(recorder.calls().map((c) => c.argv[0])).not.toContain('config')
  expect(existsSync(backups) ? readdirSync(backups) : []).toEqual([])
  expect(readFileSync(stackFile, 'utf8')).toBe(stackBefore)
}

describe('svcops upgrade recording on the Kubernetes platform, at its preflight', () => {
  it("refuses when pulumi preview shows a change besides the recording service's version, listing each", async () => {
    recorder.answer('preview', readFileSync(join(ROOT, 'test/drivers/fixtures/preview-version-and-others.json'), 'utf8'))
    const before = readFileSync(stackFile, 'utf8')
    const run = await upgrade()
    expect(run.code).toBe(1)
    const answer = JSON.parse(run.stdout) as { ok: boolean; error: { message: string } }
    expect(answer.ok).toBe(false)
    expect(answer.error.message).toContain(
      "pulumi preview of stack 'lab' shows 3 change(s) besides the recording service's version, which an upgrade does not apply: ",
    )
    expect(answer.error.message).toContain(
      'update kubernetes:core/v1:ConfigMap svc-manager-config (data["SVC_TOKEN_LIFETIME_SECONDS"]); create kubernetes:networking.k8s.io/v1:NetworkPolicy allow-monitoring; delete kubernetes:core/v1:Service svc-ingest-service.',
    )
    expect(recorder.calls().map((c) => c.argv.slice(0, 2))).toEqual([['version'], ['stack', 'ls'], ['preview', '--stack']])
    expect(recorder.calls().every((c) => c.cwd === join(lab.dir, 'project'))).toBe(true)
    expectNothingChanged(before)
    // The stack file is the record: the run folder keeps it as the run left it, and the report says so.
    const { runId } = JSON.parse(run.stdout) as { runId: string }
    const copy = join(lab.runsDir, runId, 'Pulumi.lab.yaml')
    expect(readFileSync(copy, 'utf8')).toBe(before)
    expect(readFileSync(join(lab.runsDir, runId, 'report.md'), 'utf8')).toContain(
      `- record: ${copy} is the stack file as this run left it (${stackFile}); commit it to the project`,
    )
  })

  it('refuses when this identity lacks a right the run uses, naming it and what it is for', async () => {
    api.state.denied = ['patch deployments']
    const before = readFileSync(stackFile, 'utf8')
    const run = await upgrade()
    expect(run.code).toBe(1)
    expect((JSON.parse(run.stdout) as { error: { message: string } }).error.message).toBe(
      'This identity lacks 1 right(s) in namespace svc-prod the run needs: patch apps/deployments svc-recording (`pulumi up` of the stop, the new version and the start).',
    )
    expectNothingChanged(before)
    api.state.denied = []
  })
})

describe('svcops verify recording on the Kubernetes platform', () => {
  it('checks the service through a port-forward to the Service, and every pod through the API', async () => {
    api.state.pods = [
      { name: 'svc-recording-7d4b9c-a1', version: '1.5.0', log: ['2026-11-25T02:30:01Z INFO listening on :8080'] },
      { name: 'svc-recording-7d4b9c-b2', version: '1.5.0', log: ['2026-11-25T02:30:02Z INFO listening on :8080'] },
    ]
    const run = await runSvcops(['verify', 'recording', '--stack-file', stackFile, '--env', 'lab', '--json'], {
      env: { KUBECONFIG: api.kubeconfig, SVCOPS_RUNS_DIR: lab.runsDir },
    })
    expect(run.code, run.stderr).toBe(0)
    const v = JSON.parse(run.stdout) as {
      ok: boolean
      hosts: Array<{ host: string; version: string; status: string; checks: Array<{ check: string; ok: boolean }> }>
    }
    expect(v.ok).toBe(true)
    expect(v.hosts.map((h) => [h.host, h.version])).toEqual([['svc-recording', '1.5.0']])
    expect(v.hosts[0]?.status).toBe('2/3 ready: svc-recording-7d4b9c-a1 Running ready, svc-recording-7d4b9c-b2 Running ready')
    expect(v.hosts[0]?.checks.every((c) => c.ok)).toBe(true)
    const forwarded = api.requests.filter((r) => r.path.endsWith('/portforward'))
    expect(forwarded.length).toBeGreaterThan(0)
    expect(forwarded.every((r) => r.query.ports === '8080')).toBe(true)
  })
})

describe('svcops upgrade recording on the Kubernetes platform, before its first stop: the image a rollback goes back to', () => {
  it('refuses (exit 5) when a pod of the running version cannot pull its image: no pulumi up, no config set, no run left', async () => {
    recorder.answer('preview', JSON.stringify({ steps: [], changeSummary: { same: 42 } }))
    // One pod runs 1.5.0 (pulled); another, on a node that cannot pull 1.5.0, waits: the rollback may land there.
    api.state.pods = [
      { name: 'svc-recording-7d4b9c-a1', version: '1.5.0', log: ['INFO listening on :8080'] },
      { name: 'svc-recording-7d4b9c-c3', version: '1.5.0', phase: 'Pending', ready: false, waiting: 'ImagePullBackOff' },
    ]
    const stackBefore = readFileSync(stackFile, 'utf8')
    const runs = () => (existsSync(lab.runsDir) ? readdirSync(lab.runsDir) : [])
    const runsBefore = runs()
    const callsBefore = recorder.calls().length
    const requestsBefore = api.requests.length
    const run = await upgrade()
    expect(run.code, run.stderr).toBe(5)
    const error = (JSON.parse(run.stdout) as { error: { message: string; hint: string } }).error
    expect(error.message).toBe(
      'Nothing changed: the upgrade to 2.0.0 was refused before anything stopped, because its rollback would not get through — ' +
        'svc-recording: the image registry.example.internal/svc/recording:1.5.0 cannot be pulled: pod svc-recording-7d4b9c-c3 shows ImagePullBackOff.',
    )
    expect(error.hint).toContain('svcops upgrade recording --env lab --to 2.0.0')
    const calls = recorder
      .calls()
      .slice(callsBefore)
      .map((c) => c.argv[0])
    expect(calls).toContain('preview')
    expect(calls).not.toContain('up')
    expect(calls).not.toContain('config')
    const writes = api.requests.slice(requestsBefore).filter((r) => r.method !== 'GET' && !r.path.endsWith('/selfsubjectaccessreviews'))
    expect(writes).toEqual([])
    expect(readFileSync(stackFile, 'utf8')).toBe(stackBefore)
    expect(api.state.pods.map((p) => p.version)).toEqual(['1.5.0', '1.5.0'])
    expect(runs()).toEqual(runsBefore) // a refusal before the first stop is not a run
  })
})

describe('a Kubernetes run killed after its stop, continued from its journal', () => {
  it('took the verified backup first; resume plans the rest from the journal, and its rollback the previous version, with the exact pulumi commands', async () => {
    recorder.answer('preview', JSON.stringify({ steps: [], changeSummary: { same: 42 } }))
    recorder.answer('config', '', 0, 5000) // the stop's `pulumi config set` still running when the run is killed
    api.state.pods = [{ name: 'svc-recording-7d4b9c-a1', version: '1.5.0', log: ['INFO listening on :8080'] }]
    // The pods follow what the stop's pulumi up would do once the stack holds 0 replicas (the recorder applies nothing).
    const held = () => recorder.calls().some((c) => c.argv.join(' ').endsWith('svcops:deploy.recording.heldReplicas 0'))
    api.state.beforeAnswer = () => {
      if (held()) api.state.pods = []
    }
    const killed = await runSvcopsKilledAt(
      ['upgrade', 'recording', '--stack-file', stackFile, '--env', 'lab', '--to', '2.0.0', '--yes', '--json'],
      'stop@svc-recording',
      lab.runsDir,
      { env: { KUBECONFIG: api.kubeconfig, PATH: `${recorder.binDir}:${process.env.PATH ?? ''}` } },
    )
    expect(killed.signal).toBe('SIGKILL')
    expect(readdirSync(backups).some((f) => f.endsWith('.manifest.json'))).toBe(true) // the backup came before the stop
    // The stop holds the replicas in the stack file for pulumi up: svcops itself wrote nothing to the API.
    expect(api.requests.filter((r) => r.method === 'PATCH')).toEqual([])
    expect(recorder.calls().map((c) => c.argv.slice(0, 2).concat(c.argv.slice(-2)).join(' '))).toContain(
      'config set svcops:deploy.recording.heldReplicas 0',
    )
    delete api.state.beforeAnswer
    const id = readdirSync(lab.runsDir).sort().at(-1) ?? ''
    // Before its stop the upgrade proved the image its rollback goes back to: a pod ran it, pulled (its imageID).
    const ready = readFileSync(join(lab.runsDir, id, 'journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { step: string; status: string; data?: { proven?: Record<string, { image?: unknown }> } })
      .find((e) => e.step === 'rollback-ready' && e.status === 'ok')
    expect(ready?.data?.proven?.['svc-recording']?.image).toEqual({
      image: 'registry.example.internal/svc/recording:1.5.0',
      imageID: expect.stringMatching(/^registry\.example\.internal\/svc\/recording@sha256:[0-9a-f]{64}$/) as string,
      pod: 'svc-recording-7d4b9c-a1',
    })
    // The rollback's preconditions ask the platform for its tools: the continuing machine has pulumi too.
    const env = { KUBECONFIG: api.kubeconfig, SVCOPS_RUNS_DIR: lab.runsDir, PATH: `${recorder.binDir}:${process.env.PATH ?? ''}` }
    const project = join(lab.dir, 'project')
    const resume = await runSvcopsInProcess(['resume', id, '--dry-run', '--json'], { env })
    expect(resume.code, resume.stderr).toBe(0)
    const steps = (JSON.parse(resume.stdout) as { plan: { steps: Array<{ step: string; actions: string[] }> } }).plan.steps
    expect(steps.map((s) => s.step)).toEqual(
      expect.arrayContaining(['install', 'review-config', 'start', 'check-logs', 'verify-host', 'verify']),
    )
    expect(steps.find((s) => s.step === 'install')?.actions).toEqual([
      `set svcops:recording.version to 2.0.0 in the stack file: pulumi config set --path --stack lab --non-interactive -- svcops:recording.version 2.0.0   (in ${project})`,
    ])
    const back = await runSvcopsInProcess(['resume', id, '--rollback', '--dry-run', '--json'], { env })
    expect(back.code, back.stderr).toBe(0)
    const rollback = (JSON.parse(back.stdout) as { plan: { steps: Array<{ step: string; actions: string[] }> } }).plan.steps
    expect(rollback.find((s) => s.step === 'rollback:install')?.actions).toEqual([
      `set svcops:recording.version to 1.5.0 in the stack file: pulumi config set --path --stack lab --non-interactive -- svcops:recording.version 1.5.0   (in ${project})`,
    ])
    // No pod runs now (held at 0): the upgrade's proof stands, unless a node is seen failing to pull that image.
    api.state.pods = [{ name: 'svc-recording-7d4b9c-d4', version: '1.5.0', phase: 'Pending', ready: false, waiting: 'ErrImagePull' }]
    const refused = await runSvcopsInProcess(['resume', id, '--rollback', '--dry-run', '--json'], { env })
    expect(refused.code, refused.stderr).toBe(5)
    expect(refused.stdout + refused.stderr).toContain(
      `Nothing changed: the rollback of run ${id} would not get through — ` +
        'svc-recording: the image registry.example.internal/svc/recording:1.5.0 cannot be pulled: pod svc-recording-7d4b9c-d4 shows ErrImagePull.',
    )
    api.state.pods = []
  })
})
