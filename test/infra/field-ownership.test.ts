/**
 * One writer per object, as the cluster enforces it: the program applied through the in-test
 * engine's model of pulumi-kubernetes (test/infra/engine/kubeProvider.ts) to the Kubernetes API
 * stand-in, which keeps a manager per field (test/support/kube-fields.ts). What the real provider
 * and API server do with a field two writers set, read from their sources, happens here:
 *
 * - today's recording upgrade on Kubernetes stops the service with a merge patch on
 *   `deployments/scale` (svcops' driver, @kubernetes/client-node), then `pulumi up` applies the
 *   Deployment with `replicas`: the provider fails with "Server-Side Apply field conflict detected";
 * - a version change of a stack with more than one recording replica conflicts with the scale-up
 *   DeploymentPatch, which forced `spec.replicas` away from the Deployment's own manager;
 * - the provider forces only with `pulumi.com/patchForce`, its `enablePatchForce` input, or
 *   PULUMI_K8S_ENABLE_PATCH_FORCE (the program's `false` outranks the variable), and takes fields
 *   over only from `kubectl`, `before-first-apply` and its own client-side-apply managers.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify as toYaml } from 'yaml'
import { afterEach, describe, expect, it } from 'vitest'
import { KubernetesDriver } from '../../src/drivers/kubernetes.ts'
import { pulumiArgv, pulumiStackOf, PulumiCli } from '../../src/drivers/pulumi.ts'
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

describe('pulumi up through the in-test provider', () => {
  it(
    "fails as today's upgrade would: svcops scales the Deployment to 0 through deployments/scale, then pulumi up applies it with replicas",
    async () => {
      api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
      const base = await up(api, '1.5.0')
      expect(base.exitCode, errors(base).join('\n') || base.stderr).toBe(0)
      // Every object went in by server-side apply, each under its own field manager; the scale-up
      // patch forced spec.replicas away from the Deployment's manager.
      expect(liveDeployment(api).replicas).toBe(3)
      const owners = liveDeployment(api).managers
      expect(owners.every((m) => /^pulumi-kubernetes-[0-9a-f]{8}$/.test(m.manager) && m.operation === 'Apply')).toBe(true)
      expect(new Set(owners.map((m) => m.manager)).size).toBe(2)

      // svcops' stop, as src/drivers/kubernetes.ts sends it.
      const kube = new KubernetesDriver({
        namespace: 'svc-prod',
        deployment: 'svc-recording',
        container: 'recording-service',
        port: 8080,
        context: 'prod-cluster',
        kubeconfig: api.kubeconfig,
      })
      await kube.scale(0)
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
    "fails a version change of a stack with several replicas on the scale-up patch's own field, whatever PULUMI_K8S_ENABLE_PATCH_FORCE says",
    async () => {
      api = await startKubeApiStandin({ namespace: 'svc-prod', preexisting: false }, 'prod-cluster')
      const base = await up(api, '1.5.0')
      expect(base.exitCode, errors(base).join('\n')).toBe(0)
      const patchManager = liveDeployment(api).managers.find((m) => JSON.stringify(m.fieldsV1).includes('f:replicas'))?.manager
      // The variable would force; the program's provider sets enablePatchForce: false, which outranks it.
      const upgrade = await up(api, '2.0.0', base, { PULUMI_K8S_ENABLE_PATCH_FORCE: 'true' })
      expect(upgrade.exitCode).toBe(255)
      expect(errors(upgrade)[0]).toContain(`Apply failed with 1 conflict: conflict with "${patchManager}": .spec.replicas`)
      expect(liveDeployment(api).image).toBe('registry.example.internal/svc/recording:1.5.0')
    },
    RUN_TIMEOUT,
  )
})

describe('the in-test Pulumi on PATH (the argv recorder with an engine)', () => {
  it(
    "plays svcops' own pulumi up and preview against the stand-in: the preview after a stop through deployments/scale fails with the provider's conflict",
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
      savedEnv = { ...process.env }
      process.env.PATH = `${recorder.binDir}:${process.env.PATH ?? ''}`
      process.env.KUBECONFIG = api.kubeconfig
      const cli = new PulumiCli(pulumiStackOf(stackFile, 'prod'))

      const first = await cli.run(pulumiArgv.up(cli.stack, []), { check: false })
      expect(first.code, first.stdout + first.stderr).toBe(0)
      expect(liveDeployment(api)).toMatchObject({ replicas: 3, image: 'registry.example.internal/svc/recording:1.5.0' })
      expect((await cli.outputs()) as object).not.toEqual({})

      await new KubernetesDriver({
        namespace: 'svc-prod',
        deployment: 'svc-recording',
        container: 'recording-service',
        port: 8080,
        context: 'prod-cluster',
        kubeconfig: api.kubeconfig,
      }).scale(0)
      await cli.setVersion('svcops:recording.version', '2.0.0')
      await expect(cli.preview()).rejects.toThrow(
        /^'pulumi preview' of stack 'prod' failed \(exit 255\): Preview failed: the Kubernetes API server reported that "svc-prod\/svc-recording" failed to fully initialize or become live: Server-Side Apply field conflict detected\..*conflict with "kubernetes-client-javascript" with subresource "scale" using apps\/v1: \.spec\.replicas/s,
      )
      // A preview is a dry run: the stopped service is as it was.
      expect(liveDeployment(api)).toMatchObject({ replicas: 0, image: 'registry.example.internal/svc/recording:1.5.0' })
      expect(recorder.calls().map((c) => c.argv.slice(0, 2).join(' '))).toEqual([
        'up --stack',
        'stack output',
        'config set',
        'preview --stack',
      ])
    },
    RUN_TIMEOUT,
  )
})

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

  it('takes fields over from kubectl and before-first-apply without a conflict, and from nobody else', async () => {
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
    await patchReplicas(api, 2, 'kubectl-edit/v1.31.2')
    await expect(model.apply(URN, TYPE, deployment(1), prior, false)).rejects.toThrow(/conflict with "kubectl-edit" using apps\/v1/)
    // A preview is the same apply as a dry run: it fails the same way and changes nothing.
    await expect(model.apply(URN, TYPE, deployment(1), prior, true)).rejects.toThrow(/conflict with "kubectl-edit"/)
    expect(liveDeployment(api).replicas).toBe(2)
  })
})

/** A merge patch as the administrator, with the given User-Agent (the manager the API server records). */
async function fetchAsAdmin(cluster: KubeApiStandin, path: string, body: unknown, userAgent: string): Promise<number> {
  const url = new URL(path, cluster.url)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'PATCH',
        agent: false,
        ca: cluster.caCertificate,
        headers: { Authorization: `Bearer ${cluster.token}`, 'Content-Type': 'application/merge-patch+json', 'User-Agent': userAgent },
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
