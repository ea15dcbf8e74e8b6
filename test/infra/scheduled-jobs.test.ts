/**
 * svcops' scheduled jobs in the cluster (the recording service's and the live production system's
 * upgrades in their maintenance windows, the nightly backup), built by the Pulumi program under the
 * engine harness and checked against the official schemas: what each job mounts and may do, the
 * refusal of a schedule whose job would lack a mount or a key, the init container's copy of the
 * Secrets run for real on the layout the kubelet writes, and the kubeconfig it writes loaded by
 * @kubernetes/client-node against a loopback HTTPS server that sees the ServiceAccount's token.
 * What this cannot prove: that a cluster schedules the pods, or that the image runs (no API server
 * and no container engine here; `npm run test:cluster` does that where they exist).
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ICronJob } from 'kubernetes-models/batch/v1'
import type { IRole, IRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1'
import type { IServiceAccount } from 'kubernetes-models/v1'
import { beforeAll, describe, expect, it } from 'vitest'
import { readSecret } from '../../src/config/secrets.ts'
import { BadInputError } from '../../src/core/errors.ts'
import type { PreviewResult } from '../../src/infra/preview.ts'
import { copySecretsScript, KUBECONFIG, liveUpgradeCommand, SECRET_SOURCES } from '../../src/infra/scheduledJobs.ts'
import { jobRights, roleRules, stackObjectsOf, type JobSystem } from '../../src/infra/jobRights.ts'
import { KubernetesDriver } from '../../src/drivers/kubernetes.ts'
import { liveRights } from '../../src/live/kubernetes/live-preview.ts'
import { LIVE_COMPONENTS } from '../../src/live/layout.ts'
import { allowedBy, type PolicyRule } from '../support/kube-rbac.ts'
import { startKubeApiStandin } from '../support/kube-api-standin.ts'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { validateObject } from '../../src/infra/validate.ts'
import { neededRights, showRight } from '../../src/drivers/kubernetes.ts'
import { errors, kubeObjects, runEngine, type EngineRun } from './engine/engine.ts'
import { plain } from './engine/wire.ts'
import { buildStack, deployOf, kindOf, objectNamed, objectsOfKind, stackConfig, type LooseConfig } from './helpers.ts'

let prod: PreviewResult
beforeAll(async () => {
  prod = await buildStack('prod')
})

function cronJob(r: PreviewResult, name: string): ICronJob {
  return objectNamed(r, 'CronJob', name).unwrapped as unknown as ICronJob
}

describe('the scheduled jobs of the prod stack', () => {
  it('are the two upgrades in their maintenance windows and a nightly backup, each a valid CronJob that never retries blindly', () => {
    const deploy = deployOf(stackConfig('prod'))
    const upgrade = cronJob(prod, 'svc-svcops-upgrade')
    const liveUpgrade = cronJob(prod, 'svc-svcops-live-upgrade')
    const backup = cronJob(prod, 'svc-svcops-backup')
    for (const job of [upgrade, liveUpgrade, backup]) {
      expect(() => validateObject(job as unknown as Record<string, unknown>)).not.toThrow()
      expect(job.spec?.concurrencyPolicy).toBe('Forbid')
      expect(job.spec?.jobTemplate.spec?.backoffLimit).toBe(0)
      // The window: a run that could not start within the hour after its start is skipped, never run late.
      expect(job.spec?.startingDeadlineSeconds).toBe(3600)
    }
    expect(upgrade.spec?.schedule).toBe(deploy.upgradeSchedule?.schedule)
    expect(liveUpgrade.spec?.schedule).toBe(deploy.liveUpgradeSchedule?.schedule)
    expect(liveUpgrade.spec?.timeZone).toBe(deploy.liveUpgradeSchedule?.timeZone)
    expect(liveUpgrade.spec?.jobTemplate.spec?.template.spec?.containers[0]?.command).toEqual([
      'svcops',
      'upgrade',
      'live',
      '--env',
      'prod',
      '--to',
      deploy.liveUpgradeSchedule?.to,
      '--yes',
      '--json',
    ])
    expect(liveUpgradeCommand('prod', '7.0.0', ['7.0.0/api-v3', '7.0.0/get-version'])).toEqual([
      'svcops',
      'upgrade',
      'live',
      '--env',
      'prod',
      '--to',
      '7.0.0',
      '--ack',
      '7.0.0/api-v3,7.0.0/get-version',
      '--yes',
      '--json',
    ])
    expect(backup.spec?.schedule).toBe(deploy.backupSchedule?.schedule)
    // svcops on the image's Node, named in full, with the executable's V8 flag.
    const svcops = ['/usr/local/bin/node', '--max-semi-space-size=4', '/opt/svcops/bin/svcops']
    expect(upgrade.spec?.jobTemplate.spec?.template.spec?.containers[0]?.command).toEqual([
      ...svcops,
      'upgrade',
      'recording',
      '--env',
      'prod',
      '--to',
      deploy.upgradeSchedule?.to,
      '--yes',
      '--json',
    ])
    // The prod stack names no retention: the documented default prunes, so the claim never fills.
    expect(backup.spec?.jobTemplate.spec?.template.spec?.containers[0]?.command).toEqual([
      ...svcops,
      'backup',
      'run',
      '--env',
      'prod',
      '--keep-last',
      '14',
      '--json',
    ])
  })

  it('mount the stack file, 0600 copies of the credentials and backup keys, the backup store and a runs volume', () => {
    const backupConfig = stackConfig('prod')['svcops:backup'] as { store: { path: string } }
    const jobs = deployOf(stackConfig('prod')).jobs
    for (const name of ['svc-svcops-upgrade', 'svc-svcops-live-upgrade', 'svc-svcops-backup']) {
      const pod = cronJob(prod, name).spec?.jobTemplate.spec?.template.spec
      const container = pod?.containers[0]
      const volume = (mount: string): unknown => {
        const m = container?.volumeMounts?.find((v) => v.mountPath === mount)
        return pod?.volumes?.find((v) => v.name === m?.name)
      }
      // The backup reads the stack file from the ConfigMap; the upgrade from its writable copy (below).
      if (name.endsWith('backup')) expect(volume('/etc/svcops/stacks')).toMatchObject({ configMap: { name: 'svc-svcops-stack' } })
      expect(volume('/var/lib/svcops')).toMatchObject({ persistentVolumeClaim: { claimName: jobs?.runsClaim } })
      expect(volume(backupConfig.store.path)).toMatchObject({ persistentVolumeClaim: { claimName: jobs?.backupStoreClaim } })
      // The keys svcops reads are the init container's copies, in memory, never the Secret's group-readable files.
      expect(volume('/etc/svcops/credentials')).toMatchObject({ emptyDir: { medium: 'Memory' } })
      expect(volume('/etc/svcops/backup-keys')).toMatchObject({ emptyDir: { medium: 'Memory' } })
      const init = pod?.initContainers?.[0]
      const source = (dir: string): unknown =>
        pod?.volumes?.find((v) => v.name === init?.volumeMounts?.find((m) => m.mountPath === `${SECRET_SOURCES}/${dir}`)?.name)
      expect(source('credentials')).toMatchObject({ secret: { secretName: jobs?.credentialsSecret } })
      expect(source('backup-keys')).toMatchObject({ secret: { secretName: jobs?.backupKeysSecret } })
      const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value]))
      expect(env).toMatchObject({
        SVCOPS_STACKS_DIR: name.endsWith('upgrade') ? '/opt/svcops/stacks' : '/etc/svcops/stacks',
        SVCOPS_RUNS_DIR: '/var/lib/svcops/runs',
        SVCOPS_STATE_DIR: '/var/lib/svcops/state',
        TMPDIR: '/var/lib/svcops/tmp',
      })
      expect(container?.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsNonRoot: true })
      // Only the upgrade talks to the Kubernetes API, through the stack's context on its own ServiceAccount.
      expect(env.KUBECONFIG).toBe(name.endsWith('upgrade') ? KUBECONFIG : undefined)
    }
  })

  const roleOf = (name: string) => objectNamed(prod, 'Role', name).unwrapped as unknown as IRole
  const scopeOf = (system: JobSystem) => ({ system, prefix: 'svc', objects: stackObjectsOf(prod.objects), metrics: true })
  const granted = (role: IRole) =>
    (role.rules ?? []).flatMap((r) =>
      (r.resources ?? []).flatMap((res) => r.verbs.map((v) => `${res}:${v}${r.resourceNames ? `:${r.resourceNames.join(',')}` : ''}`)),
    )

  it('run each upgrade under a ServiceAccount whose Role is derived from what the stack renders, and the backup with no API token', () => {
    for (const [name, system] of [
      ['svc-svcops-upgrade', 'recording'],
      ['svc-svcops-live-upgrade', 'live'],
    ] as const) {
      const role = roleOf(name)
      const binding = objectNamed(prod, 'RoleBinding', name).unwrapped as unknown as IRoleBinding
      expect(() => validateObject(role as unknown as Record<string, unknown>)).not.toThrow()
      expect(() => validateObject(binding as unknown as Record<string, unknown>)).not.toThrow()
      expect(role.rules).toEqual(roleRules(jobRights(scopeOf(system))))
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name, namespace: 'svc-prod' }])
      // A refresh reads every object the stack renders, each by its name, the namespace included.
      for (const o of prod.objects) {
        const { apiVersion, kind } = o.unwrapped as { apiVersion: string; kind: string }
        const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : ''
        const resource = { NetworkPolicy: 'networkpolicies' }[kind] ?? `${kind.toLowerCase()}s`
        expect(
          allowedBy(role.rules as PolicyRule[], {
            verb: 'get',
            group: group ?? '',
            resource,
            subresource: '',
            name: String((o.unwrapped.metadata as { name: string }).name),
          }),
          `${name}: get ${kind} ${String((o.unwrapped.metadata as { name: string }).name)}`,
        ).toBe(true)
      }
      // The live system's run store (ConfigMaps named per run, live-cluster-run-store.ts) is the one
      // exception, the live Role's only: RBAC cannot name what a run will create.
      const store = system === 'live' ? ['create', 'delete', 'get', 'list', 'patch'].map((v) => `configmaps:${v}`) : []
      expect(granted(role).filter((g) => store.includes(g))).toEqual(store)
      const rights = granted(role).filter((g) => !store.includes(g))
      // Never a wildcard, never create, delete or update, never an unnamed right on Secrets or ConfigMaps.
      expect(rights.filter((g) => g.includes('*'))).toEqual([])
      expect(rights.filter((g) => /:(create|delete|update|deletecollection)(:|$)/.test(g))).toEqual([])
      expect(rights.filter((g) => /^(secrets|configmaps):[a-z]+$/.test(g))).toEqual([])
      expect(
        allowedBy(role.rules as PolicyRule[], { verb: 'get', group: '', resource: 'namespaces', subresource: '', name: 'svc-prod' }),
      ).toBe(true)
    }
    // The writes of each: the recording service's Deployment (its stop and start are pulumi up too: no scale subresource), or the live components and their two Secrets; and the jobs' stack copy.
    const writes = (name: string) => granted(roleOf(name)).filter((g) => g.includes(':patch') && g !== 'configmaps:patch')
    expect(writes('svc-svcops-upgrade')).toEqual(['deployments:patch:svc-recording', 'configmaps:patch:svc-svcops-stack'])
    expect(writes('svc-svcops-live-upgrade').sort()).toEqual(
      [
        'deployments:patch:svc-control-panel,svc-ingest,svc-pipeline,svc-system-controller',
        'secrets:patch:svc-psk,svc-system-controller-settings',
        'configmaps:patch:svc-svcops-stack',
      ].sort(),
    )
    expect(objectsOfKind(prod, 'ClusterRole')).toEqual([])
    const backupAccount = objectNamed(prod, 'ServiceAccount', 'svc-svcops-backup').unwrapped as unknown as IServiceAccount
    expect(backupAccount.automountServiceAccountToken).toBe(false)
    expect(cronJob(prod, 'svc-svcops-backup').spec?.jobTemplate.spec?.template.spec?.automountServiceAccountToken).toBe(false)
    const bindings = objectsOfKind(prod, 'RoleBinding').map((o) => o.unwrapped as unknown as IRoleBinding)
    expect(bindings.flatMap((b) => b.subjects ?? []).map((s) => s.name)).not.toContain('svc-svcops-backup')
  })

  it('grant a get of an object the stack adds as soon as it renders it (the Role follows the stack, no list to keep)', async () => {
    const r = await buildStack('prod', (c) => delete deployOf(c).live.metrics)
    const role = objectNamed(r, 'Role', 'svc-svcops-live-upgrade').unwrapped as unknown as IRole
    expect(role.rules).toEqual(roleRules(jobRights({ system: 'live', prefix: 'svc', objects: stackObjectsOf(r.objects), metrics: false })))
    // Without metrics the live upgrade reads no pod proxy.
    expect(granted(role).filter((g) => g.startsWith('pods/proxy'))).toEqual([])
    expect(granted(roleOf('svc-svcops-live-upgrade')).filter((g) => g.startsWith('pods/proxy'))).toEqual(['pods/proxy:get'])
  })

  it("are listed in docs/deploy.md's RBAC table row by row, as the recording upgrade's Role of the prod stack grants them", () => {
    const doc = readFileSync(join(import.meta.dirname, '../../docs/deploy.md'), 'utf8')
    const table = doc.slice(doc.indexOf('| API group | resources | names | verbs |'))
    const lines = table.split('\n').slice(2)
    const rows = lines
      .slice(
        0,
        lines.findIndex((l) => !l.startsWith('|')),
      )
      .map((l) => l.split('|').map((c) => c.trim().replace(/`/g, '')))
      .map(([, group, resources, names, verbs]) => ({ group, resources, names, verbs }))
    expect(rows).toEqual(
      (roleOf('svc-svcops-upgrade').rules ?? []).map((r) => ({
        group: r.apiGroups?.[0] === '' ? 'core' : r.apiGroups?.[0],
        resources: (r.resources ?? []).join(', '),
        names: r.resourceNames?.join(', ') ?? 'any',
        verbs: r.verbs.join(', '),
      })),
    )
  })

  it("grant every right the Kubernetes run's preflight asks for today (the SelfSubjectAccessReviews of src/drivers/kubernetes.ts)", () => {
    const rules = roleOf('svc-svcops-upgrade').rules as PolicyRule[]
    const target = { namespace: 'svc-prod', deployment: 'svc-recording', container: 'recording-service', port: 8080 }
    const denied = neededRights(target, { portForward: false, stackMap: 'svc-svcops-stack' }).filter(
      (r) =>
        !allowedBy(rules, { verb: r.verb, group: r.group, resource: r.resource, subresource: r.subresource ?? '', name: r.name ?? '' }),
    )
    expect(denied.map(showRight)).toEqual([])
    // The derived list itself is what the preflight can ask instead (jobRights): the Role grants all of it.
    for (const system of ['recording', 'live'] as const) {
      const role = roleOf(system === 'recording' ? 'svc-svcops-upgrade' : 'svc-svcops-live-upgrade').rules as PolicyRule[]
      const missing = jobRights(scopeOf(system)).filter(
        (r) =>
          !allowedBy(role, { verb: r.verb, group: r.group, resource: r.resource, subresource: r.subresource ?? '', name: r.name ?? '' }),
      )
      expect(missing.map(showRight), system).toEqual([])
    }
  })

  it('grant every right the live preflight asks, which asks by name what the Role grants by name, and the run store', () => {
    const rules = roleOf('svc-svcops-live-upgrade').rules as PolicyRule[]
    const targets = Object.fromEntries(LIVE_COMPONENTS.map((c) => [c, { deployment: `svc-${c}` }]))
    const cluster = {
      prefix: 'svc',
      targets,
      tls: { caConfigMap: 'svc-tls-ca' },
      reach: 'service',
      stackMap: 'svc-svcops-stack',
      metrics: { port: 9100, path: '/metrics' },
    } as unknown as Parameters<typeof liveRights>[0]
    const asked = liveRights(cluster)
    const denied = asked.filter(
      (r) =>
        !allowedBy(rules, { verb: r.verb, group: r.group, resource: r.resource, subresource: r.subresource ?? '', name: r.name ?? '' }),
    )
    expect(denied.map(showRight)).toEqual([])
    // The writes are asked by name, as granted: a Deployment or Secret of another name stays out of reach.
    expect(asked.filter((r) => r.verb === 'patch' && r.resource !== 'configmaps' && !r.name).map(showRight)).toEqual([])
    expect(allowedBy(rules, { verb: 'patch', group: 'apps', resource: 'deployments', subresource: '', name: 'svc-recording' })).toBe(false)
    // The run store's ConfigMaps (live-cluster-run-store.ts): named per run, so granted by no name.
    for (const verb of ['list', 'get', 'create', 'patch', 'delete'])
      expect(
        allowedBy(rules, {
          verb,
          group: '',
          resource: 'configmaps',
          subresource: '',
          name: verb === 'list' || verb === 'create' ? '' : 'svcops-run-x',
        }),
        verb,
      ).toBe(true)
  })

  it('carry the version label on the Deployments and pod templates only, so a version change patches nothing else', () => {
    const versioned = prod.objects.filter((o) => JSON.stringify(o.unwrapped).includes('app.kubernetes.io/version')).map((o) => kindOf(o))
    expect(new Set(versioned)).toEqual(new Set(['Deployment']))
  })
})

// Each row: what the stack lacks, and what the refusal must name.
const REFUSED: [string, (c: LooseConfig) => void, RegExp][] = [
  ['no jobs section', (c) => delete deployOf(c).jobs, /deploy\.jobs is missing \(image, credentialsSecret, backupKeysSecret, runsClaim\)/],
  ['no backup section', (c) => delete c['svcops:backup'], /backup is missing/],
  ['no identity', (c) => delete (c['svcops:backup'] as LooseConfig).identity, /backup\.identity is missing/],
  [
    'a recipient key outside the mounted Secrets',
    (c) => ((c['svcops:backup'] as LooseConfig).recipients = ['/etc/svcops/backup-recipient.asc']),
    /backup\.recipients\[0\] "\/etc\/svcops\/backup-recipient\.asc" is not in a mounted Secret \(expected a file under \/etc\/svcops\/credentials or \/etc\/svcops\/backup-keys\)/,
  ],
  [
    'a signing key reaching out of its folder',
    (c) => ((c['svcops:backup'] as LooseConfig).signingKey = { file: '/etc/svcops/backup-keys/../signing.key.asc' }),
    /backup\.signingKey\.file "\/etc\/svcops\/backup-keys\/\.\.\/signing\.key\.asc" is not in a mounted Secret/,
  ],
  [
    'a local backup store without a volume',
    (c) => delete deployOf(c).jobs?.backupStoreClaim,
    /deploy\.jobs\.backupStoreClaim is missing \(backup\.store\.path \/var\/backups\/svcops is a local directory/,
  ],
  [
    'an SSH store without a pinned host key',
    (c) =>
      ((c['svcops:backup'] as LooseConfig).store = {
        path: '/srv/backups',
        ssh: { host: 'backup.example.internal', user: 'svcops', keyFile: '/etc/svcops/credentials/store_ed25519' },
      }),
    /backup\.store\.ssh\.hostKey is missing/,
  ],
]

// The prod stack runs the recording service on the Kubernetes platform: its upgrade job runs pulumi.
REFUSED.push(
  [
    'a scheduled live upgrade of a live system not on the Kubernetes platform',
    (c) => delete c['svcops:live'],
    /svcops:live\.platform is not kubernetes \(deploy\.liveUpgradeSchedule upgrades the live components of this stack with pulumi up/,
  ],
  [
    'no kubernetes:context for the upgrade on the Kubernetes platform',
    (c) => delete c['kubernetes:context'],
    /kubernetes:context is missing \(recording\.platform kubernetes: the upgrade job writes a kubeconfig of that name for its ServiceAccount/,
  ],
  [
    'a kubeconfig of another machine for the upgrade on the Kubernetes platform',
    (c) => (c['kubernetes:kubeconfig'] = '/home/ops/.kube/prod-admin'),
    /kubernetes:kubeconfig is set \(recording\.platform kubernetes: the upgrade job uses the kubeconfig of its ServiceAccount/,
  ],
)

describe('a schedule whose job would lack a mount or a key', () => {
  it.each(REFUSED)('is refused at preview, naming it: %s', async (_what, change, expected) => {
    const error = await buildStack('prod', change).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BadInputError)
    expect(String(error)).toMatch(
      /deploy\.upgradeSchedule and deploy\.liveUpgradeSchedule and deploy\.backupSchedule: the scheduled job cannot run as configured: /,
    )
    expect(String(error)).toMatch(expected)
  })

  it('refuses a gate id that is not one, naming the field', async () => {
    const error = await buildStack('prod', (c) => {
      deployOf(c).liveUpgradeSchedule = { schedule: '0 3 * * 0', to: '7.0.0', acks: ['api v3'] }
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BadInputError)
    expect(String(error)).toMatch(/deploy\.liveUpgradeSchedule\.acks\[0\].*expected a gate id like 6\.0\.0\/send-message/)
  })

  it('names every problem at once', async () => {
    const error = await buildStack('prod', (c) => {
      delete (c['svcops:backup'] as LooseConfig).identity
      delete deployOf(c).jobs?.backupStoreClaim
    }).catch((e: unknown) => e)
    expect(String(error)).toMatch(/backup\.identity is missing.*; deploy\.jobs\.backupStoreClaim is missing/)
  })

  it('is accepted with an SSH store whose key is a mounted Secret and whose host key is pinned, and mounts no store volume then', async () => {
    const r = await buildStack('prod', (c) => {
      ;(c['svcops:backup'] as LooseConfig).store = {
        path: '/srv/backups',
        ssh: {
          host: 'backup.example.internal',
          user: 'svcops',
          keyFile: '/etc/svcops/credentials/store_ed25519',
          hostKey: 'SHA256:' + 'A'.repeat(43),
        },
      }
    })
    const pod = cronJob(r, 'svc-svcops-backup').spec?.jobTemplate.spec?.template.spec
    expect(pod?.volumes?.map((v) => v.name)).not.toContain('backup-store')
  })

  it('is no concern of a stack without schedules', async () => {
    const r = await buildStack('prod', (c) => {
      delete deployOf(c).upgradeSchedule
      delete deployOf(c).liveUpgradeSchedule
      delete deployOf(c).backupSchedule
      delete c['svcops:backup']
    })
    expect(objectsOfKind(r, 'CronJob')).toEqual([])
  })
})

describe("the init container's copy of the Secrets", () => {
  it('turns the group-readable files the kubelet mounts into owner-only files svcops accepts', () => {
    const root = mkdtempSync(join(tmpdir(), 'svcops-secret-copy-'))
    // The kubelet's layout: each key a symlink into ..data, files 0440 (defaultMode 0400 | fsGroup).
    for (const [dir, files] of [
      ['credentials', { 'recording-db-password': 'db secret\n' }],
      ['backup-keys', { 'identity.asc': 'private key\n', 'recipient.asc': 'public key\n' }],
    ] as const) {
      const mount = join(root, SECRET_SOURCES, dir)
      mkdirSync(join(mount, '..2026_11_25_01_00_00.123'), { recursive: true })
      symlinkSync('..2026_11_25_01_00_00.123', join(mount, '..data'))
      for (const [name, text] of Object.entries(files)) {
        writeFileSync(join(mount, '..data', name), text)
        chmodSync(join(mount, '..data', name), 0o440)
        symlinkSync(join('..data', name), join(mount, name))
      }
      mkdirSync(join(root, 'etc/svcops', dir), { recursive: true })
    }
    const password = join(root, 'etc/svcops/credentials/recording-db-password')
    // Before the copy svcops refuses the mounted file itself, as it must.
    expect(() =>
      readSecret({ file: join(root, SECRET_SOURCES, 'credentials/recording-db-password') }, 'recording.database.password'),
    ).toThrow(/has mode 0440, readable by group or others; expected 0600/)
    mkdirSync(join(root, 'tmp'))
    execFileSync('sh', ['-ec', copySecretsScript(root, { context: 'prod-cluster', namespace: 'svc-prod' })])
    expect(readdirSync(join(root, 'etc/svcops/backup-keys')).sort()).toEqual(['identity.asc', 'recipient.asc'])
    expect(statSync(password).mode & 0o077).toBe(0)
    expect(statSync(password).isSymbolicLink()).toBe(false)
    expect(readSecret({ file: password }, 'recording.database.password')).toBe('db secret')
    for (const dir of ['runs', 'state', 'tmp']) expect(statSync(join(root, 'var/lib/svcops', dir)).isDirectory()).toBe(true)
    // The upgrade's kubeconfig: the stack's context name on the pod's own ServiceAccount, naming its token file, holding no token.
    const kubeconfig = parseYaml(readFileSync(join(root, KUBECONFIG), 'utf8')) as {
      'current-context': string
      contexts: { name: string; context: { namespace: string } }[]
      users: { user: Record<string, string> }[]
    }
    expect(kubeconfig['current-context']).toBe('prod-cluster')
    expect(kubeconfig.contexts[0]).toMatchObject({ name: 'prod-cluster', context: { namespace: 'svc-prod' } })
    // Named for both readers: client-node reads `token-file`, client-go (Pulumi's provider) `tokenFile`.
    expect(kubeconfig.users[0]?.user).toEqual({
      'token-file': join(root, '/var/run/secrets/kubernetes.io/serviceaccount/token'),
      tokenFile: join(root, '/var/run/secrets/kubernetes.io/serviceaccount/token'),
    })
    expect(statSync(join(root, KUBECONFIG)).mode & 0o077).toBe(0)
  })
})

describe("the upgrade job's kubeconfig, loaded by @kubernetes/client-node", () => {
  it('sends the ServiceAccount token to the API server, as a loopback HTTPS server sees it; the former tokenFile-only entry sent none', async () => {
    const api = await startKubeApiStandin({}, 'prod-cluster')
    try {
      const root = mkdtempSync(join(tmpdir(), 'svcops-job-kubeconfig-'))
      // What the kubelet mounts for the pod's ServiceAccount: its token and the cluster's CA.
      const account = join(root, 'var/run/secrets/kubernetes.io/serviceaccount')
      mkdirSync(account, { recursive: true })
      mkdirSync(join(root, 'tmp'))
      const token = api.serviceAccountToken('svc-prod', 'svc-svcops-upgrade')
      writeFileSync(join(account, 'token'), token)
      writeFileSync(join(account, 'ca.crt'), api.caCertificate)
      execFileSync('sh', ['-ec', copySecretsScript(root, { context: 'prod-cluster', namespace: 'svc-prod' })])
      // The pod reaches the API server as kubernetes.default.svc; the loopback stand-in is it here.
      const file = join(root, KUBECONFIG)
      writeFileSync(file, readFileSync(file, 'utf8').replace('https://kubernetes.default.svc', api.url))
      const target = {
        namespace: 'svc-prod',
        deployment: 'svc-recording',
        container: 'recording-service',
        port: 8080,
        context: 'prod-cluster',
      }
      await new KubernetesDriver({ ...target, kubeconfig: file }).serverVersion()
      expect(api.requests.at(-1)).toMatchObject({ path: '/version', authorization: `Bearer ${token}` })
      // The entry as it was (`tokenFile` alone, which client-node does not read): no token, 401.
      const former = join(root, 'tmp/kubeconfig-former')
      writeFileSync(former, readFileSync(file, 'utf8').replace(/^\s*token-file: .*\n/m, ''))
      await expect(new KubernetesDriver({ ...target, kubeconfig: former }).serverVersion()).rejects.toThrow(
        /answered GET \/version with HTTP 401/,
      )
      expect(api.requests.at(-1)?.authorization).toBeUndefined()
    } finally {
      await api.close()
    }
  })
})

describe('the scheduled upgrade on the Kubernetes platform', () => {
  const mountsOf = (c: { volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] } | undefined) =>
    Object.fromEntries((c?.volumeMounts ?? []).map((m) => [m.mountPath, { name: m.name, readOnly: m.readOnly ?? false }]))

  it("runs svcops on a writable 0600 copy of the stack file next to the image's Pulumi.yaml, copied by its init container from the ConfigMap", () => {
    const pod = cronJob(prod, 'svc-svcops-upgrade').spec?.jobTemplate.spec?.template.spec
    const container = pod?.containers[0]
    const init = pod?.initContainers?.[0]
    const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value]))
    expect(env.SVCOPS_STACKS_DIR).toBe('/opt/svcops/stacks')
    // svcops writes its stack file in place: a writable volume at stackConfigDir, and no read-only ConfigMap in its way.
    expect(mountsOf(container)['/opt/svcops/stacks']).toEqual({ name: 'project-stacks', readOnly: false })
    expect(mountsOf(container)['/etc/svcops/stacks']).toBeUndefined()
    expect(pod?.volumes?.find((v) => v.name === 'project-stacks')).toEqual({ name: 'project-stacks', emptyDir: { sizeLimit: '1Mi' } })
    expect(mountsOf(init)['/etc/svcops/stacks']).toEqual({ name: 'stack', readOnly: true })
    expect(mountsOf(init)['/opt/svcops/stacks']).toEqual({ name: 'project-stacks', readOnly: false })
    expect(pod?.volumes?.find((v) => v.name === 'stack')).toMatchObject({ configMap: { name: 'svc-svcops-stack' } })
    expect(init?.command?.[2]).toContain('umask 077')
    expect(init?.command?.[2]).toContain('cp /etc/svcops/stacks/Pulumi.prod.yaml /opt/svcops/stacks/')
    // The copy is owned by the uid both containers run as.
    expect(pod?.securityContext?.runAsUser).toBe(10001)
    // The Pulumi backend and secrets provider come from the credentials Secret's variables, never from args.
    expect(container?.envFrom).toEqual([{ secretRef: { name: deployOf(stackConfig('prod')).jobs?.credentialsSecret } }])
    expect(JSON.stringify([container?.command, container?.args ?? []])).not.toMatch(/PULUMI_|passphrase|token/i)
  })

  it('leaves the backup job as it was: the ConfigMap read-only at /etc/svcops/stacks, no stacks volume, no copy', () => {
    const pod = cronJob(prod, 'svc-svcops-backup').spec?.jobTemplate.spec?.template.spec
    const container = pod?.containers[0]
    expect(mountsOf(container)['/etc/svcops/stacks']).toEqual({ name: 'stack', readOnly: true })
    expect(mountsOf(container)['/opt/svcops/stacks']).toBeUndefined()
    expect(pod?.volumes?.map((v) => v.name)).not.toContain('project-stacks')
    expect(mountsOf(pod?.initContainers?.[0])['/etc/svcops/stacks']).toBeUndefined()
    expect(pod?.initContainers?.[0]?.command?.[2]).not.toContain('/opt/svcops/stacks')
    expect(Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value])).SVCOPS_STACKS_DIR).toBe('/etc/svcops/stacks')
  })

  it("copies the ConfigMap's file (a symlink into ..data, 0644) to an owner-only regular file svcops and pulumi can rewrite", () => {
    const root = mkdtempSync(join(tmpdir(), 'svcops-stack-copy-'))
    const text = 'config:\n  svcops:databasePassword:\n    secure: v1:AAAAAAAAAAAAAAAA:ciphertext\n'
    const map = join(root, '/etc/svcops/stacks')
    mkdirSync(join(map, '..2026_11_25_01_00_00.456'), { recursive: true })
    symlinkSync('..2026_11_25_01_00_00.456', join(map, '..data'))
    writeFileSync(join(map, '..data', 'Pulumi.prod.yaml'), text)
    chmodSync(join(map, '..data', 'Pulumi.prod.yaml'), 0o644)
    symlinkSync(join('..data', 'Pulumi.prod.yaml'), join(map, 'Pulumi.prod.yaml'))
    for (const dir of [
      'etc/svcops/credentials',
      'etc/svcops/backup-keys',
      'opt/svcops/stacks',
      `${SECRET_SOURCES.slice(1)}/credentials`,
      `${SECRET_SOURCES.slice(1)}/backup-keys`,
    ])
      mkdirSync(join(root, dir), { recursive: true })
    execFileSync('sh', ['-ec', copySecretsScript(root, undefined, 'prod')])
    const copy = join(root, 'opt/svcops/stacks/Pulumi.prod.yaml')
    expect(readFileSync(copy, 'utf8')).toBe(text)
    expect(lstatSync(copy).isSymbolicLink()).toBe(false)
    expect(statSync(copy).mode & 0o777).toBe(0o600)
    expect(statSync(copy).uid).toBe(process.getuid?.())
    expect(() => copySecretsScript('', undefined, 'prod; rm -rf /')).toThrow(BadInputError)
  })
})

describe('the stack file the jobs carry, through the SDK run entry', () => {
  const CIPHERTEXT = 'v1:Zm9yLXRoZS1zY2hlZHVsZWQtam9icw==:c2VjdXJlLXZhbHVlLWFzLXRoZS1maWxlLWhvbGRzLWl0'
  const PASSWORD = 'db-Pa55word-never-in-a-job-object-4c1e'
  let run: EngineRun
  let fileText: string
  beforeAll(async () => {
    const config = { ...stackConfig('prod'), 'svcops:databasePassword': { secure: CIPHERTEXT } }
    fileText = `# the operator's own comment\n${toYaml({ encryptionsalt: 'v1:c2FsdA==:v1:aXY=:dGFn', config })}`
    const file = join(mkdtempSync(join(tmpdir(), 'svcops-jobs-stack-')), 'Pulumi.prod.yaml')
    writeFileSync(file, fileText)
    // As `pulumi up` hands it to the program: decrypted, marked secret.
    run = await runEngine({
      stack: 'prod',
      preview: false,
      stackFile: file,
      config: { 'svcops:databasePassword': PASSWORD },
      secretKeys: ['svcops:databasePassword'],
    })
  }, 600_000)

  it("is the file Pulumi reads, byte for byte: the secure value as its ciphertext, the secrets provider's salt, the comments", () => {
    expect(errors(run)).toEqual([])
    const map = kubeObjects(run).find((r) => r.type === 'kubernetes:core/v1:ConfigMap' && r.name === 'svc-svcops-stack')
    const data = (plain(map?.inputs ?? {}) as { data?: Record<string, string> }).data ?? {}
    expect(Object.keys(data)).toEqual(['Pulumi.prod.yaml'])
    expect(data['Pulumi.prod.yaml']).toBe(fileText)
    expect(data['Pulumi.prod.yaml']).toContain(`secure: ${CIPHERTEXT}`)
  })

  it('puts the decrypted value in no job object: not the ConfigMap, not a CronJob, not a Role', () => {
    const jobObjects = kubeObjects(run).filter((r) => r.parent.includes('svcops:infra:ScheduledJobs'))
    expect(jobObjects.map((r) => r.type)).toContain('kubernetes:batch/v1:CronJob')
    for (const r of jobObjects) expect(JSON.stringify(plain(r.inputs)), r.name).not.toContain(PASSWORD)
  })
})
