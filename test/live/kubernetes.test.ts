/**
 * The live production system on the Kubernetes platform (`svcops:live.platform: kubernetes`), at
 * its seams, as the recording service's Kubernetes tests do: `pulumi` on PATH is an ARGV RECORDER
 * (test/support/pulumi-argv-recorder.ts: exact argv, canned `preview --json` and `stack output
 * --json` documents; in the runs below it also writes `config set --path` values into the test's
 * stack file, as Pulumi would), the Kubernetes API is an in-test STAND-IN answering as the API
 * reference shapes it (test/support/kube-api-standin.ts), and the system controller's Service is a
 * STAND-IN answering the seed's endpoints by UUID on the prefix of the release its Deployment runs
 * (test/support/live-controller-service.ts). A recorded
 * `pulumi up` moves the stand-in's Deployments to the stack file's version, as the program would.
 * No cluster, no Pulumi engine, no image is involved: what this proves and cannot is in
 * docs/live.md ("Live on Kubernetes"). svcops runs in the test's process (`runSvcopsInProcess`: each
 * start of the CLI here loaded @kubernetes/client-node again, ~0.5 s of CPU) for the cases that read
 * its answer; the killed runs, and the resume of the first, start it as a process of its own.
 */
import { randomBytes } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { readStackVersion } from '../../src/drivers/pulumi.ts'
import { KubernetesDriver } from '../../src/drivers/kubernetes.ts'
import { clusterUnitChecks } from '../../src/live/kubernetes/controller-service.ts'
import type { LiveCluster } from '../../src/live/kubernetes/live-cluster-handle.ts'
import { liveComponentChanges } from '../../src/live/kubernetes/live-preview.ts'
import { gateItems } from '../../src/live/gates.ts'
import type { CheckResult } from '../../src/live/live-judge.ts'
import { LIVE_COMPONENTS } from '../../src/live/layout.ts'
import { parseEnvironment } from '../../src/config/load.ts'
import type { LiveConfig } from '../../src/config/schema.ts'
import type { PlannedStep } from '../../src/runs/engine.ts'
import { ROOT, runSvcops, runSvcopsInProcess, runSvcopsKilledAt } from '../support/cli.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import {
  liveDeployment,
  METRICS_PORT,
  podMetrics,
  startControllerServiceStandin,
  type ControllerServiceStandin,
} from '../support/live-controller-service.ts'
import { kindOfResource } from '../support/kube-kinds.ts'
import { buildStack, objectNamed } from '../infra/helpers.ts'
import { previewStack } from '../../src/infra/preview.ts'
import { createPulumiArgvRecorder, type ArgvRecorder } from '../support/pulumi-argv-recorder.ts'

const NS = 'svc-prod'
const IN_ROOT = `   (in ${ROOT.replace(/\/$/, '')})`
/** Secrets the svcops process holds in its environment: none may reach an output, a file of the run or an argv. */
const OPERATOR_SECRETS = {
  PULUMI_CONFIG_PASSPHRASE: 'passphrase-9c2e7a41d05b',
  SVC_SYSTEM_CONTROLLER_PSK: 'Kq7Zp2Lm9Xw4Rt6Yb1Nc8Vd3Hf5Gj0Ts2Ue4Wi6Oa',
}

/** A `pulumi preview --json` document (Pulumi's PreviewDigest) with these steps. */
function preview(steps: Array<{ op: string; urn: string; paths?: string[] }>): string {
  return JSON.stringify({
    steps: steps.map((s) => ({
      op: s.op,
      urn: s.urn,
      ...(s.paths ? { detailedDiff: Object.fromEntries(s.paths.map((p) => [p, { kind: 'update', inputDiff: true }])) } : {}),
    })),
    changeSummary: { update: steps.length },
  })
}

/** The argv (after `pulumi`) of `config set --path` on the prod stack, as src/drivers/pulumi.ts writes it (test/drivers/pulumi.test.ts spells it out). */
const configSet = (key: string, value: string) => ['config', 'set', '--path', '--stack', 'prod', '--non-interactive', '--', key, value]

const urn = (parent: string, type: string, name: string) => `urn:pulumi:prod::svcops::${parent}$${type}::${name}`
const COMPONENT_STEPS = LIVE_COMPONENTS.map((c) => ({
  op: 'update',
  urn: urn(
    c === 'system-controller' ? 'svcops:infra:SystemController' : 'svcops:infra:MediaComponent',
    'kubernetes:apps/v1:Deployment',
    `svc-${c}-deployment`,
  ),
  paths: ['spec.template.spec.containers[0].image', 'spec.template.spec.containers[0].env[2].name'],
}))
const PSK_STEPS = [
  {
    op: 'replace',
    urn: urn('svcops:infra:Psk', 'random:index/randomPassword:RandomPassword', 'svc-psk-random'),
    paths: ['keepers.rotation'],
  },
  { op: 'update', urn: urn('svcops:infra:Psk', 'kubernetes:core/v1:Secret', 'svc-psk-secret'), paths: ['stringData.psk'] },
]
const STACK_COPY = {
  op: 'update',
  urn: urn('svcops:infra:ScheduledJobs', 'kubernetes:core/v1:ConfigMap', 'svc-svcops-stack'),
  paths: ['data["Pulumi.prod.yaml"]'],
}

/** Every gate id of the upgrade, acknowledged (the gates themselves are test/live's crossings' subject). */
function allGates(from: string, to: string): string {
  return gateItems(from, to, { prefix: 'svc', productDir: 'svc' } as LiveConfig)
    .map((g) => g.id)
    .join(',')
}

/** Every file under a folder, as text. */
function filesUnder(dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) out.push(...filesUnder(p))
    else out.push(readFileSync(p, 'utf8'))
  }
  return out
}

describe('svcops upgrade live --env prod --to 7.0.0 --dry-run (the shipped prod stack: 6.2.0 on Kubernetes)', () => {
  let api: KubeApiStandin
  let recorder: ArgvRecorder
  beforeAll(async () => {
    api = await startKubeApiStandin({ others: LIVE_COMPONENTS.map((c) => liveDeployment(c, '6.2.0')) }, 'prod-cluster')
    recorder = createPulumiArgvRecorder()
  })
  afterAll(() => api.close())

  it('plans the Kubernetes steps with the exact pulumi commands and API calls, and changes nothing', async () => {
    const stackBefore = readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')
    // Every gate acknowledged: an open one ends the dry run with exit 5, as the run would.
    const run = await runSvcopsInProcess(
      ['upgrade', 'live', '--env', 'prod', '--to', '7.0.0', '--ack', allGates('6.2.0', '7.0.0'), '--dry-run', '--json'],
      {
        env: {
          KUBECONFIG: api.kubeconfig,
          PATH: `${recorder.binDir}:${process.env.PATH ?? ''}`,
          SVCOPS_RUNS_DIR: mkdtempSync(join(tmpdir(), 'svcops-live-k8s-dry-')),
        },
      },
    )
    expect(run.code, run.stderr).toBe(0)
    const plan = JSON.parse(run.stdout) as { steps: PlannedStep[] }
    const actions = (step: string, host?: string) =>
      plan.steps.filter((s) => s.step === step && (!host || s.host === host)).flatMap((s) => s.actions)
    expect(actions('preflight')).toEqual(
      expect.arrayContaining([
        `the Pulumi CLI and its version: pulumi version${IN_ROOT}`,
        `the stack 'prod' exists and no update of it runs: pulumi stack ls --json --non-interactive${IN_ROOT}`,
        `the Kubernetes API with context prod-cluster: GET /version; ${LIVE_COMPONENTS.map((c) => `GET /apis/apps/v1/namespaces/${NS}/deployments/svc-${c}`).join('; ')}`,
        `no change but the live components': pulumi preview --stack prod --json --refresh --non-interactive${IN_ROOT}; refused, listing every other change`,
      ]),
    )
    expect(actions('preflight').join('\n')).toContain(
      'create pods/portforward — one POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews each',
    )
    expect(actions('check-config')[0]).toBe(
      'svcops:deploy.live.pipeline.tcpEndpoints (0.0.0.0:7000): the program gives the pipeline SVC_TCP_ENDPOINT; several are refused before anything changes, naming them',
    )
    // 6.x -> 7.0: the PSK is kept unless the stack's last update reported it weak; the PSK is never read.
    expect(actions('write-config')).toEqual(
      expect.arrayContaining([
        `whether the PSK passes the entropy check of 7.0.0: pulumi stack output --stack prod --json --non-interactive${IN_ROOT} (psk.passesEntropyCheck; the PSK is never read)`,
      ]),
    )
    expect(actions('write-config').join('\n')).toMatch(
      /when it does not, or is not reported: pulumi config set --path --stack prod --non-interactive -- svcops:deploy\.pskRotation svcops-\S+/,
    )
    expect(actions('install', 'system-controller')).toEqual([
      `install 7.0.0 over 6.2.0: pulumi config set --path --stack prod --non-interactive -- svcops:deploy.live.version 7.0.0${IN_ROOT} (when the stack file holds another version) && ` +
        `pulumi preview --stack prod --json --refresh --non-interactive${IN_ROOT}: only the live components (and the PSK when the run rotates it) may change && ` +
        `pulumi up --stack prod --yes --refresh --non-interactive --skip-preview --target URN --target ...${IN_ROOT} with a --target per changed URN; a later component finds 7.0.0 installed`,
    ])
    expect(actions('stop', 'system-controller')).toEqual([
      'nothing: `pulumi up` restarts svc-system-controller — first, by its Recreate strategy',
    ])
    expect(actions('stop', 'ingest')).toEqual([
      'nothing: `pulumi up` restarts svc-ingest — after the controller is ready (the program’s dependsOn)',
    ])
    expect(actions('check', 'pipeline')).toEqual(
      expect.arrayContaining([
        `GET /api/v1/namespaces/${NS}/pods?labelSelector=app.kubernetes.io/name=pipeline,app.kubernetes.io/instance=svc-pipeline: every pod Running, ready, on the version`,
        `GET /api/v1/namespaces/${NS}/pods/POD/log?container=pipeline&tailLines=50&limitBytes=262144 (every pod); fail on ERROR | FATAL`,
        'wait up to 300 s until its pods run on 7.0.0 and its checks pass:',
        // The shipped stack gives no UUID (a site copies them from its controller): the seed's check is said to be unmade.
        '  no check on GET {api}/pipelines/{uuid}?expand=true: svcops:live.uuids has no UUID for pipeline',
        `  the metric names of its release: GET /api/v1/namespaces/${NS}/pods/POD:${METRICS_PORT}/proxy/metrics: the metric names of 7.0.0`,
      ]),
    )
    expect(actions('preflight').join('\n')).toContain('get pods/proxy; ')
    expect(actions('verify')).toEqual(
      expect.arrayContaining([
        'ingest: no check on GET {api}/ingests/{uuid}?expand=true: svcops:live.uuids has no UUID for ingest',
        `pipeline: the metric names of its release: GET /api/v1/namespaces/${NS}/pods/POD:${METRICS_PORT}/proxy/metrics: the metric names of 7.0.0`,
      ]),
    )
    // What its rollback would need, named before the first change and read by the run once it has backed up.
    expect(actions('rollback-ready')).toEqual(
      expect.arrayContaining([
        `registry.example.internal/svc/ingest:6.2.0: GET /api/v1/namespaces/${NS}/pods?labelSelector=app.kubernetes.io/name=ingest,app.kubernetes.io/instance=svc-ingest; no pod of it in ErrImagePull or ImagePullBackOff, one Running with an imageID (now, or at the upgrade's check)`,
      ]),
    )
    // The way back, as the failure policy would take it: the version the Deployments run now.
    expect(actions('rollback:install', 'system-controller')[0]).toContain('-- svcops:deploy.live.version 6.2.0')
    // Plan mode: the API was only read, no pulumi was started, the stack file is as it was.
    expect(api.requests.map((r) => r.method).filter((m) => m !== 'GET')).toEqual([])
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toContain(
      `GET /apis/apps/v1/namespaces/${NS}/deployments/svc-system-controller`,
    )
    expect(recorder.calls()).toEqual([])
    expect(readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')).toBe(stackBefore)
  })
})

/** The lab's fault release: its components start but never connect to the controller (src/lab/live/releases.ts). */
const NEVER_CONNECTS = new Set(['7.0.1'])

describe('svcops upgrade live on Kubernetes, and rollback live (a copy of the prod stack; stand-ins of pulumi, the API and the controller)', () => {
  /** Components a test makes never connect, whatever their release. */
  const neverConnecting = new Set<string>()
  let api: KubeApiStandin
  let controller: ControllerServiceStandin
  beforeAll(async () => {
    api = await startKubeApiStandin({ others: [] }, 'prod-cluster')
    // The controller's Service: the seed's endpoints by UUID on the prefix of the release its
    // Deployment runs; an instance of a never-connecting release (or made so by a test) is unknown to it.
    controller = await startControllerServiceStandin(api, {
      connected: (d) => !NEVER_CONNECTS.has(d.version) && !neverConnecting.has(d.app) && d.pods.every((p) => p.ready !== false),
    })
  })
  afterAll(async () => {
    await api.close()
    await controller.close()
  })

  interface Setup {
    dir: string
    stackFile: string
    recorder: ArgvRecorder
    env: Record<string, string>
    args: string[]
  }

  /** A project folder with Pulumi.yaml and a copy of the prod stack at `version`; the stand-ins' cluster runs it. */
  function setup(version: string, options: { tcpEndpoints?: string[] } = {}): Setup {
    const dir = mkdtempSync(join(tmpdir(), 'svcops-live-k8s-'))
    mkdirSync(join(dir, 'stacks'))
    copyFileSync(join(ROOT, 'Pulumi.yaml'), join(dir, 'Pulumi.yaml'))
    const doc = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')) as { config: Record<string, unknown> }
    const deploy = doc.config['svcops:deploy'] as { live: { version: string; pipeline: { tcpEndpoints: string[] } } }
    deploy.live.version = version
    if (options.tcpEndpoints) deploy.live.pipeline.tcpEndpoints = options.tcpEndpoints
    // The stand-in controller's UUIDs, as a site copies them; the lab's declared metric checks, read through the pod proxy.
    doc.config['svcops:live'] = {
      platform: 'kubernetes',
      controllerUrl: controller.url,
      connectTimeoutSeconds: 5,
      uuids: controller.uuids,
      checks: [
        { name: 'the metric names of its release', components: ['ingest', 'pipeline', 'control-panel'], metric: { releaseNames: true } },
        {
          name: 'reports itself connected',
          components: ['ingest', 'pipeline', 'control-panel'],
          metric: { name: '{product}_controller_connected', equals: 1 },
        },
      ],
    }
    // The runs kept in ConfigMaps are signed with a run key of the operators' (the prod stack's backup keys are the jobs').
    const runKey = join(dir, 'run.key')
    writeFileSync(runKey, randomBytes(48).toString('base64'), { mode: 0o600 })
    doc.config['svcops:runs'] = { key: { file: runKey } }
    const stackFile = join(dir, 'stacks', 'Pulumi.prod.yaml')
    writeFileSync(stackFile, toYaml(doc))
    const recorder = createPulumiArgvRecorder({ applyConfigSetTo: stackFile })
    recorder.answer('version', 'v3.150.0\n')
    recorder.answer('stack', JSON.stringify([{ name: 'acme/svcops/prod', current: true }]))
    recorder.answer('preview', preview([]))
    api.state.others = LIVE_COMPONENTS.map((c) => liveDeployment(c, version, options.tcpEndpoints))
    // `pulumi up` (recorded) moves every component to the stack file's version, as the program would.
    let ups = 0
    api.state.beforeAnswer = () => {
      const now = recorder.calls().filter((c) => c.argv[0] === 'up').length
      if (now === ups) return
      ups = now
      const v = readStackVersion(stackFile, 'svcops:deploy.live.version') ?? version
      api.state.others = LIVE_COMPONENTS.map((c) => liveDeployment(c, v, options.tcpEndpoints))
    }
    return {
      dir,
      stackFile,
      recorder,
      env: {
        KUBECONFIG: api.kubeconfig,
        PATH: `${recorder.binDir}:${process.env.PATH ?? ''}`,
        SVCOPS_RUNS_DIR: join(dir, 'runs'),
        SVCOPS_STATE_DIR: join(dir, 'state'),
        ...OPERATOR_SECRETS,
      },
      args: ['--env', 'prod', '--stack-file', stackFile],
    }
  }

  afterEach(() => {
    delete api.state.beforeAnswer
    neverConnecting.clear()
  })

  /** The `config set` calls pulumi received, as `key value`, in order. */
  function configSets(s: Setup): string[] {
    return s.recorder
      .calls()
      .filter((c) => c.argv[0] === 'config')
      .map((c) => c.argv.slice(-2).join(' '))
  }

  /** Nothing of the operator's secrets in what svcops printed, wrote in its run folder, or passed to pulumi. */
  function expectNoSecret(s: Setup, outputs: string[]): void {
    const written = [...outputs, ...filesUnder(join(s.dir, 'runs')), JSON.stringify(s.recorder.calls().map((c) => c.argv))]
    for (const secret of Object.values(OPERATOR_SECRETS)) for (const text of written) expect(text).not.toContain(secret)
  }

  it('refuses a preview with a change besides the live components, listing it, before anything changes', async () => {
    const s = setup('6.2.0')
    s.recorder.answer(
      'preview',
      preview([
        ...COMPONENT_STEPS,
        {
          op: 'update',
          urn: urn('svcops:infra:Manager', 'kubernetes:apps/v1:Deployment', 'svc-manager-deployment'),
          paths: ['spec.replicas'],
        },
      ]),
    )
    const before = readFileSync(s.stackFile, 'utf8')
    const run = await runSvcopsInProcess(['upgrade', 'live', ...s.args, '--to', '7.0.0', '--ack', allGates('6.2.0', '7.0.0'), '--yes'], {
      env: s.env,
    })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(
      "pulumi preview of stack 'prod' shows 1 change(s) besides the live production system's components, which a live upgrade does not apply: update kubernetes:apps/v1:Deployment svc-manager-deployment (spec.replicas).",
    )
    expect(readFileSync(s.stackFile, 'utf8')).toBe(before)
    expect(s.recorder.calls().map((c) => c.argv.slice(0, 2).join(' '))).toEqual(['version', 'stack ls', 'preview --stack'])
    expect(api.state.others.every((d) => d.version === '6.2.0')).toBe(true)
    expectNoSecret(s, [run.stdout, run.stderr])
  })

  it('refuses two tcpEndpoints when crossing 6.0, naming them, before anything changes', async () => {
    const s = setup('5.2.0', { tcpEndpoints: ['0.0.0.0:7000', '0.0.0.0:7001'] })
    const before = readFileSync(s.stackFile, 'utf8')
    const run = await runSvcopsInProcess(['upgrade', 'live', ...s.args, '--to', '6.0.0', '--ack', allGates('5.2.0', '6.0.0'), '--yes'], {
      env: s.env,
    })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain(
      'svcops:deploy.live.pipeline.tcpEndpoints: 2 endpoints (0.0.0.0:7000, 0.0.0.0:7001); expected exactly one, since 6.0.0 reads SVC_TCP_ENDPOINT, a single endpoint that accepts several connections. Nothing was changed.',
    )
    expect(readFileSync(s.stackFile, 'utf8')).toBe(before)
    expect(s.recorder.calls().some((c) => c.argv[0] === 'config' || c.argv[0] === 'up')).toBe(false)
  })

  it('1.x -> 2.0: sets the version and a new pskRotation in the stack file, then pulumi up of the live components only', async () => {
    const s = setup('1.0.0')
    s.recorder.answerNth('preview', 1, preview([...COMPONENT_STEPS, ...PSK_STEPS, STACK_COPY]))
    const run = await runSvcopsInProcess(
      ['upgrade', 'live', ...s.args, '--to', '2.0.0', '--ack', allGates('1.0.0', '2.0.0'), '--yes', '--json'],
      {
        env: s.env,
      },
    )
    expect(run.code, run.stderr).toBe(0)
    const rotation = readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')
    expect(rotation).toMatch(/^svcops-\d{8}T\d{6}Z-[0-9a-f]+$/)
    expect(readStackVersion(s.stackFile, 'svcops:deploy.live.version')).toBe('2.0.0')
    const pulumi = s.recorder.calls().map((c) => c.argv)
    expect(pulumi).toContainEqual(configSet('svcops:deploy.pskRotation', rotation ?? ''))
    expect(pulumi).toContainEqual(configSet('svcops:deploy.live.version', '2.0.0'))
    // No `stack output`: crossing 2.0 needs a new PSK whatever the old one was.
    expect(pulumi.some((a) => a[0] === 'stack' && a[1] === 'output')).toBe(false)
    const ups = pulumi.filter((a) => a[0] === 'up')
    expect(ups).toHaveLength(1)
    expect(ups[0]?.filter((a, i) => ups[0]?.[i - 1] === '--target')).toEqual(
      [...COMPONENT_STEPS, ...PSK_STEPS, STACK_COPY].map((x) => x.urn),
    )
    expect(s.recorder.calls().every((c) => c.cwd === s.dir)).toBe(true)
    expect(api.state.others.every((d) => d.version === '2.0.0')).toBe(true)
    expectNoSecret(s, [run.stdout, run.stderr])
  })

  it('5.x -> 6.0 with a weak PSK: a new pskRotation; rollback live puts back 5.2.0 and the previous pskRotation, verified', async () => {
    const s = setup('5.2.0')
    const original = readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')
    // The program's verdict on the PSK in the stack's last update (never the PSK): it fails the 6.0 check.
    s.recorder.answer(
      'stack-output',
      JSON.stringify({ psk: { secretName: 'svc-psk', secretKey: 'psk', rotation: original, passesEntropyCheck: false } }),
    )
    s.recorder.answerNth('preview', 1, preview([...COMPONENT_STEPS, ...PSK_STEPS]))
    s.recorder.answerNth('preview', 2, preview([...COMPONENT_STEPS, ...PSK_STEPS]))
    const up = await runSvcopsInProcess(
      ['upgrade', 'live', ...s.args, '--to', '6.0.0', '--ack', allGates('5.2.0', '6.0.0'), '--yes', '--json'],
      {
        env: s.env,
      },
    )
    expect(up.code, up.stderr).toBe(0)
    expect(readStackVersion(s.stackFile, 'svcops:deploy.live.version')).toBe('6.0.0')
    const rotated = readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')
    expect(rotated).not.toBe(original)
    expect(rotated).toMatch(/^svcops-/)
    expect(s.recorder.calls().map((c) => c.argv)).toContainEqual(['stack', 'output', '--stack', 'prod', '--json', '--non-interactive'])
    // What the program writes for 6.0 was confirmed through the API: the settings mount and flag, one TCP endpoint variable.
    const report = JSON.parse(
      readFileSync(join(s.dir, 'runs', readdirSync(join(s.dir, 'runs'))[0] ?? '', 'report.json'), 'utf8'),
    ) as unknown
    expect(JSON.stringify(report)).toContain('--settings-path /etc/opt/svc')
    expect(JSON.stringify(report)).toContain('SVC_TCP_ENDPOINT set, SVC_TCP_ENDPOINTS not')

    // The rollback's dry run: the exact commands that put the pskRotation and the version back; nothing done.
    const callsBefore = s.recorder.calls().length
    const plan = await runSvcopsInProcess(['rollback', 'live', ...s.args, '--dry-run', '--json'], { env: s.env })
    expect(plan.code, plan.stderr).toBe(0)
    const planned = (JSON.parse(plan.stdout) as { plan: { steps: PlannedStep[] } }).plan.steps
    expect(planned.filter((p) => p.step === 'rollback:restore-config').flatMap((p) => p.actions)[0]).toContain(
      `pulumi config set --path --stack prod --non-interactive -- svcops:deploy.pskRotation ${original ?? ''}   (in ${s.dir})`,
    )
    expect(planned.filter((p) => p.step === 'rollback:install' && p.host === 'system-controller').flatMap((p) => p.actions)[0]).toContain(
      '-- svcops:deploy.live.version 5.2.0',
    )
    expect(s.recorder.calls().length).toBe(callsBefore)
    expect(readStackVersion(s.stackFile, 'svcops:deploy.live.version')).toBe('6.0.0')

    const back = await runSvcopsInProcess(['rollback', 'live', ...s.args, '--yes', '--json'], { env: s.env })
    expect(back.code, back.stderr).toBe(0)
    expect(readStackVersion(s.stackFile, 'svcops:deploy.live.version')).toBe('5.2.0')
    expect(readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')).toBe(original)
    expect(api.state.others.every((d) => d.version === '5.2.0')).toBe(true)
    const sets = configSets(s)
    expect(sets).toEqual([
      `svcops:deploy.pskRotation ${rotated}`,
      'svcops:deploy.live.version 6.0.0',
      `svcops:deploy.pskRotation ${original}`,
      'svcops:deploy.live.version 5.2.0',
    ])
    expectNoSecret(s, [up.stdout, up.stderr, back.stdout, back.stderr])

    const verify = await runSvcopsInProcess(['verify', 'live', ...s.args, '--json'], { env: s.env })
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    expect(verify.stdout).toContain("the stack file's svcops:deploy.live.version agrees with the cluster")
  })

  it('a run killed after write-config resumes from its journal: the same pskRotation, then the version, once each', async () => {
    const s = setup('5.2.0')
    s.recorder.answer('stack-output', JSON.stringify({ psk: { passesEntropyCheck: false } }))
    s.recorder.answerNth('preview', 1, preview([...COMPONENT_STEPS, ...PSK_STEPS]))
    const runs = join(s.dir, 'runs')
    const killed = await runSvcopsKilledAt(
      ['upgrade', 'live', ...s.args, '--to', '6.0.0', '--ack', allGates('5.2.0', '6.0.0'), '--yes'],
      'write-config',
      runs,
      { env: s.env },
    )
    expect(killed.signal).toBe('SIGKILL')
    const id = readdirSync(runs).sort().at(-1) ?? ''
    const rotated = readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')
    expect(rotated).toBe(`svcops-${id}`)
    const resumed = await runSvcops(['resume', id], { env: s.env })
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(readStackVersion(s.stackFile, 'svcops:deploy.live.version')).toBe('6.0.0')
    expect(readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')).toBe(rotated)
    const sets = configSets(s)
    expect(sets).toEqual([`svcops:deploy.pskRotation ${rotated}`, 'svcops:deploy.live.version 6.0.0'])
    expect(api.state.others.every((d) => d.version === '6.0.0')).toBe(true)
  })

  it('keeps the PSK when the stack reports it passing (6.x -> 7.0), and says when the stack file and the cluster disagree', async () => {
    const s = setup('6.2.0')
    s.recorder.answer(
      'stack-output',
      JSON.stringify({ psk: { secretName: 'svc-psk', secretKey: 'psk', rotation: 'x', passesEntropyCheck: true } }),
    )
    s.recorder.answerNth('preview', 1, preview(COMPONENT_STEPS))
    const run = await runSvcopsInProcess(
      ['upgrade', 'live', ...s.args, '--to', '7.0.0', '--ack', allGates('6.2.0', '7.0.0'), '--yes', '--json'],
      {
        env: s.env,
      },
    )
    expect(run.code, run.stderr).toBe(0)
    expect(readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')).toBe('2026-09-01')
    expect(configSets(s)).toEqual(['svcops:deploy.live.version 7.0.0'])
    // Somebody moves the cluster behind the stack file's back: verify names both.
    api.state.others = LIVE_COMPONENTS.map((c) => liveDeployment(c, '6.2.0'))
    const verify = await runSvcopsInProcess(['verify', 'live', ...s.args], { env: s.env })
    expect(verify.code).toBe(1)
    expect(verify.stdout).toContain('the stack file holds 7.0.0, the cluster runs 6.2.0')
  })

  it('an upgrade into a release whose components never connect (7.0.1) is rolled back: every Deployment on 6.2.0 again, connected, verified', async () => {
    const s = setup('6.2.0')
    s.recorder.answer('stack-output', JSON.stringify({ psk: { passesEntropyCheck: true } }))
    s.recorder.answer('preview', preview(COMPONENT_STEPS))
    const run = await runSvcopsInProcess(['upgrade', 'live', ...s.args, '--to', '7.0.1', '--ack', allGates('6.2.0', '7.0.1'), '--yes'], {
      env: s.env,
    })
    expect(run.code, run.stderr).toBe(4)
    // The ingest's pods run on 7.0.1, but the controller (on /api/v3) does not know its instance: the seed's endpoint answers 404.
    expect(run.stderr).toContain(
      `ingest 7.0.1 on svc-prod: GET /api/v3/ingests/{uuid}?expand=true answers (seed): GET /api/v3/ingests/${controller.uuids.ingest ?? ''}?expand=true answered 404`,
    )
    expect(readStackVersion(s.stackFile, 'svcops:deploy.live.version')).toBe('6.2.0')
    expect(api.state.others.every((d) => d.version === '6.2.0')).toBe(true)
    expect(configSets(s)).toEqual(['svcops:deploy.live.version 7.0.1', 'svcops:deploy.live.version 6.2.0'])
    // The rollback's checks read every media pod's metrics through the pod proxy.
    for (const c of ['ingest', 'pipeline', 'control-panel'])
      expect(api.requests.map((r) => `${r.method} ${decodeURIComponent(r.path)}`)).toContain(
        `GET /api/v1/namespaces/${NS}/pods/svc-${c}-5f6d7c-x1:${METRICS_PORT}/proxy/metrics`,
      )
    const verify = await runSvcopsInProcess(['verify', 'live', ...s.args, '--json'], { env: s.env })
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    expect(verify.stdout).toContain('svc_ingest_source_dropped_audio_frames')
    expectNoSecret(s, [run.stdout, run.stderr, verify.stdout, verify.stderr])
  })

  it('an upgrade whose rollback image a pod cannot pull refuses before its first change (exit 5): no config set, no pulumi up', async () => {
    const s = setup('6.2.0')
    s.recorder.answer('stack-output', JSON.stringify({ psk: { passesEntropyCheck: true } }))
    s.recorder.answerNth('preview', 1, preview(COMPONENT_STEPS))
    // A second ingest pod, on a node that cannot pull the image the rollback would go back to.
    const ingest = api.state.others.find((d) => d.app === 'ingest')
    ingest?.pods.push({ name: 'svc-ingest-5f6d7c-x2', version: '6.2.0', phase: 'Pending', ready: false, waiting: 'ImagePullBackOff' })
    const run = await runSvcopsInProcess(['upgrade', 'live', ...s.args, '--to', '7.0.0', '--ack', allGates('6.2.0', '7.0.0'), '--yes'], {
      env: s.env,
    })
    expect(run.code, run.stderr).toBe(5)
    expect(run.stderr).toContain(
      'Nothing changed: the upgrade to 7.0.0 was refused before anything stopped, because its rollback would not get through — the image registry.example.internal/svc/ingest:6.2.0 of ingest cannot be pulled: pod svc-ingest-5f6d7c-x2 shows ImagePullBackOff',
    )
    expect(run.stderr).toContain('svcops upgrade live --env prod --to 7.0.0')
    expect(configSets(s)).toEqual([])
    expect(s.recorder.calls().some((c) => c.argv[0] === 'up')).toBe(false)
    expect(readStackVersion(s.stackFile, 'svcops:deploy.live.version')).toBe('6.2.0')
    expect(api.state.others.every((d) => d.version === '6.2.0')).toBe(true)
    expect(existsSync(join(s.dir, 'runs')) ? readdirSync(join(s.dir, 'runs')).filter((f) => /^\d/.test(f)) : []).toEqual([])
  })

  it('rollback live goes back to the images the upgrade saw running (their imageID journaled), and refuses one a pod cannot pull', async () => {
    const s = setup('6.2.0')
    s.recorder.answer('stack-output', JSON.stringify({ psk: { passesEntropyCheck: true } }))
    s.recorder.answer('preview', preview(COMPONENT_STEPS))
    const up = await runSvcopsInProcess(['upgrade', 'live', ...s.args, '--to', '7.0.0', '--ack', allGates('6.2.0', '7.0.0'), '--yes'], {
      env: s.env,
    })
    expect(up.code, up.stderr).toBe(0)
    const id = readdirSync(join(s.dir, 'runs')).sort().at(-1) ?? ''
    const journal = readFileSync(join(s.dir, 'runs', id, 'journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { step: string; status: string; data?: { images?: Record<string, { image: string; imageID: string }> } })
    const proof = journal.find((e) => e.step === 'rollback-ready' && e.status === 'ok')?.data?.images ?? {}
    expect(Object.keys(proof).sort()).toEqual([...LIVE_COMPONENTS].sort())
    for (const c of LIVE_COMPONENTS) {
      expect(proof[c]?.image).toBe(`registry.example.internal/svc/${c}:6.2.0`)
      expect(proof[c]?.imageID).toMatch(new RegExp(`^registry\\.example\\.internal/svc/${c}@sha256:[0-9a-f]{64}$`))
    }

    // Every pod now runs 7.0.0; one node tried the old ingest image and cannot pull it.
    const ingest = api.state.others.find((d) => d.app === 'ingest')
    ingest?.pods.push({ name: 'svc-ingest-5f6d7c-x3', version: '6.2.0', phase: 'Pending', ready: false, waiting: 'ErrImagePull' })
    const refused = await runSvcopsInProcess(['rollback', 'live', ...s.args, '--yes'], { env: s.env })
    expect(refused.code, refused.stderr).toBe(5)
    expect(refused.stderr).toContain(
      'the image registry.example.internal/svc/ingest:6.2.0 of ingest cannot be pulled: pod svc-ingest-5f6d7c-x3 shows ErrImagePull',
    )
    expect(refused.stderr).toContain(`svcops rollback live --env prod --run ${id}`)
    expect(api.state.others.every((d) => d.version === '7.0.0')).toBe(true)
    expect(configSets(s)).toEqual(['svcops:deploy.live.version 7.0.0'])

    ingest?.pods.pop()
    const back = await runSvcopsInProcess(['rollback', 'live', ...s.args, '--yes'], { env: s.env })
    expect(back.code, back.stderr).toBe(0)
    expect(back.stderr).not.toContain('Not proven runnable')
    expect(api.state.others.every((d) => d.version === '6.2.0')).toBe(true)
  })

  it('keeps its runs in ConfigMaps of the namespace: another machine lists, shows, resumes and rolls them back', async () => {
    const s = setup('5.2.0')
    s.recorder.answer('stack-output', JSON.stringify({ psk: { passesEntropyCheck: true } }))
    s.recorder.answer('preview', preview(COMPONENT_STEPS))
    const killed = await runSvcopsKilledAt(
      ['upgrade', 'live', ...s.args, '--to', '6.0.0', '--ack', allGates('5.2.0', '6.0.0'), '--yes'],
      'write-config',
      join(s.dir, 'runs'),
      { env: s.env },
    )
    expect(killed.signal).toBe('SIGKILL')
    const id = readdirSync(join(s.dir, 'runs')).sort().at(-1) ?? ''
    const configMaps = kindOfResource('', 'v1', 'configmaps')
    if (!configMaps) throw new Error('the stand-in serves no configmaps')
    const stored = api.store.get(configMaps, NS, `svcops-run-${id.toLowerCase()}`)
    expect(JSON.parse(String((stored?.data as Record<string, string> | undefined)?.['run.json']))).toMatchObject({ id, phase: 'running' })

    /** svcops on a machine whose local runs folder is empty (its own), with the same stack file and credentials. */
    const elsewhere = (args: string[]) =>
      runSvcopsInProcess(args, { env: { ...s.env, SVCOPS_RUNS_DIR: mkdtempSync(join(tmpdir(), 'svcops-other-machine-')) } })
    const listed = await elsewhere(['runs', 'list', ...s.args, '--json'])
    expect(listed.code, listed.stderr).toBe(0)
    expect((JSON.parse(listed.stdout) as { runs: { id: string; system: string }[] }).runs.find((r) => r.id === id)).toMatchObject({
      system: 'live',
    })
    const shown = await elsewhere(['runs', 'show', id, ...s.args, '--json'])
    expect(shown.code, shown.stderr).toBe(0)
    const resumed = await elsewhere(['resume', id, ...s.args])
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(api.state.others.every((d) => d.version === '6.0.0')).toBe(true)

    const back = await elsewhere(['rollback', 'live', ...s.args, '--run', id, '--yes'])
    expect(back.code, back.stderr).toBe(0)
    expect(api.state.others.every((d) => d.version === '5.2.0')).toBe(true)
    const after = await elsewhere(['runs', 'list', ...s.args, '--json'])
    expect((JSON.parse(after.stdout) as { runs: { id: string; phase: string }[] }).runs.find((r) => r.id === id)?.phase).toBe('rolled-back')
    expectNoSecret(s, [killed.stdout, killed.stderr, listed.stdout, shown.stdout, resumed.stdout, resumed.stderr, back.stdout, back.stderr])
    for (const secret of Object.values(OPERATOR_SECRETS)) expect(JSON.stringify(api.store.list(configMaps, NS))).not.toContain(secret)
  }, 900_000)

  it("stops at the next step boundary when the API refuses the run store's write (403), naming the ConfigMap and the answer; never goes on silently", async () => {
    const s = setup('5.2.0')
    s.recorder.answer('stack-output', JSON.stringify({ psk: { passesEntropyCheck: true } }))
    s.recorder.answer('preview', preview(COMPONENT_STEPS))
    // The preflight's reviews grant the run store's rights; from the run's first change on (its
    // `config set`), the API refuses every ConfigMap write, as when a Role loses them mid-run.
    const follow = api.state.beforeAnswer
    api.state.beforeAnswer = () => {
      follow?.()
      if (s.recorder.calls().some((c) => c.argv[0] === 'config')) api.state.denied = ['patch configmaps', 'create configmaps']
    }
    try {
      const run = await runSvcopsInProcess(['upgrade', 'live', ...s.args, '--to', '6.0.0', '--ack', allGates('5.2.0', '6.0.0'), '--yes'], {
        env: s.env,
      })
      expect(run.code, run.stderr).not.toBe(0)
      const id = readdirSync(join(s.dir, 'runs')).sort().at(-1) ?? ''
      // The sentence names the store, the object and the API's answer, and where the run stopped.
      expect(run.stderr).toContain(`The run's record could not be written to ConfigMaps svcops-run-* in the namespace ${NS}`)
      expect(run.stderr).toMatch(new RegExp(`configmaps "svcops-(journal|run)-${id.toLowerCase()}" is forbidden`))
      expect(run.stderr).toMatch(/the run stops before .+ so that its record is not lost/)
      // Nothing past the boundary acted: the release installed while the write failed was never
      // started, and the automatic rollback (which goes on without the store) put 5.2.0 back.
      const journal = readFileSync(join(s.dir, 'runs', id, 'journal.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { step: string; status: string })
      expect(journal.filter((e) => e.step === 'start' && e.status === 'ok')).toEqual([])
      expect(run.stderr).toContain('the rollback goes on with the local copy')
      expect(api.state.others.every((d) => d.version === '5.2.0')).toBe(true)
      const record = JSON.parse(readFileSync(join(s.dir, 'runs', id, 'run.json'), 'utf8')) as { phase: string; cause?: string }
      expect(record.phase).toBe('rolled-back')
      expect(record.cause).toContain('is forbidden')
    } finally {
      api.state.denied = []
    }
  })

  it("runs the scheduled live upgrade's command as its CronJob renders it, under the job's own Role enforced by the API; without one right the preflight refuses, naming it", async () => {
    // The shipped prod stack as the program renders it: the CronJob's command, the Role and its binding.
    const prod = await buildStack('prod')
    const container = (
      objectNamed(prod, 'CronJob', 'svc-svcops-live-upgrade').unwrapped as {
        spec: { jobTemplate: { spec: { template: { spec: { containers: { command: string[] }[] } } } } }
      }
    ).spec.jobTemplate.spec.template.spec.containers[0]
    const command = container?.command ?? []
    // Its svcops (`svcops` on the image's PATH, or the image's Node with /opt/svcops/bin/svcops), then its arguments.
    const argv = command.slice(command.findIndex((a) => a === 'svcops' || a.endsWith('/svcops')) + 1)
    expect(argv.slice(0, 4), command.join(' ')).toEqual(['upgrade', 'live', '--env', 'prod'])
    const role = objectNamed(prod, 'Role', 'svc-svcops-live-upgrade').unwrapped
    const binding = objectNamed(prod, 'RoleBinding', 'svc-svcops-live-upgrade').unwrapped
    const roles = kindOfResource('rbac.authorization.k8s.io', 'v1', 'roles')
    const bindings = kindOfResource('rbac.authorization.k8s.io', 'v1', 'rolebindings')
    if (!roles || !bindings) throw new Error('the stand-in serves no roles or rolebindings')
    const put = (info: typeof roles, body: Record<string, unknown>) => {
      api.store.remove(info, NS, String((body.metadata as { name: string }).name))
      expect(api.store.create(info, NS, structuredClone(body) as never, { manager: 'pulumi-kubernetes' }).code).toBe(201)
    }
    put(roles, role)
    put(bindings, binding)
    // svcops as the job runs it: --env prod from its stacks folder, the ServiceAccount's token, the stack's context.
    const s = setup('6.0.0')
    s.recorder.answer('stack-output', JSON.stringify({ psk: { passesEntropyCheck: true } }))
    s.recorder.answer('preview', preview(COMPONENT_STEPS))
    const kubeconfig = api.kubeconfigFor(api.serviceAccountToken(NS, 'svc-svcops-live-upgrade'), 'prod-cluster')
    const env = { ...s.env, KUBECONFIG: kubeconfig, SVCOPS_STACKS_DIR: join(s.dir, 'stacks') }
    const before = api.requests.length
    const run = await runSvcopsInProcess(argv, { env })
    expect(run.code, run.stderr).toBe(0)
    expect(api.state.others.every((d) => d.version === '6.2.0')).toBe(true)
    // Every request was the job's identity's (the API refuses what its Role does not grant: a 403 fails the run).
    const asJob = api.requests.slice(before)
    expect(asJob.length).toBeGreaterThan(0)
    expect(asJob.filter((r) => r.authorization !== `Bearer ${api.serviceAccountToken(NS, 'svc-svcops-live-upgrade')}`)).toEqual([])
    // Its run record reached the cluster under those rights.
    const id = (JSON.parse(run.stdout) as { runId: string }).runId
    expect(api.store.get(kindOfResource('', 'v1', 'configmaps')!, NS, `svcops-run-${id.toLowerCase()}`)).toBeDefined()

    // The same Role without `list` of pods: the preflight's review is denied, named, before any change.
    const narrowed = structuredClone(role) as { rules: { resources: string[]; verbs: string[]; resourceNames?: string[] }[] }
    for (const r of narrowed.rules) if (r.resources.includes('pods') && !r.resourceNames) r.verbs = r.verbs.filter((v) => v !== 'list')
    put(roles, narrowed)
    const s2 = setup('6.0.0')
    s2.recorder.answer('preview', preview(COMPONENT_STEPS))
    const refused = await runSvcopsInProcess(argv, {
      env: { ...s2.env, KUBECONFIG: kubeconfig, SVCOPS_STACKS_DIR: join(s2.dir, 'stacks') },
    })
    expect(refused.code).not.toBe(0)
    expect(refused.stdout + refused.stderr).toMatch(/list .*pods/)
    expect(s2.recorder.calls().filter((c) => c.argv[0] === 'config' || c.argv[0] === 'up')).toEqual([])
    expect(api.state.others.every((d) => d.version === '6.0.0')).toBe(true)
    api.store.remove(roles, NS, 'svc-svcops-live-upgrade')
    api.store.remove(bindings, NS, 'svc-svcops-live-upgrade')
  }, 900_000)

  it("verify live names an instance the controller does not answer for by its UUID, and a pod serving another release's metric names", async () => {
    const s = setup('6.2.0')
    neverConnecting.add('control-panel')
    // A pipeline pod still serving the metric name of before 4.0.
    const pipeline = api.state.others.find((d) => d.app === 'pipeline')
    const pod = pipeline?.pods[0]
    if (pod) pod.metrics = podMetrics('pipeline', '3.0.0')
    const verify = await runSvcopsInProcess(['verify', 'live', ...s.args, '--json'], { env: s.env })
    expect(verify.code).toBe(1)
    const checks = (JSON.parse(verify.stdout) as { components: Array<{ component: string; checks: CheckResult[] }> }).components
    const failed = (c: string) => checks.find((x) => x.component === c)?.checks.filter((r) => !r.ok)
    expect(failed('control-panel')).toEqual([
      {
        check: 'GET /api/v2/controlpanels/{uuid} answers (seed)',
        ok: false,
        detail: `GET /api/v2/controlpanels/${controller.uuids['control-panel'] ?? ''} answered 404`,
      },
    ])
    expect(failed('pipeline')).toEqual([
      { check: 'the metric names of its release', ok: false, detail: 'svc-pipeline-5f6d7c-x1: missing svc_video_frames_in_queue' },
    ])
    expect(failed('ingest')).toEqual([])
    // A pod whose metrics port answers nothing: the API server's 503, named.
    if (pod) delete pod.metrics
    neverConnecting.clear()
    const again = await runSvcopsInProcess(['verify', 'live', ...s.args, '--json'], { env: s.env })
    expect(again.code).toBe(1)
    expect(again.stdout).toContain(
      `svc-pipeline-5f6d7c-x1: The Kubernetes API at ${api.url} answered GET /api/v1/namespaces/${NS}/pods/svc-pipeline-5f6d7c-x1:${METRICS_PORT}/proxy/metrics with HTTP 503 (ServiceUnavailable: error trying to reach service: dial tcp 10.244.0.7:${METRICS_PORT}: connect: connection refused).`,
    )
  })

  /** The PSK the program derives from the stack file (its Secret's value, as the SDK's mock runtime renders it); never printed. */
  async function programPsk(stackFile: string): Promise<string> {
    const rendered = await previewStack({ stackFile, stack: 'prod' })
    return (objectNamed(rendered, 'Secret', 'svc-psk').unwrapped as { stringData: { psk: string } }).stringData.psk
  }

  it('psk rotate: the dry run changes nothing; the run sets a new pskRotation (a new key in the Secret), pulumi up of the live components and the PSK, each reconnected, the gap reported', async () => {
    const s = setup('6.2.0')
    const original = readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')
    const oldKey = await programPsk(s.stackFile)
    const stackBefore = readFileSync(s.stackFile, 'utf8')
    s.recorder.answer('preview', preview([...COMPONENT_STEPS, ...PSK_STEPS]))

    const plan = await runSvcopsInProcess(['psk', 'rotate', ...s.args, '--dry-run', '--json'], { env: s.env })
    expect(plan.code, plan.stderr).toBe(0)
    const steps = (JSON.parse(plan.stdout) as { plan: { steps: PlannedStep[] } }).plan.steps
    const actions = (step: string) => steps.filter((p) => p.step === step).flatMap((p) => p.actions)
    expect(actions('write-psk')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^pulumi config set --path --stack prod --non-interactive -- svcops:deploy\\.pskRotation svcops-\\S+ {3}\\(in ${s.dir}\\) \\(now ${original ?? ''}\\): a new value, never the key$`,
        ),
      ),
    ])
    const apply = actions('apply-psk').join('\n')
    expect(apply).toContain(`pulumi preview --stack prod --json --refresh --non-interactive   (in ${s.dir})`)
    expect(apply).toContain(
      'with a --target per URN it shows: svc-system-controller, then svc-ingest, then svc-pipeline, then svc-control-panel',
    )
    expect(readFileSync(s.stackFile, 'utf8')).toBe(stackBefore)
    expect(s.recorder.calls()).toEqual([])

    const run = await runSvcopsInProcess(['psk', 'rotate', ...s.args, '--yes'], { env: s.env })
    expect(run.code, run.stderr).toBe(0)
    const id = readdirSync(join(s.dir, 'runs')).sort().at(-1) ?? ''
    expect(readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')).toBe(`svcops-${id}`)
    expect(configSets(s)).toEqual([`svcops:deploy.pskRotation svcops-${id}`])
    const ups = s.recorder
      .calls()
      .filter((c) => c.argv[0] === 'up')
      .map((c) => c.argv)
    expect(ups).toHaveLength(1)
    expect(ups[0]?.filter((a, i) => ups[0]?.[i - 1] === '--target')).toEqual([...COMPONENT_STEPS, ...PSK_STEPS].map((x) => x.urn))
    expect(run.stdout).toMatch(
      /^The gap: components disconnected for \d+\.\d s in all \(the start of pulumi up to the last reconnection\); longest \S+ \d+\.\d s\.$/m,
    )
    // Each component checked after the up: connected to the controller by its UUID, on the same release.
    const report = JSON.parse(readFileSync(join(s.dir, 'runs', id, 'report.json'), 'utf8')) as {
      run: { kind: string }
      timeline: Array<{ step: string; status: string; host?: string }>
    }
    expect(report.run.kind).toBe('psk-rotate')
    const checked = report.timeline.filter((e) => e.step === 'check' && e.status === 'ok').map((e) => e.host)
    expect(checked).toEqual([...LIVE_COMPONENTS])
    const newKey = await programPsk(s.stackFile)
    expect(newKey).not.toBe(oldKey)
    expect(original).not.toBe(`svcops-${id}`)
    expectNoSecret(s, [plan.stdout, plan.stderr, run.stdout, run.stderr])
    for (const text of [plan.stdout, run.stdout, run.stderr, ...filesUnder(join(s.dir, 'runs'))]) {
      expect(text).not.toContain(oldKey)
      expect(text).not.toContain(newKey)
    }
  })

  it('psk rotate killed after write-psk is finished by svcops resume: the same pskRotation, one pulumi up, every component checked', async () => {
    const s = setup('6.2.0')
    s.recorder.answer('preview', preview([...COMPONENT_STEPS, ...PSK_STEPS]))
    const runs = join(s.dir, 'runs')
    const killed = await runSvcopsKilledAt(['psk', 'rotate', ...s.args, '--yes'], 'write-psk', runs, { env: s.env })
    expect(killed.signal).toBe('SIGKILL')
    const id = readdirSync(runs).sort().at(-1) ?? ''
    expect(readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')).toBe(`svcops-${id}`)
    expect(s.recorder.calls().filter((c) => c.argv[0] === 'up')).toEqual([])
    const resumed = await runSvcops(['resume', id], { env: s.env })
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
    expect(configSets(s)).toEqual([`svcops:deploy.pskRotation svcops-${id}`])
    expect(s.recorder.calls().filter((c) => c.argv[0] === 'up')).toHaveLength(1)
    const report = JSON.parse(readFileSync(join(runs, id, 'report.json'), 'utf8')) as {
      timeline: Array<{ step: string; status: string; host?: string }>
    }
    expect(report.timeline.filter((e) => e.step === 'check' && e.status === 'ok').map((e) => e.host)).toEqual([...LIVE_COMPONENTS])
    expectNoSecret(s, [resumed.stdout, resumed.stderr])
  })

  it('psk rotate: a component that does not reconnect puts the previous pskRotation back and runs pulumi up again, checked (exit 4)', async () => {
    const s = setup('6.2.0')
    const original = readStackVersion(s.stackFile, 'svcops:deploy.pskRotation') ?? 'initial'
    s.recorder.answer('preview', preview([...COMPONENT_STEPS, ...PSK_STEPS]))
    // The control panel never reconnects after the rotation's up; the rollback's up brings it back.
    neverConnecting.add('control-panel')
    const before = api.state.beforeAnswer
    api.state.beforeAnswer = () => {
      if (s.recorder.calls().filter((c) => c.argv[0] === 'up').length > 1) neverConnecting.clear()
      before?.()
    }
    const run = await runSvcopsInProcess(['psk', 'rotate', ...s.args, '--yes'], { env: s.env })
    expect(run.code, run.stdout + run.stderr).toBe(4)
    const id = readdirSync(join(s.dir, 'runs')).sort().at(-1) ?? ''
    expect(readStackVersion(s.stackFile, 'svcops:deploy.pskRotation')).toBe(original)
    expect(configSets(s)).toEqual([`svcops:deploy.pskRotation svcops-${id}`, `svcops:deploy.pskRotation ${original}`])
    expect(s.recorder.calls().filter((c) => c.argv[0] === 'up')).toHaveLength(2)
    const report = JSON.parse(readFileSync(join(s.dir, 'runs', id, 'report.json'), 'utf8')) as {
      timeline: Array<{ step: string; status: string; host?: string }>
    }
    const back = report.timeline.filter((e) => e.step === 'rollback:check' && e.status === 'ok').map((e) => e.host)
    expect(back).toEqual([...LIVE_COMPONENTS])
    expectNoSecret(s, [run.stdout, run.stderr])
  })
})

describe('the preview rule of a live upgrade', () => {
  const cluster = { prefix: 'svc', stackMap: 'svc-svcops-stack' }
  it('targets the live components (and the PSK only when the run rotates it), and lists anything else', () => {
    const digest = JSON.parse(preview([...COMPONENT_STEPS, ...PSK_STEPS, STACK_COPY])) as Parameters<typeof liveComponentChanges>[0]
    expect(liveComponentChanges(digest, cluster, { rotation: true }).other).toEqual([])
    expect(liveComponentChanges(digest, cluster, { rotation: false }).other).toEqual([
      'replace random:index/randomPassword:RandomPassword svc-psk-random (keepers.rotation)',
      'update kubernetes:core/v1:Secret svc-psk-secret (stringData.psk)',
    ])
    const deleted = JSON.parse(
      preview([{ op: 'delete', urn: urn('svcops:infra:MediaComponent', 'kubernetes:apps/v1:Deployment', 'svc-ingest-deployment') }]),
    ) as Parameters<typeof liveComponentChanges>[0]
    expect(liveComponentChanges(deleted, cluster, { rotation: true }).other).toEqual([
      'delete kubernetes:apps/v1:Deployment svc-ingest-deployment',
    ])
  })
})

describe("the controller through its Service with deploy.tls (the stack's CA from its ConfigMap)", () => {
  const PANEL = 'c41d8a27-93e5-4f0b-b6d2-18e7f5a3c920'
  let api: KubeApiStandin
  let server: HttpsServer
  let port = 0
  const serverName = 'svc-system-controller.svc-prod.svc.cluster.local'
  beforeAll(async () => {
    // A CA and the controller's certificate for its Service's name, as src/infra/tls.ts issues them.
    const dir = mkdtempSync(join(tmpdir(), 'svcops-live-tls-'))
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
    ssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=svc-tls-ca',
    )
    ssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'sc.key',
      '-out',
      'sc.csr',
      '-subj',
      `/CN=${serverName}`,
    )
    writeFileSync(join(dir, 'ext'), `subjectAltName=DNS:${serverName}\n`)
    ssl(
      'x509',
      '-req',
      '-in',
      'sc.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'sc.crt',
      '-days',
      '2',
      '-extfile',
      'ext',
    )
    const ca = readFileSync(join(dir, 'ca.crt'), 'utf8')
    // Another CA, which did not sign the controller's certificate.
    ssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'other.key',
      '-out',
      'other.crt',
      '-days',
      '2',
      '-subj',
      '/CN=other',
    )
    const other = readFileSync(join(dir, 'other.crt'), 'utf8')
    api = await startKubeApiStandin({ configMaps: { 'svc-tls-ca': { 'ca.crt': ca }, 'svc-wrong-ca': { 'ca.crt': other } } }, 'prod-cluster')
    server = createHttpsServer({ key: readFileSync(join(dir, 'sc.key')), cert: readFileSync(join(dir, 'sc.crt')) }, (req, res) => {
      // The seed's endpoint of one control panel on 7.0's prefix, nothing else.
      const known = req.url === `/api/v3/controlpanels/${PANEL}`
      res.writeHead(known ? 200 : 404, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify(known ? { uuid: PANEL } : { error: 'not found' }))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
    const address = server.address()
    port = typeof address === 'object' && address ? address.port : 0
  })
  afterAll(async () => {
    await api.close()
    await new Promise<void>((r) => server.close(() => r()))
  })

  /** The cluster as seen from a workstation, its port-forward replaced by the local address of the stand-in. */
  function cluster(caConfigMap = 'svc-tls-ca'): LiveCluster {
    const target = {
      namespace: NS,
      deployment: 'svc-system-controller',
      container: 'system-controller',
      app: 'system-controller',
      port: 8080,
      context: 'prod-cluster',
      kubeconfig: api.kubeconfig,
    }
    const kube = new KubernetesDriver(target)
    return {
      reach: 'port-forward',
      tls: { caConfigMap, serverName },
      connect: () => Promise.resolve(`https://127.0.0.1:${port}`),
      kube: () => kube,
    } as unknown as LiveCluster
  }

  it("trusts the stack's CA for the Service's name on the port-forward's address, and nothing else (the seed's check of a control panel)", async () => {
    const seed = (c: LiveCluster, version: string) =>
      clusterUnitChecks(
        c,
        { checks: [], uuids: { 'control-panel': PANEL }, product: { prefix: 'svc', dir: 'svc' } },
        'control-panel',
        version,
      )
    expect(await seed(cluster(), '7.0.0')).toEqual([{ check: 'GET /api/v3/controlpanels/{uuid} answers (seed)', ok: true }])
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toContain(`GET /api/v1/namespaces/${NS}/configmaps/svc-tls-ca`)
    const [missing] = await seed(cluster('svc-other-ca'), '7.0.0')
    expect(missing?.ok).toBe(false)
    expect(missing?.detail).toContain(`GET /api/v1/namespaces/${NS}/configmaps/svc-other-ca with HTTP 404`)
    const [untrusted] = await seed(cluster('svc-wrong-ca'), '7.0.0')
    expect(untrusted?.ok).toBe(false)
    expect(untrusted?.detail).toMatch(/certificate/i)
    const [wrongPrefix] = await seed(cluster(), '6.2.0')
    expect(wrongPrefix).toMatchObject({ ok: false, detail: `GET /api/v2/controlpanels/${PANEL} answered 404` })
  })
})

describe('svcops:live with platform kubernetes in a stack file', () => {
  it('is checked by its own schema, an error naming live.<field>; and needs svcops:deploy', () => {
    const base = { 'svcops:product': { prefix: 'svc', dir: 'svc' } }
    expect(() => parseEnvironment({ ...base, 'svcops:live': { platform: 'kubernetes', logLines: 0 } }, 'x', 'Pulumi.x.yaml')).toThrow(
      'Pulumi.x.yaml: live.logLines: 0 is not valid; Too small: expected number to be >=1.',
    )
    expect(() =>
      parseEnvironment({ ...base, 'svcops:live': { platform: 'kubernetes', host: { name: 'live-1' } } }, 'x', 'Pulumi.x.yaml'),
    ).toThrow('Pulumi.x.yaml: live: unknown field host.')
    expect(() => parseEnvironment({ ...base, 'svcops:live': { platform: 'kubernetes' } }, 'x', 'Pulumi.x.yaml')).toThrow(
      'Pulumi.x.yaml: svcops:deploy: missing; live.platform kubernetes takes the namespace, the Deployments and the version from it.',
    )
  })
})
