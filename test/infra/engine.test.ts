/**
 * The program run as `pulumi preview` and `pulumi up` run it: through @pulumi/pulumi's own run
 * entry, with the stack's config as the CLI passes it, against a stand-in engine that records
 * every registration with its options (test/infra/engine). What holds here holds for what the
 * engine receives; what the providers and the cluster then do is the replace rules' and the
 * documentation's business (docs/deploy.md, "What the engine tests prove").
 */
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { beforeAll, describe, expect, it } from 'vitest'
import type { IDeployment } from 'kubernetes-models/apps/v1'
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1'
import type { IConfigMap, IService, IServiceAccount } from 'kubernetes-models/v1'
import { validateObject } from '../../src/infra/validate.ts'
import { errors, kubeObjects, projectFile, runEngine, type EngineRun, type Registration, type RunOptions } from './engine/engine.ts'
import { planChanges, referencedByPods, type Change } from './engine/replace.ts'
import { findSecretDerivations, publicValuesOf, secretsOf } from './engine/secretSearch.ts'
import { hasUnknown, plain, secret, UNKNOWN, type Value } from './engine/wire.ts'
import { deployOf, stackConfig, writeStack, type LooseConfig } from './helpers.ts'

const STACKS = ['dev', 'staging', 'prod'] as const
type Stack = (typeof STACKS)[number]
const DB_PASSWORD = 'db-Pa55word-for-the-engine-tests-7f3a91'
const MEDIA = ['svc-ingest', 'svc-pipeline', 'svc-control-panel']

// How each stack's operator supplies the database password: dev by environment variable, the
// others with `pulumi config set --secret svcops:databasePassword` (what the CLI then passes).
const CREDENTIALS: Record<Stack, Partial<RunOptions>> = {
  dev: { env: { SVCOPS_RECORDING_DB_PASSWORD: DB_PASSWORD } },
  staging: { config: { 'svcops:databasePassword': DB_PASSWORD }, secretKeys: ['svcops:databasePassword'] },
  prod: { config: { 'svcops:databasePassword': DB_PASSWORD }, secretKeys: ['svcops:databasePassword'] },
}

const runs = new Map<string, EngineRun>()
function run(stack: Stack, mode: 'preview' | 'update'): EngineRun {
  const r = runs.get(`${stack}:${mode}`)
  if (!r) throw new Error(`no ${mode} run of ${stack}`)
  return r
}

/** Runs a variant of `stack` (its config changed by `change`) as `pulumi up` after `base`. */
async function upAfter(stack: Stack, base: EngineRun, change: (c: LooseConfig) => void): Promise<EngineRun> {
  const config = structuredClone(stackConfig(stack))
  change(config)
  return runEngine({ stack, preview: false, stackFile: writeStack(stack, config), state: base.state, ...CREDENTIALS[stack] })
}

// A run starts Node, the SDK and the provider SDKs: tens of seconds each on a busy machine.
const RUN_TIMEOUT = 600_000

beforeAll(async () => {
  const all = STACKS.flatMap((stack) => (['preview', 'update'] as const).map((mode) => ({ stack, mode })))
  // Two at a time: the child processes wait on the gRPC server in this process as much as on CPU.
  for (let i = 0; i < all.length; i += 2) {
    await Promise.all(
      all.slice(i, i + 2).map(async ({ stack, mode }) => {
        runs.set(`${stack}:${mode}`, await runEngine({ stack, preview: mode === 'preview', ...CREDENTIALS[stack] }))
      }),
    )
  }
}, RUN_TIMEOUT * 2)

type Obj = Record<string, Value>
function find(r: EngineRun, kind: string, name: string): { reg: Registration; o: Obj } {
  for (const reg of kubeObjects(r)) {
    const o = plain(reg.inputs) as Obj & { kind: string; metadata?: { name?: string } }
    if (o.kind === kind && o.metadata?.name === name && !reg.type.endsWith('Patch')) return { reg, o }
  }
  throw new Error(`no ${kind} ${name} in ${r.stack}`)
}
function deployment(r: EngineRun, name: string): IDeployment {
  return find(r, 'Deployment', name).o as unknown as IDeployment
}
function deployments(r: EngineRun): IDeployment[] {
  return kubeObjects(r)
    .filter((reg) => reg.type === 'kubernetes:apps/v1:Deployment')
    .map((reg) => plain(reg.inputs) as unknown as IDeployment)
}
function deployConfig(stack: Stack) {
  return deployOf(stackConfig(stack))
}

describe.each(STACKS)('stack %s under the engine', (stack) => {
  it('runs through the SDK run entry in preview and update mode, with no error, no invoke and only modelled types', () => {
    for (const mode of ['preview', 'update'] as const) {
      const r = run(stack, mode)
      expect(r.exitCode, `${mode}: ${r.stderr}`).toBe(0)
      expect(errors(r), mode).toEqual([])
      expect(r.invokes, mode).toEqual([])
      expect(r.unknownTypes, mode).toEqual([])
      expect(r.features, mode).toContain('secrets')
    }
    // The same resources are declared whether values are known or not.
    const urns = (r: EngineRun) => r.registrations.map((x) => x.urn).sort()
    expect(urns(run(stack, 'preview'))).toEqual(urns(run(stack, 'update')))
    expect(kubeObjects(run(stack, 'update')).length).toBeGreaterThan(30)
  })

  it('previews with unknowns where the engine does not know a value yet, and knows them after the update', () => {
    const annotation = (r: EngineRun) =>
      (find(r, 'Deployment', 'svc-system-controller').reg.inputs as { spec: { template: { metadata: { annotations: Obj } } } }).spec
        .template.metadata.annotations
    // A new random key and PSK: the keyed checksums cannot be computed in a preview.
    expect(hasUnknown(annotation(run(stack, 'preview')))).toBe(true)
    const known = plain(annotation(run(stack, 'update'))) as Record<string, string>
    expect(known['checksum/psk']).toMatch(/^[0-9a-f]{64}$/)
    expect(run(stack, 'preview').outputs).toMatchObject({ psk: { secretName: 'svc-psk' } })
  })

  it('declares only objects that match the official Kubernetes schema (a patch, once applied to its object)', () => {
    const r = run(stack, 'update')
    for (const reg of kubeObjects(r)) {
      const o = plain(reg.inputs) as Obj
      if (!reg.type.endsWith('Patch')) {
        expect(() => validateObject(o), reg.urn).not.toThrow()
        continue
      }
      const patched = o as unknown as IDeployment
      const target = structuredClone(find(r, patched.kind, patched.metadata?.name ?? '?').o) as unknown as IDeployment
      const applied = { ...target, spec: { ...target.spec, ...(o.spec as object) } }
      expect(() => validateObject(applied as unknown as Obj), reg.urn).not.toThrow()
    }
  })

  it("sends every Kubernetes object through one provider with mutable Secrets and ConfigMaps, in the stack's context; the Namespace alone through one that adopts it", () => {
    const r = run(stack, 'update')
    const providers = r.registrations.filter((x) => x.type === 'pulumi:providers:kubernetes')
    expect(providers.map((p) => p.name).sort()).toEqual(['kubernetes', 'kubernetes-namespace'])
    const provider = providers.find((p) => p.name === 'kubernetes') as Registration
    const namespaceProvider = providers.find((p) => p.name === 'kubernetes-namespace') as Registration
    expect(plain(provider.inputs)).toMatchObject({
      enableSecretMutable: 'true',
      enableConfigMapMutable: 'true',
      upsertExistingObjects: 'false',
      context: stackConfig(stack)['kubernetes:context'],
    })
    // The runbook creates the namespace before the first `pulumi up`; pulumi-kubernetes' create
    // (a POST) would answer AlreadyExists, so the Namespace's provider upserts. Nothing else differs.
    expect(plain(namespaceProvider.inputs)).toEqual({ ...(plain(provider.inputs) as object), upsertExistingObjects: 'true' })
    for (const reg of kubeObjects(r))
      expect(reg.provider.startsWith(`${reg.type.endsWith(':Namespace') ? namespaceProvider.urn : provider.urn}::`), reg.urn).toBe(true)
    // Every object belongs to its component, except what the whole stack shares.
    const stackUrn = r.registrations.find((x) => x.type === 'pulumi:pulumi:Stack')?.urn
    for (const reg of kubeObjects(r)) {
      const parent = r.registrations.find((x) => x.urn === reg.parent)
      if (reg.parent === stackUrn) expect(['namespace', 'default-deny'], reg.urn).toContain(reg.name)
      else expect(parent?.type, reg.urn).toMatch(/^svcops:infra:/)
    }
  })

  it('keeps the namespace and the recordings claim through pulumi destroy', () => {
    const r = run(stack, 'update')
    const ns = find(r, 'Namespace', deployConfig(stack).namespace).reg
    expect(ns.retainOnDelete).toBe(true)
    const claim = find(r, 'PersistentVolumeClaim', 'svc-recording-recordings').reg
    expect({ protect: claim.protect, retainOnDelete: claim.retainOnDelete }).toEqual({ protect: true, retainOnDelete: true })
    // Nothing else is protected: `pulumi destroy --exclude-protected` removes the rest.
    expect(r.registrations.filter((x) => x.protect).map((x) => x.urn)).toEqual([claim.urn])
  })

  it('runs one system controller with Recreate, and rolls every media component only after it', () => {
    const r = run(stack, 'update')
    const sc = deployment(r, 'svc-system-controller')
    expect(sc.spec?.strategy?.type).toBe('Recreate')
    expect(sc.spec?.replicas).toBe(1)
    const controller = find(r, 'Deployment', 'svc-system-controller').reg.urn
    for (const name of MEDIA) expect(find(r, 'Deployment', name).reg.dependencies, name).toContain(controller)
  })

  it(
    "runs the recording service with Recreate, its Deployment the one writer of its replicas: the configured count, or the stack's heldReplicas",
    async () => {
      const r = run(stack, 'update')
      const configured = deployConfig(stack).recording.replicas ?? 1
      const d = deployment(r, 'svc-recording')
      expect(d.spec?.strategy?.type).toBe('Recreate')
      expect(d.spec?.replicas).toBe(configured)
      // No second Pulumi resource writes spec.replicas (server-side apply would find two owners).
      expect(kubeObjects(r).filter((x) => x.type.endsWith('Patch'))).toEqual([])
      // The upgrade's stop: the stack holds 0 replicas; only the Deployment's replicas change.
      const held = await upAfter(stack, r, (c) => {
        deployOf(c).recording.heldReplicas = 0
      })
      expect(errors(held)).toEqual([])
      expect(deployment(held, 'svc-recording').spec?.replicas).toBe(0)
      const recordingUrn = find(held, 'Deployment', 'svc-recording').reg.urn
      const updated = held.steps.filter((s) => s.op === 'update' && s.type.startsWith('kubernetes:apps/'))
      expect(updated.map((s) => [s.urn, Object.keys(s.detailedDiff ?? {})])).toEqual([[recordingUrn, ['spec.replicas']]])
    },
    RUN_TIMEOUT,
  )

  it('gives every workload its own token-less ServiceAccount, a PodDisruptionBudget, a NetworkPolicy and spread replicas', () => {
    const r = run(stack, 'update')
    const deny = find(r, 'NetworkPolicy', 'default-deny')
    expect(deny.o.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] })
    // The namespace closes only once every workload's own policy is in place.
    const policies = kubeObjects(r).filter((x) => x.type === 'kubernetes:networking.k8s.io/v1:NetworkPolicy' && x !== deny.reg)
    for (const p of policies) expect(deny.reg.dependencies, p.urn).toContain(p.urn)
    for (const d of deployments(r)) {
      const name = d.metadata?.name ?? ''
      const pod = d.spec?.template.spec
      const account = find(r, 'ServiceAccount', pod?.serviceAccountName ?? '?').o as unknown as IServiceAccount
      expect(account.automountServiceAccountToken, name).toBe(false)
      expect(pod?.automountServiceAccountToken, name).toBe(false)
      expect(find(r, 'PodDisruptionBudget', name).o, name).toMatchObject({ spec: { selector: d.spec?.selector } })
      const policy = find(r, 'NetworkPolicy', name).o as unknown as INetworkPolicy
      expect(policy.spec?.podSelector, name).toEqual(d.spec?.selector)
      const replicas = name === 'svc-recording' ? (deployConfig(stack).recording.replicas ?? 1) : (d.spec?.replicas ?? 1)
      const spread = pod?.topologySpreadConstraints ?? []
      if (replicas > 1)
        expect(
          spread.find((c) => c.topologyKey === 'kubernetes.io/hostname'),
          name,
        ).toMatchObject({
          maxSkew: 1,
          whenUnsatisfiable: 'DoNotSchedule',
          labelSelector: d.spec?.selector,
        })
      else expect(spread, name).toEqual([])
    }
  })

  it('probes the rendering engine on its TCP endpoint and the controller on its API prefix; control panels reach engines through a headless Service', () => {
    const r = run(stack, 'update')
    const pipeline = deployment(r, 'svc-pipeline').spec?.template.spec?.containers[0]
    expect(pipeline?.readinessProbe?.tcpSocket?.port).toBe('control')
    expect(pipeline?.livenessProbe?.tcpSocket?.port).toBe('control')
    const prefix = { dev: '/api/v2/', staging: '/api/v3/', prod: '/api/v2/' }[stack]
    expect(deployment(r, 'svc-system-controller').spec?.template.spec?.containers[0]?.readinessProbe?.httpGet?.path).toMatch(
      new RegExp(`^${prefix}`),
    )
    const engines = find(r, 'Service', 'svc-pipeline-engines').o as unknown as IService
    expect(engines.spec?.clusterIP).toBe('None')
    const host = `svc-pipeline-engines.${deployConfig(stack).namespace}.svc.cluster.local:7000`
    const panelEnv = deployment(r, 'svc-control-panel').spec?.template.spec?.containers[0]?.env ?? []
    expect(panelEnv.find((e) => e.name === 'SVC_RENDERING_ENGINES')?.value).toBe(host)
    expect((r.outputs.endpoints as Obj).renderingEngines).toBe(host)
  })

  it('serves the manager over TLS exactly when the stack has tls: true', () => {
    const r = run(stack, 'update')
    const tls = deployConfig(stack).tls === true
    const config = find(r, 'ConfigMap', 'svc-manager-config').o as unknown as IConfigMap
    const manager = deployment(r, 'svc-manager').spec?.template.spec
    const volume = manager?.volumes?.find((v) => v.name === 'tls')
    expect((r.outputs.endpoints as Record<string, string>).manager?.startsWith(tls ? 'https://' : 'http://')).toBe(true)
    if (!tls) {
      expect(volume).toBeUndefined()
      return
    }
    expect(config.data?.SVC_TLS_CERT_FILE).toBe('/etc/ssl/svc/server/tls.crt')
    expect(volume?.secret?.secretName).toBe('svc-tls-manager')
    const secretObj = find(r, 'Secret', 'svc-tls-manager').o as { type: string }
    expect(secretObj.type).toBe('kubernetes.io/tls')
    expect((find(r, 'Service', 'svc-manager').o as unknown as IService).spec?.ports?.[0]?.name).toBe('https')
  })

  it('shows no secret, and no value derived from one, outside Secrets: not in objects, outputs, logs or output', () => {
    const r = run(stack, 'update')
    const open = publicValuesOf(stackConfig(stack))
    const secrets = secretsOf(r, [DB_PASSWORD], open)
    const psk = (plain(find(r, 'Secret', 'svc-psk').reg.inputs) as { stringData: { psk: string } }).stringData.psk
    expect(secrets).toContain(psk)
    expect(secrets.length).toBeGreaterThanOrEqual(6)
    expect(findSecretDerivations(r, secrets)).toEqual([])
    expect(findSecretDerivations(run(stack, 'preview'), secretsOf(run(stack, 'preview'), [DB_PASSWORD], open))).toEqual([])
  })
})

describe('a prod preview on an operator machine without the credential file', () => {
  it(
    'fails before declaring anything, with the one sentence the user sees',
    async () => {
      const file = '/etc/svcops/credentials/recording-db-password'
      expect(existsSync(file), `${file} exists on this machine; the test assumes it does not`).toBe(false)
      const r = await runEngine({ stack: 'prod', preview: true })
      expect(r.exitCode).not.toBe(0)
      expect(errors(r)).toEqual([
        `stacks/Pulumi.prod.yaml: recording.database.password: the file '${file}' does not exist or cannot be read.`,
      ])
      expect(kubeObjects(r)).toEqual([])
      expect(r.stderr).not.toMatch(/\n\s+at /)
    },
    RUN_TIMEOUT,
  )
})

describe('two runs of prod: what pulumi up replaces', () => {
  const changed = (cs: Change[]) => Object.fromEntries(cs.filter((c) => c.action !== 'same').map((c) => [c.object, c.action]))
  /** Objects a pod refers to by name that the change would delete before their successor exists. */
  function gaps(before: EngineRun, after: EngineRun): Change[] {
    const refs = new Set([...referencedByPods(before), ...referencedByPods(after)])
    return planChanges(before, after).filter(
      (c) => refs.has(c.object) && (c.action === 'delete' || (c.action === 'replace' && c.deleteFirst)),
    )
  }

  /** prod's update after a PSK rotation: one run, which the cases below only read. */
  let rotation: Promise<EngineRun> | undefined
  const rotatedProd = () => (rotation ??= upAfter('prod', run('prod', 'update'), (c) => (deployOf(c).pskRotation = '2027-01-01')))

  it(
    'rotates the PSK in place: the Secret is updated, the controller and the media components restart, nothing else',
    async () => {
      const base = run('prod', 'update')
      const rotated = await rotatedProd()
      expect(rotated.exitCode, rotated.stderr).toBe(0)
      expect(gaps(base, rotated)).toEqual([])
      expect(changed(planChanges(base, rotated))).toEqual({
        'Secret/svc-psk': 'update',
        'Secret/svc-system-controller-settings': 'update',
        'Deployment/svc-system-controller': 'update',
        'Deployment/svc-ingest': 'update',
        'Deployment/svc-pipeline': 'update',
        'Deployment/svc-control-panel': 'update',
        // The stack file mounted for the scheduled upgrade carries svcops:deploy.
        'ConfigMap/svc-svcops-stack': 'update',
      })
    },
    RUN_TIMEOUT,
  )

  it(
    'refuses, in its preview, a recording release older than the one running, unless svcops:allowDowngrade is set',
    async () => {
      const base = run('prod', 'update')
      const older = await upAfter('prod', base, (c) => ((c['svcops:recording'] as { version: string }).version = '1.4.0'))
      expect(older.exitCode).not.toBe(0)
      const said = errors(older).join('\n')
      expect(said).toContain('recording service 1.4.0 is older than 1.5.0, which runs in ')
      expect(said).toContain('svcops rollback recording --env prod')
      const allowed = await upAfter('prod', base, (c) => {
        ;(c['svcops:recording'] as { version: string }).version = '1.4.0'
        c['svcops:allowDowngrade'] = true
      })
      expect(allowed.exitCode, allowed.stderr).toBe(0)
    },
    RUN_TIMEOUT,
  )

  it(
    'changes the controller settings and the manager config in place, restarting only their readers',
    async () => {
      const base = run('prod', 'update')
      const next = await upAfter('prod', base, (c) => {
        deployOf(c).live.systemController.settings = { log_level: 'info' }
        deployOf(c).manager.tokenLifetimeSeconds = 900
      })
      expect(gaps(base, next)).toEqual([])
      expect(changed(planChanges(base, next))).toEqual({
        'Secret/svc-system-controller-settings': 'update',
        'Deployment/svc-system-controller': 'update',
        'ConfigMap/svc-manager-config': 'update',
        'Deployment/svc-manager': 'update',
        'ConfigMap/svc-svcops-stack': 'update',
      })
    },
    RUN_TIMEOUT,
  )

  it(
    'resizes the recordings claim in place, and refuses to replace it (a storage class change) instead of colliding',
    async () => {
      const base = run('prod', 'update')
      const resized = await upAfter('prod', base, (c) => (deployOf(c).recording.storage.size = '3Ti'))
      expect(gaps(base, resized)).toEqual([])
      expect(changed(planChanges(base, resized))).toEqual({
        'PersistentVolumeClaim/svc-recording-recordings': 'update',
        'ConfigMap/svc-svcops-stack': 'update',
      })
      const moved = await upAfter('prod', base, (c) => (deployOf(c).recording.storage.storageClass = 'fast-nfs'))
      const claim = planChanges(base, moved).find((c) => c.object === 'PersistentVolumeClaim/svc-recording-recordings')
      expect(claim).toMatchObject({ action: 'replace', refused: true, because: ['spec.storageClassName'] })
    },
    RUN_TIMEOUT,
  )

  it(
    'finds the gap it guards against: with the provider defaults the PSK Secret would be deleted before it is re-created',
    async () => {
      const base = run('prod', 'update')
      const defaults = structuredClone(await rotatedProd())
      for (const reg of defaults.registrations.filter((x) => x.type === 'pulumi:providers:kubernetes'))
        reg.inputs = { ...reg.inputs, enableSecretMutable: 'false', enableConfigMapMutable: 'false' }
      expect(gaps(base, defaults).map((c) => c.object)).toEqual(
        expect.arrayContaining(['Secret/svc-psk', 'Secret/svc-system-controller-settings']),
      )
    },
    RUN_TIMEOUT,
  )
})

describe('the secret search', () => {
  it('finds a plain checksum of a secret next to the config it was hashed with (what checksum/database used to be)', () => {
    const r = structuredClone(run('dev', 'update'))
    const db = find(r, 'Secret', 'svc-recording-database').o as { stringData: Record<string, string> }
    const { SVC_DB_PASSWORD: password, ...connection } = db.stringData
    const plainHash = createHash('sha256')
      .update(`${JSON.stringify(connection)}\0${password}\0`)
      .digest('hex')
    const reg = find(r, 'Deployment', 'svc-recording').reg
    reg.inputs = { ...reg.inputs, leaked: plainHash, other: secret('not shown') }
    const findings = findSecretDerivations(r, secretsOf(r, [DB_PASSWORD], publicValuesOf(stackConfig('dev'))))
    expect(findings.map((f) => f.how)).toContain('sha256-hex(value+NUL+secret #1+NUL)')
    expect(JSON.stringify(findings)).not.toContain(DB_PASSWORD)
  })
})

describe('Pulumi.yaml', () => {
  it('is what the engine tests ran: main, runtime options and nodeargs as the language host reads them', () => {
    const project = projectFile()
    expect(project).toMatchObject({ name: 'svcops', main: 'src/infra/index.ts', typescript: false })
    // Every source is erasable TypeScript: Node runs the program itself, no loader in between.
    expect(project.nodeargs).toEqual([])
    expect(UNKNOWN).toHaveLength(36)
  })
})
