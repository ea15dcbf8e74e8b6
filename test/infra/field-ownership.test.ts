/**
 * One writer per object, as the cluster enforces it: the program applied through the in-test
 * engine's model of pulumi-kubernetes (test/infra/engine/kubeProvider.ts) to the Kubernetes API
 * stand-in, which keeps a manager per field (test/support/kube-fields.ts). What the real provider
 * and API server do with a field two writers set, read from their sources, happens here:
 *
 * - the earlier recording upgrade on Kubernetes stopped the service with a merge patch on
 *   `deployments/scale` (as @kubernetes/client-node sends it), then `pulumi up` applied the
 *   Deployment with `replicas`: the provider fails with "Server-Side Apply field conflict detected";
 * - today's upgrade holds the replicas in the stack file (`svcops:deploy.recording.heldReplicas`,
 *   `pulumi config set --path`) and applies them with `pulumi up --target`: the Deployment's own
 *   manager is the one writer of `spec.replicas`, from the stop through the one-pod start to the
 *   configured replicas, and svcops sends no write to the API;
 * - the provider forces only with `pulumi.com/patchForce`, its `enablePatchForce` input, or
 *   PULUMI_K8S_ENABLE_PATCH_FORCE (the program's `false` outranks the variable), and takes fields
 *   over only from `kubectl`, `before-first-apply` and its own client-side-apply managers.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterEach, describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { events } from '../../src/core/events.ts'
import { HELD_REPLICAS_KEY, pulumiArgv, pulumiStackOf, PulumiCli } from '../../src/drivers/pulumi.ts'
import { openKubernetesPlatform } from '../../src/recording/kubernetes/recording-kubernetes-platform.ts'
import { settingsFor } from '../../src/recording/recording-settings.ts'
import { createPulumiArgvRecorder } from '../support/pulumi-argv-recorder.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import { managedFieldsOf } from '../support/kube-store.ts'
import { kindOfResource } from '../support/kube-kinds.ts'
import { errors, runEngine, type EngineRun } from './engine/engine.ts'
import { KubeProviderModel, ProviderError } from './engine/kubeProvider.ts'
import { stackConfig, writeStack, type LooseConfig } from './helpers.ts'

const CREDENTIALS: { config: Record<string, string>; secretKeys: string[] } = {
  config: { 'svcops:databasePassword': 'db-Pa55word-for-the-field-owner-tests-5d2e' },
  secretKeys: ['svcops:databasePassword'],
}
// A run starts Node, the SDK and the provider SDKs: tens of seconds each on a busy machine.
const RUN_TIMEOUT = 900_000
const DEPLOYMENTS = kindOfResource('apps', 'v1', 'deployments')!
const DEPLOYMENT_PATH = '/apis/apps/v1/namespaces/svc-prod/deployments/svc-recording'

let api: KubeApiStandin | undefined
let savedEnv: NodeJS.ProcessEnv | undefined
afterEach(async () => {
  await api?.close()
  api = undefined
  if (savedEnv) process.env = savedEnv
  savedEnv = undefined
})

/** `pulumi up` of prod at `version` against the stand-in, after `base`. */
function up(
  cluster: KubeApiStandin,
  version: string,
  base?: EngineRun,
  env: Record<string, string> = {},
  change?: (c: LooseConfig) => void,
) {
  const config = structuredClone(stackConfig('prod'))
  ;(config['svcops:recording'] as LooseConfig).version = version
  change?.(config)
  return runEngine({
    stack: 'prod',
    preview: false,
    stackFile: writeStack('prod', config),
    cluster: true,
    env: { KUBECONFIG: cluster.kubeconfig, ...env },
    ...(base ? { state: base.state } : {}),
    ...CREDENTIALS,
  })
}

function liveDeployment(cluster: KubeApiStandin) {
  const d = cluster.store.get(DEPLOYMENTS, 'svc-prod', 'svc-recording') as {
    spec: { replicas: number; template: { spec: { containers: { image: string }[] } } }
  }
  return { replicas: d.spec.replicas, image: d.spec.template.spec.containers[0]?.image, managers: managedFieldsOf(d) }
}

/** The managers that own `spec.replicas` of the recording service's Deployment. */
function replicasOwners(cluster: KubeApiStandin): string[] {
  return liveDeployment(cluster)
    .managers.filter((m) => JSON.stringify(m.fieldsV1).includes('"f:replicas"'))
    .map((m) => `${m.manager}${m.subresource ? `/${m.subresource}` : ''}`)
}

describe('pulumi up through the in-test provider', () => {
  it(
    'fails as the earlier upgrade did: the Deployment scaled to 0 through deployments/scale, then pulumi up applies it with replicas',
    async () => {
      api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
      const base = await up(api, '1.5.0')
      expect(base.exitCode, errors(base).join('\n') || base.stderr).toBe(0)
      // Every object went in by a client-side create (POST) under the provider's static manager
      // (await.go Creation), which the first update's take-over moves to the resource's own.
      expect(liveDeployment(api).replicas).toBe(3)
      const owners = liveDeployment(api).managers
      expect(owners.map((m) => `${m.manager} ${m.operation}`)).toEqual(['pulumi-kubernetes Update'])

      // The earlier stop: a merge patch of the scale subresource, as @kubernetes/client-node sends it.
      expect(await fetchAsAdmin(api, `${DEPLOYMENT_PATH}/scale`, { spec: { replicas: 0 } }, 'kubernetes-client-javascript/1.0.0')).toBe(200)
      expect(liveDeployment(api).managers.find((m) => m.subresource === 'scale')?.manager).toBe('kubernetes-client-javascript')

      const upgrade = await up(api, '2.0.0', base)
      expect(upgrade.exitCode).toBe(255)
      const [message] = errors(upgrade)
      expect(message).toMatch(
        /^the Kubernetes API server reported that "svc-prod\/svc-recording" failed to fully initialize or become live: Server-Side Apply field conflict detected\. See https:\/\/www\.pulumi\.com\/registry\/packages\/kubernetes\/how-to-guides\/managing-resources-with-server-side-apply\/#handle-field-conflicts-on-existing-resources for troubleshooting help\.\nThe resource managed by field manager "pulumi-kubernetes-[0-9a-f]{8}" had an apply conflict: Apply failed with 1 conflict: conflict with "kubernetes-client-javascript" with subresource "scale" using apps\/v1: \.spec\.replicas$/,
      )
      expect(upgrade.logs.find((l) => l.message === message)?.urn).toMatch(
        /RecordingService\$kubernetes:apps\/v1:Deployment::svc-recording-deployment$/,
      )
      // Nothing of the new version reached the Deployment; the service stays stopped.
      expect(liveDeployment(api)).toMatchObject({ replicas: 0, image: 'registry.example.internal/svc/recording:1.5.0' })
    },
    RUN_TIMEOUT,
  )

  it(
    'changes the version of a stack with several replicas without a conflict, whatever PULUMI_K8S_ENABLE_PATCH_FORCE says: the Deployment alone owns spec.replicas',
    async () => {
      api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
      const base = await up(api, '1.5.0')
      expect(base.exitCode, errors(base).join('\n')).toBe(0)
      expect(replicasOwners(api)).toEqual(['pulumi-kubernetes'])
      // The program's provider sets enablePatchForce: false, which outranks the variable: nothing is forced.
      const upgrade = await up(api, '2.0.0', base, { PULUMI_K8S_ENABLE_PATCH_FORCE: 'true' })
      expect(upgrade.exitCode, errors(upgrade).join('\n')).toBe(0)
      expect(liveDeployment(api)).toMatchObject({ replicas: 3, image: 'registry.example.internal/svc/recording:2.0.0' })
      // The create's manager became the resource's own at the first update: still one owner.
      expect(replicasOwners(api)).toEqual([expect.stringMatching(/^pulumi-kubernetes-[0-9a-f]{8}$/)])
    },
    RUN_TIMEOUT,
  )
})

describe("svcops' recording upgrade on Kubernetes, through the in-test Pulumi on PATH (the argv recorder with an engine)", () => {
  it(
    'stops, installs and starts through the stack file and pulumi up only: no write of svcops reaches the API, and the Deployment keeps one owner of its replicas',
    async () => {
      api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
      // A project folder as an operator has it: Pulumi.yaml and its stack file under stackConfigDir.
      const dir = mkdtempSync(join(tmpdir(), 'svcops-field-owner-project-'))
      mkdirSync(join(dir, 'stacks'))
      writeFileSync(
        join(dir, 'Pulumi.yaml'),
        toYaml({ name: 'svcops', runtime: 'nodejs', main: 'src/infra/index.ts', stackConfigDir: 'stacks' }),
      )
      const stackFile = join(dir, 'stacks', 'Pulumi.prod.yaml')
      const config = structuredClone(stackConfig('prod'))
      ;(config['svcops:recording'] as LooseConfig).version = '1.5.0'
      writeFileSync(stackFile, toYaml({ config }))
      const recorder = createPulumiArgvRecorder({ applyConfigSetTo: stackFile, engine: CREDENTIALS })
      recorder.answer('version', 'v3.150.0\n')
      recorder.answer('stack', JSON.stringify([{ name: 'prod', current: true, updateInProgress: false }]))
      savedEnv = { ...process.env }
      process.env.PATH = `${recorder.binDir}:${process.env.PATH ?? ''}`
      process.env.KUBECONFIG = api.kubeconfig
      const cli = new PulumiCli(pulumiStackOf(stackFile, 'prod'))
      const first = await cli.run(pulumiArgv.up(cli.stack, []), { check: false })
      expect(first.code, first.stdout + first.stderr).toBe(0)
      expect(liveDeployment(api)).toMatchObject({ replicas: 3, image: 'registry.example.internal/svc/recording:1.5.0' })
      expect(replicasOwners(api)).toEqual(['pulumi-kubernetes'])
      const writesBefore = api.requests.length

      const env = loadEnvironmentFile(stackFile, 'prod')
      const platform = openKubernetesPlatform(env, { ...settingsFor(env, env.recording!), healthTimeoutMs: 120_000 })
      const target = platform.targets[0]!
      await platform.checkPreflight()
      await platform.stop(target)
      expect(liveDeployment(api).replicas).toBe(0)
      expect(readStack(stackFile).heldReplicas).toBe(0)
      await platform.install(target, '2.0.0')
      await platform.reviewConfig(target)
      const started = await platform.start(target)
      expect(started.changed?.[0]).toMatch(/: svc-recording on 2\.0\.0, 3 replica\(s\)$/)
      expect(liveDeployment(api)).toMatchObject({ replicas: 3, image: 'registry.example.internal/svc/recording:2.0.0' })
      // The stack file is as the operator left it, but for the version: the hold is gone.
      expect(readStack(stackFile)).not.toHaveProperty('heldReplicas')
      expect(replicasOwners(api)).toEqual([expect.stringMatching(/^pulumi-kubernetes-[0-9a-f]{8}$/)])

      // Every write the run caused is Pulumi's server-side apply; svcops itself only read.
      const writes = api.requests.slice(writesBefore).filter((r) => r.method !== 'GET' && !r.path.endsWith('/selfsubjectaccessreviews'))
      expect(writes.length).toBeGreaterThan(0)
      // Server-side applies, and the first update's take-over of the create's manager (a JSON patch of
      // managedFields, await.go fixCSAFieldManagers), once.
      const deploymentWrites = writes.filter((r) => r.path.startsWith(DEPLOYMENT_PATH))
      expect(deploymentWrites.filter((r) => r.contentType !== 'application/apply-patch+yaml')).toEqual([
        expect.objectContaining({ method: 'PATCH', contentType: 'application/json-patch+json' }),
      ])
      expect(writes.filter((r) => r.path.startsWith(DEPLOYMENT_PATH) && r.path !== DEPLOYMENT_PATH)).toEqual([])
      const pulumiCalls = recorder
        .calls()
        .map((c) => c.argv.filter((a) => !a.startsWith('--') && a !== 'prod' && !a.startsWith('urn:')).join(' '))
      expect(pulumiCalls).toEqual([
        'up',
        'version',
        'stack ls',
        'preview',
        `config set ${HELD_REPLICAS_KEY} 0`,
        'preview',
        'up',
        'config set svcops:recording.version 2.0.0',
        'preview',
        `config set ${HELD_REPLICAS_KEY} 1`,
        'preview',
        'up',
        `config rm ${HELD_REPLICAS_KEY}`,
        'preview',
        'up',
      ])
      // Each up named its targets: the Deployment (and the jobs' copy of the stack file).
      const ups = recorder
        .calls()
        .filter((c) => c.argv[0] === 'up')
        .slice(1)
      expect(ups).toHaveLength(3)
      for (const u of ups)
        expect(u.argv.some((a) => /RecordingService\$kubernetes:apps\/v1:Deployment::svc-recording-deployment$/.test(a))).toBe(true)
    },
    RUN_TIMEOUT,
  )
})

describe('an unready object the refresh finds (initialization errors), through the in-test Pulumi on PATH', () => {
  it(
    'recording upgrade not refused by an unrelated unready object, with a sentence naming it; pulumi up never targets it',
    async () => {
      api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
      const dir = mkdtempSync(join(tmpdir(), 'svcops-unready-project-'))
      mkdirSync(join(dir, 'stacks'))
      writeFileSync(
        join(dir, 'Pulumi.yaml'),
        toYaml({ name: 'svcops', runtime: 'nodejs', main: 'src/infra/index.ts', stackConfigDir: 'stacks' }),
      )
      const stackFile = join(dir, 'stacks', 'Pulumi.prod.yaml')
      const config = structuredClone(stackConfig('prod'))
      ;(config['svcops:recording'] as LooseConfig).version = '1.5.0'
      writeFileSync(stackFile, toYaml({ config }))
      const recorder = createPulumiArgvRecorder({ applyConfigSetTo: stackFile, engine: CREDENTIALS })
      recorder.answer('version', 'v3.150.0\n')
      recorder.answer('stack', JSON.stringify([{ name: 'prod', current: true, updateInProgress: false }]))
      savedEnv = { ...process.env }
      process.env.PATH = `${recorder.binDir}:${process.env.PATH ?? ''}`
      process.env.KUBECONFIG = api.kubeconfig
      const cli = new PulumiCli(pulumiStackOf(stackFile, 'prod'))
      const first = await cli.run(pulumiArgv.up(cli.stack, []), { check: false })
      expect(first.code, first.stdout + first.stderr).toBe(0)

      // The ingest's pod crash-loops (nothing of the recording service's): its Deployment has no available replica.
      const ingest = cluster().store.get(DEPLOYMENTS, 'svc-prod', 'svc-ingest') as {
        spec: { template: { spec: { containers: { image: string }[] } } }
      }
      const image = ingest.spec.template.spec.containers[0]?.image ?? ''
      cluster().state.others.push({
        deployment: 'svc-ingest',
        app: 'ingest',
        container: 'ingest',
        image: image.split(':')[0] ?? image,
        version: image.split(':')[1] ?? '',
        replicas: 1,
        pods: [{ name: 'svc-ingest-7c9d-x1', version: image.split(':')[1] ?? '', ready: false, waiting: 'CrashLoopBackOff', restarts: 7 }],
      })
      // The preview as Pulumi prints it: an update step of the ingest's Deployment with no diff, its initErrors in oldState.
      const preview = JSON.parse((await cli.run(pulumiArgv.preview(cli.stack))).stdout) as {
        steps: { op: string; urn: string; detailedDiff?: unknown; oldState?: { initErrors?: string[] } }[]
      }
      const step = preview.steps.find((x) => x.op !== 'refresh' && x.urn.endsWith('::svc-ingest-deployment'))
      expect(step).toMatchObject({
        op: 'update',
        oldState: {
          initErrors: [
            '[MinimumReplicasUnavailable] Deployment does not have minimum availability.',
            'Minimum number of live Pods was not attained',
          ],
        },
      })
      expect(step?.detailedDiff).toBeUndefined()

      const said: string[] = []
      const unsubscribe = events.subscribe((e) => {
        if (e.kind === 'warn') said.push(e.message)
      })
      try {
        const env = loadEnvironmentFile(stackFile, 'prod')
        const platform = openKubernetesPlatform(env, { ...settingsFor(env, env.recording!), healthTimeoutMs: 120_000 })
        const target = platform.targets[0]!
        const facts = await platform.checkPreflight()
        expect(facts).toMatchObject({
          notReady: [expect.stringMatching(/^kubernetes:apps\/v1:Deployment svc-ingest-deployment is not ready \(/)],
        })
        expect(said).toContainEqual(
          expect.stringMatching(
            /^pulumi preview of stack 'prod': kubernetes:apps\/v1:Deployment svc-ingest-deployment is not ready \(\[MinimumReplicasUnavailable\] .*Minimum number of live Pods was not attained\); not the recording service's: the run goes on/,
          ),
        )
        await platform.stop(target)
        await platform.install(target, '2.0.0')
        await platform.reviewConfig(target)
        await platform.start(target)
      } finally {
        unsubscribe()
      }
      expect(liveDeployment(cluster())).toMatchObject({ replicas: 3, image: 'registry.example.internal/svc/recording:2.0.0' })
      // No `up` named the ingest: targeted, its empty update (an await of a crash-looping pod) never ran.
      const ups = recorder
        .calls()
        .filter((c) => c.argv[0] === 'up')
        .slice(1)
      expect(ups.length).toBeGreaterThan(0)
      for (const u of ups) expect(u.argv.some((a) => a.endsWith('::svc-ingest-deployment'))).toBe(false)
      // Untargeted, that update fails as the awaiter does: the unready object is what `pulumi up` would wait for.
      const whole = await cli.run(pulumiArgv.up(cli.stack, []), { check: false })
      expect(whole.code).not.toBe(0)
      expect(whole.stdout + whole.stderr).toContain(
        `"svc-prod/svc-ingest" failed to fully initialize or become live: 'svc-ingest' timed out waiting to be Ready`,
      )
    },
    RUN_TIMEOUT,
  )
})

/** The stand-in of this file's case (set by it). */
function cluster(): KubeApiStandin {
  if (!api) throw new Error('no stand-in started')
  return api
}

/** The stack file's `svcops:deploy.recording` section. */
function readStack(file: string): Record<string, unknown> {
  const doc = parseYaml(readFileSync(file, 'utf8')) as { config: { 'svcops:deploy': { recording: Record<string, unknown> } } }
  return doc.config['svcops:deploy'].recording
}

describe("the provider's force and take-over rules, against the stand-in", () => {
  const deployment = (replicas: number, annotations: Record<string, string> = {}) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'svc-recording', namespace: 'svc-prod', annotations },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'r' } },
      template: { metadata: { labels: { app: 'r' } }, spec: { containers: [{ name: 'recording-service', image: 'r:1.5.0' }] } },
    },
  })
  const TYPE = 'kubernetes:apps/v1:Deployment'
  const URN = 'urn:pulumi:prod::svcops::kubernetes:apps/v1:Deployment::svc-recording-deployment'

  /** An admin's merge patch of the replicas, as `kubectl` (or anyone) sends it. */
  async function patchReplicas(cluster: KubeApiStandin, replicas: number, userAgent: string) {
    const res = await fetchAsAdmin(
      cluster,
      `/apis/apps/v1/namespaces/svc-prod/deployments/svc-recording`,
      { spec: { replicas } },
      userAgent,
    )
    expect(res).toBe(200)
  }

  it('forces only with the annotation, the provider input or the variable, in that order', async () => {
    api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
    const provider = (inputs: Record<string, string>, env: Record<string, string> = {}) =>
      new KubeProviderModel({ kubeconfig: api?.kubeconfig ?? '', context: 'prod-cluster', ...inputs }, env)
    const created = await provider({}).apply(URN, TYPE, deployment(1), undefined, false)
    const prior = { fieldManager: created.fieldManager }
    await patchReplicas(api, 0, 'svcops-test/1.0')
    const conflict = provider({}).apply(URN, TYPE, deployment(1), prior, false)
    await expect(conflict).rejects.toThrow(ProviderError)
    await expect(conflict).rejects.toThrow(/conflict with "svcops-test" using apps\/v1: \.spec\.replicas/)
    await expect(
      provider({ enablePatchForce: 'false' }, { PULUMI_K8S_ENABLE_PATCH_FORCE: 'true' }).apply(URN, TYPE, deployment(1), prior, false),
    ).rejects.toThrow(/Server-Side Apply field conflict detected/)
    // The variable forces when the input is not given; the annotation forces whatever else says.
    await provider({}, { PULUMI_K8S_ENABLE_PATCH_FORCE: 'true' }).apply(URN, TYPE, deployment(1), prior, false)
    expect(liveDeployment(api).replicas).toBe(1)
    await patchReplicas(api, 0, 'svcops-test/1.0')
    await provider({ enablePatchForce: 'false' }).apply(URN, TYPE, deployment(1, { 'pulumi.com/patchForce': 'true' }), prior, false)
    expect(liveDeployment(api).replicas).toBe(1)
  })

  it('takes fields over from every manager named kubectl* or before-first-apply without a subresource, and from nobody else', async () => {
    api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
    const model = new KubeProviderModel({ kubeconfig: api.kubeconfig, context: 'prod-cluster' }, {})
    const created = await model.apply(URN, TYPE, deployment(1), undefined, false)
    const prior = { fieldManager: created.fieldManager }
    await patchReplicas(api, 2, 'kubectl/v1.31.2 (linux/amd64)')
    await model.apply(URN, TYPE, deployment(1), prior, false)
    expect(liveDeployment(api).replicas).toBe(1)
    expect(liveDeployment(api).managers.map((m) => m.manager)).toEqual([created.fieldManager])
    await patchReplicas(api, 2, 'before-first-apply')
    await model.apply(URN, TYPE, deployment(1), prior, false)
    expect(liveDeployment(api).managers.map((m) => m.manager)).toEqual([created.fieldManager])
    // An operator's `kubectl edit`: the preview (a dry-run apply, no take-over) reports the conflict
    // and changes nothing; the update matches `kubectl` as a prefix (fluxcd ssa/patch.go
    // patchReplaceFieldsManagers), takes the field over and silently puts the program's value back.
    await patchReplicas(api, 2, 'kubectl-edit/v1.31.2')
    await expect(model.apply(URN, TYPE, deployment(1), prior, true)).rejects.toThrow(/conflict with "kubectl-edit" using apps\/v1/)
    expect(liveDeployment(api).replicas).toBe(2)
    await model.apply(URN, TYPE, deployment(1), prior, false)
    expect(liveDeployment(api).replicas).toBe(1)
    expect(liveDeployment(api).managers.map((m) => m.manager)).toEqual([created.fieldManager])
    // `kubectl scale` writes the scale subresource: not taken over, a conflict.
    expect(await fetchAsAdmin(api, `${DEPLOYMENT_PATH}/scale`, { spec: { replicas: 2 } }, 'kubectl/v1.31.2 (linux/amd64)')).toBe(200)
    await expect(model.apply(URN, TYPE, deployment(1), prior, false)).rejects.toThrow(
      /conflict with "kubectl" with subresource "scale" using apps\/v1: \.spec\.replicas/,
    )
    expect(liveDeployment(api).replicas).toBe(2)
  })

  it('creates by POST under pulumi-kubernetes: an object already there is refused with AlreadyExists, unless upsertExistingObjects', async () => {
    api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
    const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'svc-prod' } }
    const NS_TYPE = 'kubernetes:core/v1:Namespace'
    const NS_URN = 'urn:pulumi:prod::svcops::kubernetes:core/v1:Namespace::namespace'
    // The runbook's `kubectl create namespace` before the first `pulumi up`.
    expect(await postAsAdmin(api, '/api/v1/namespaces', namespace, 'kubectl-create/v1.32.4')).toBe(201)
    const model = new KubeProviderModel({ kubeconfig: api.kubeconfig, context: 'prod-cluster' }, {})
    await expect(model.apply(NS_URN, NS_TYPE, namespace, undefined, false)).rejects.toThrow(
      /^resource "urn:pulumi:prod::svcops::kubernetes:core\/v1:Namespace::namespace" was not successfully created by the Kubernetes API server: namespaces "svc-prod" already exists\n\nThe resource already exists in the cluster\./,
    )
    // The preview's create is the same POST as a dry run: it fails the same way.
    await expect(model.apply(NS_URN, NS_TYPE, namespace, undefined, true)).rejects.toThrow(/namespaces "svc-prod" already exists/)
    const upsert = new KubeProviderModel({ kubeconfig: api.kubeconfig, context: 'prod-cluster', upsertExistingObjects: 'true' }, {})
    const adopted = await upsert.apply(NS_URN, NS_TYPE, namespace, undefined, false)
    expect(adopted.live).toBeDefined()
    // A new object: a POST with fieldManager=pulumi-kubernetes; its every field is that Update entry's.
    await model.apply(URN, TYPE, deployment(1), undefined, false)
    const post = api.requests.find((r) => r.method === 'POST' && r.path === '/apis/apps/v1/namespaces/svc-prod/deployments')
    expect(post?.query).toEqual({ fieldManager: 'pulumi-kubernetes' })
    expect(liveDeployment(api).managers.map((m) => `${m.manager} ${m.operation}`)).toEqual(['pulumi-kubernetes Update'])
  })

  it('forces an object without managedFields (a legacy object before-first-apply owns) even where nothing else forces', async () => {
    api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
    const model = new KubeProviderModel({ kubeconfig: api.kubeconfig, context: 'prod-cluster', enablePatchForce: 'false' }, {})
    const created = await model.apply(URN, TYPE, deployment(1), undefined, false)
    const clear = await jsonPatchAsAdmin(api, DEPLOYMENT_PATH, [{ op: 'replace', path: '/metadata/managedFields', value: [] }])
    expect(clear).toBe(200)
    await model.apply(URN, TYPE, deployment(2), { fieldManager: created.fieldManager }, false)
    const apply = api.requests.filter((r) => r.method === 'PATCH' && r.path === DEPLOYMENT_PATH).at(-1)
    expect(apply?.query).toMatchObject({ fieldManager: created.fieldManager, force: 'true' })
    expect(liveDeployment(api).replicas).toBe(2)
  })
})

/** A POST as the administrator, with the given User-Agent (the manager the API server records). */
function postAsAdmin(cluster: KubeApiStandin, path: string, body: unknown, userAgent: string): Promise<number> {
  return fetchAsAdmin(cluster, path, body, userAgent, 'POST', 'application/json')
}

/** A JSON patch as the administrator. */
function jsonPatchAsAdmin(cluster: KubeApiStandin, path: string, body: unknown): Promise<number> {
  return fetchAsAdmin(cluster, path, body, 'svcops-test/1.0', 'PATCH', 'application/json-patch+json')
}

/** A merge patch (or `method` with `contentType`) as the administrator, with the given User-Agent (the manager the API server records). */
async function fetchAsAdmin(
  cluster: KubeApiStandin,
  path: string,
  body: unknown,
  userAgent: string,
  method = 'PATCH',
  contentType = 'application/merge-patch+json',
): Promise<number> {
  const url = new URL(path, cluster.url)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        agent: false,
        ca: cluster.caCertificate,
        headers: { Authorization: `Bearer ${cluster.token}`, 'Content-Type': contentType, 'User-Agent': userAgent },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}
