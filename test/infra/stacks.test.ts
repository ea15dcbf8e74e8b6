/**
 * Every stack in stacks/ built under Pulumi's mock runtime, checked as a reviewer would check the
 * objects: official schema, secrets only where secrets belong, one PSK for everybody, the settings
 * where the product looks for them, and what each release of the live production system expects.
 */
import { parse as parseYaml } from 'yaml'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { ICronJob } from 'kubernetes-models/batch/v1'
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1'
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import type { PreviewResult } from '../../src/infra/preview.ts'
import { validateObject } from '../../src/infra/validate.ts'
import {
  buildStack,
  containerOf,
  dataOf,
  deployStacks,
  deploymentsUsingSecret,
  envOf,
  kindOf,
  nameOf,
  objectNamed,
  objectsOfKind,
  outputsOf,
  podOf,
  pskOf,
  STACKS_DIR,
  stackConfig,
} from './helpers.ts'

const stacks = deployStacks()
const built = new Map<string, PreviewResult>()

beforeAll(async () => {
  for (const stack of stacks) built.set(stack, await buildStack(stack))
})

function result(stack: string): PreviewResult {
  const r = built.get(stack)
  if (!r) throw new Error(`stack ${stack} was not built`)
  return r
}

// What the seed says, written out here rather than derived from the helpers under test.
const EXPECTED: Record<string, { tcpVariable: string; apiPrefix: string; settingsFlag: boolean }> = {
  dev: { tcpVariable: 'SVC_TCP_ENDPOINTS', apiPrefix: '/api/v2', settingsFlag: false },
  prod: { tcpVariable: 'SVC_TCP_ENDPOINT', apiPrefix: '/api/v2', settingsFlag: true },
  staging: { tcpVariable: 'SVC_TCP_ENDPOINT', apiPrefix: '/api/v3', settingsFlag: true },
  'example-kubernetes': { tcpVariable: 'SVC_TCP_ENDPOINT', apiPrefix: '/api/v2', settingsFlag: true },
}

const MEDIA = ['svc-ingest', 'svc-pipeline', 'svc-control-panel']

describe('the stack files', () => {
  it('include a 5.x and a 6.x-or-later live production system, and production has TLS on', () => {
    expect(stacks).toEqual(expect.arrayContaining(['dev', 'staging', 'prod']))
    const versions = stacks.map((s) => (stackConfig(s)['svcops:deploy'] as { live: { version: string } }).live.version)
    expect(versions.some((v) => v.startsWith('5.'))).toBe(true)
    expect(versions.some((v) => Number(v.split('.')[0]) >= 6)).toBe(true)
    expect((stackConfig('prod')['svcops:deploy'] as { tls: boolean }).tls).toBe(true)
  })
})

describe.each(stacks)('stack %s', (stack) => {
  it('declares only objects that pass the official Kubernetes schema once secrets are unwrapped', () => {
    const r = result(stack)
    expect(r.objects.length).toBeGreaterThan(15)
    for (const o of r.objects) expect(() => validateObject(o.unwrapped), `${kindOf(o)} ${nameOf(o)}`).not.toThrow()
  })

  it('keeps the PSK, the database password and private keys out of every non-secret value and output', () => {
    const r = result(stack)
    const p = 'SVC'
    const secrets = {
      psk: pskOf(r),
      databasePassword: dataOf(objectNamed(r, 'Secret', 'svc-recording-database'))[`${p}_DB_PASSWORD`],
      signingKey: dataOf(objectNamed(r, 'Secret', 'svc-manager-signing-key'))['signing-key.pem'],
      ...(outputsOf(r).tls ? { tlsKey: dataOf(objectNamed(r, 'Secret', 'svc-tls-server'))['tls.key'] } : {}),
    }
    for (const [what, value] of Object.entries(secrets)) {
      expect(value, what).toBeTruthy()
      // The Secret that holds it marks the field secret, so Pulumi state encrypts it.
      const holder = r.objects.find(
        (o) => JSON.stringify(o.unwrapped).includes(JSON.stringify(value).slice(1, -1)) && kindOf(o) === 'Secret',
      )
      expect(holder?.secretPaths, what).toContain('stringData')
    }
    const shown = [...r.objects.map((o) => JSON.stringify(o.shown)), JSON.stringify(r.outputs)]
    for (const text of shown) {
      for (const [what, value] of Object.entries(secrets)) {
        const v = value as string
        for (const form of [v, JSON.stringify(v).slice(1, -1), Buffer.from(v).toString('base64'), v.split('\n')[1] ?? v]) {
          expect(text.includes(form), `${what} found in a non-secret value`).toBe(false)
        }
      }
    }
  })

  it('gives the system controller and every media component the one PSK Secret under the same key', () => {
    const r = result(stack)
    const { secretName, secretKey } = outputsOf(r).psk
    const users = deploymentsUsingSecret(r, secretName).map(nameOf).sort()
    expect(users).toEqual(['svc-system-controller', ...MEDIA].sort())
    for (const d of deploymentsUsingSecret(r, secretName)) {
      expect(envOf(d).SVC_SYSTEM_CONTROLLER_PSK?.valueFrom?.secretKeyRef).toEqual({ name: secretName, key: secretKey })
    }
    // The controller's settings file carries that same PSK.
    const settings = JSON.parse(dataOf(objectNamed(r, 'Secret', 'svc-system-controller-settings'))['svc_sc_settings.json'] ?? '{}') as {
      psk?: string
    }
    expect(settings.psk).toBe(pskOf(r))
  })

  it('mounts the settings file read-only as a directory in /etc/opt/<product_dir>, never by subPath', () => {
    const r = result(stack)
    const sc = objectNamed(r, 'Deployment', 'svc-system-controller')
    const mount = containerOf(sc).volumeMounts?.find((m) => m.mountPath === '/etc/opt/svc')
    expect(mount?.readOnly).toBe(true)
    const volume = podOf(sc).spec?.volumes?.find((v) => v.name === mount?.name)
    expect(volume?.secret?.secretName).toBe('svc-system-controller-settings')
    for (const d of objectsOfKind(r, 'Deployment'))
      for (const m of containerOf(d).volumeMounts ?? []) expect(m.subPath, `${nameOf(d)} ${m.mountPath}`).toBeUndefined()
    const args = containerOf(sc).args ?? []
    if (EXPECTED[stack]?.settingsFlag) expect(args.join(' ')).toBe('--settings-path /etc/opt/svc')
    else expect(args).not.toContain('--settings-path')
  })

  it("names the rendering engine's TCP endpoint variable and probes the API prefix of the release", () => {
    const r = result(stack)
    const expected = EXPECTED[stack]
    if (!expected) throw new Error(`add the seed's expectations for stack ${stack}`)
    const env = envOf(objectNamed(r, 'Deployment', 'svc-pipeline'))
    expect(Object.keys(env)).toContain(expected.tcpVariable)
    expect(Object.keys(env).filter((k) => k.startsWith('SVC_TCP_ENDPOINT'))).toEqual([expected.tcpVariable])
    const sc = containerOf(objectNamed(r, 'Deployment', 'svc-system-controller'))
    expect(sc.readinessProbe?.httpGet?.path?.startsWith(`${expected.apiPrefix}/`)).toBe(true)
    expect(sc.livenessProbe?.httpGet?.path?.startsWith(`${expected.apiPrefix}/`)).toBe(true)
  })

  it('labels, locks down and sizes every workload from config', () => {
    const r = result(stack)
    const deploy = stackConfig(stack)['svcops:deploy'] as { namespace: string; manager: { resources: { limits: { memory: string } } } }
    for (const o of r.objects) {
      if (kindOf(o) !== 'Namespace') expect((o.unwrapped.metadata as { namespace?: string }).namespace, nameOf(o)).toBe(deploy.namespace)
      const labels = (o.unwrapped.metadata as { labels?: Record<string, string> }).labels ?? {}
      expect(labels['app.kubernetes.io/part-of'], nameOf(o)).toBe('svc-platform')
      expect(labels['app.kubernetes.io/managed-by'], nameOf(o)).toBe('pulumi')
    }
    for (const d of objectsOfKind(r, 'Deployment')) {
      const labels = podOf(d).metadata?.labels ?? {}
      for (const key of ['name', 'instance', 'component', 'version', 'part-of'])
        expect(labels[`app.kubernetes.io/${key}`], `${nameOf(d)} ${key}`).toBeTruthy()
      expect(podOf(d).spec?.securityContext?.runAsNonRoot).toBe(true)
      const c = containerOf(d)
      expect(c.securityContext?.readOnlyRootFilesystem).toBe(true)
      expect(c.securityContext?.allowPrivilegeEscalation).toBe(false)
      expect(c.resources?.limits?.memory, nameOf(d)).toBeTruthy()
      expect(c.image).toMatch(/:\d+\.\d+\.\d+$/)
    }
    expect(containerOf(objectNamed(r, 'Deployment', 'svc-manager')).resources?.limits?.memory).toBe(deploy.manager.resources.limits.memory)
  })

  it('protects every workload with a PodDisruptionBudget', () => {
    const r = result(stack)
    const budgets = objectsOfKind(r, 'PodDisruptionBudget').map((o) => o.unwrapped as unknown as IPodDisruptionBudget)
    for (const name of objectsOfKind(r, 'Deployment').map(nameOf)) {
      const pdb = budgets.find((b) => b.metadata?.name === name)
      const selector = (objectNamed(r, 'Deployment', name).unwrapped as { spec: { selector: unknown } }).spec.selector
      expect(pdb?.spec?.selector).toEqual(selector)
    }
  })

  it("denies all traffic by default, and lets only the platform's pods (and configured namespaces) reach the system controller", () => {
    const r = result(stack)
    const deny = objectNamed(r, 'NetworkPolicy', 'default-deny').unwrapped as unknown as INetworkPolicy
    expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] })
    // Every workload has its own policy selecting its pods.
    for (const d of objectsOfKind(r, 'Deployment')) {
      const policy = objectNamed(r, 'NetworkPolicy', nameOf(d)).unwrapped as unknown as INetworkPolicy
      const labels = podOf(d).metadata?.labels ?? {}
      for (const [k, v] of Object.entries(policy.spec?.podSelector.matchLabels ?? {})) expect(labels[k], nameOf(d)).toBe(v)
    }
    const policy = objectNamed(r, 'NetworkPolicy', 'svc-system-controller').unwrapped as unknown as INetworkPolicy
    const scLabels = podOf(objectNamed(r, 'Deployment', 'svc-system-controller')).metadata?.labels ?? {}
    for (const [k, v] of Object.entries(policy.spec?.podSelector.matchLabels ?? {})) expect(scLabels[k]).toBe(v)
    expect(policy.spec?.policyTypes).toEqual(['Ingress', 'Egress'])
    const from = policy.spec?.ingress?.[0]?.from ?? []
    expect(from[0]).toEqual({ podSelector: { matchLabels: { 'app.kubernetes.io/part-of': 'svc-platform' } } })
    const allowed =
      (stackConfig(stack)['svcops:deploy'] as { live: { systemController: { allowNamespaces?: string[] } } }).live.systemController
        .allowNamespaces ?? []
    expect(from.slice(1).map((f) => f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'])).toEqual(allowed)
    for (const d of [...MEDIA, 'svc-manager', 'svc-recording'])
      expect(podOf(objectNamed(r, 'Deployment', d)).metadata?.labels?.['app.kubernetes.io/part-of']).toBe('svc-platform')
  })

  it("declares the media components' metrics port and opens it to scrapers and the pod proxy, when the stack sets deploy.live.metrics", () => {
    const r = result(stack)
    const metrics = (stackConfig(stack)['svcops:deploy'] as { live: { metrics?: { port: number } } }).live.metrics
    for (const name of MEDIA) {
      const d = objectNamed(r, 'Deployment', name)
      const port = containerOf(d).ports?.find((p) => p.name === 'metrics')
      const policy = objectNamed(r, 'NetworkPolicy', name).unwrapped as unknown as INetworkPolicy
      const opened = (policy.spec?.ingress ?? []).some(
        (rule) => !rule.from && (!rule.ports || rule.ports.some((p) => p.port === metrics?.port && p.protocol === 'TCP')),
      )
      if (!metrics) {
        expect(port, name).toBeUndefined()
        continue
      }
      expect(port, name).toEqual({ name: 'metrics', containerPort: metrics.port, protocol: 'TCP' })
      expect(opened, name).toBe(true)
    }
    // The controller serves no product metric: its port stays its API's only.
    expect(containerOf(objectNamed(r, 'Deployment', 'svc-system-controller')).ports?.map((p) => p.name)).toEqual(['api'])
  })

  it('gives media components the CA file when TLS is on, and serves the controller over HTTPS', () => {
    const r = result(stack)
    const tls = outputsOf(r).tls
    const sc = containerOf(objectNamed(r, 'Deployment', 'svc-system-controller'))
    expect(sc.readinessProbe?.httpGet?.scheme).toBe(tls ? 'HTTPS' : 'HTTP')
    for (const name of MEDIA) {
      const d = objectNamed(r, 'Deployment', name)
      const caFile = envOf(d).SVC_SYSTEM_CONTROLLER_CA_FILE?.value
      if (!tls) {
        expect(caFile).toBeUndefined()
        continue
      }
      expect(caFile).toBe('/etc/ssl/svc/ca/ca.crt')
      const mount = containerOf(d).volumeMounts?.find((m) => m.mountPath === '/etc/ssl/svc/ca')
      expect(podOf(d).spec?.volumes?.find((v) => v.name === mount?.name)?.configMap?.name).toBe('svc-tls-ca')
    }
  })

  it('schedules the recording upgrade in the maintenance window when the stack asks for it', () => {
    const r = result(stack)
    const schedule = (stackConfig(stack)['svcops:deploy'] as { upgradeSchedule?: { schedule: string; to: string } }).upgradeSchedule
    const jobs = objectsOfKind(r, 'CronJob')
      .map((o) => o.unwrapped as unknown as ICronJob)
      .filter((j) => j.metadata?.name === 'svc-svcops-upgrade')
    if (!schedule) {
      expect(jobs).toEqual([])
      return
    }
    expect(jobs).toHaveLength(1)
    const job = jobs[0]
    expect(job?.spec?.schedule).toBe(schedule.schedule)
    expect(job?.spec?.concurrencyPolicy).toBe('Forbid')
    const container = job?.spec?.jobTemplate.spec?.template.spec?.containers[0]
    expect(container?.command?.join(' ')).toBe(
      `/usr/local/bin/node --max-semi-space-size=4 /opt/svcops/bin/svcops upgrade recording --env ${stack} --to ${schedule.to} --yes --json`,
    )
    // The stack file mounted for svcops is the one Pulumi reads, as it is on disk, and svcops accepts it.
    const file = dataOf(objectNamed(r, 'ConfigMap', 'svc-svcops-stack'))[`Pulumi.${stack}.yaml`] ?? ''
    expect(file).toBe(readFileSync(join(STACKS_DIR, `Pulumi.${stack}.yaml`), 'utf8'))
    const path = join(mkdtempSync(join(tmpdir(), 'svcops-cron-')), `Pulumi.${stack}.yaml`)
    writeFileSync(path, file)
    expect(loadEnvironmentFile(path, stack).recording?.version).toBe(
      (parseYaml(file) as { config: Record<string, { version?: string }> }).config['svcops:recording']?.version,
    )
  })

  it('outputs endpoints, the PSK Secret name and versions', () => {
    const r = result(stack)
    const out = outputsOf(r)
    expect(out.psk).toMatchObject({ secretName: 'svc-psk', secretKey: 'psk', passesEntropyCheck: true })
    expect(out.versions.live).toBe((stackConfig(stack)['svcops:deploy'] as { live: { version: string } }).live.version)
    expect(out.endpoints).toMatchObject({ systemController: expect.stringContaining(EXPECTED[stack]?.apiPrefix ?? '?') as unknown })
  })
})
