/**
 * svcops' scheduled jobs in the cluster (the upgrade in the maintenance window, the nightly backup),
 * built by the Pulumi program under the engine harness and checked against the official schemas: what
 * each job mounts and may do, the refusal of a schedule whose job would lack a mount or a key, and
 * the init container's copy of the Secrets run for real on the layout the kubelet writes.
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
import { copySecretsScript, KUBECONFIG, SECRET_SOURCES, upgradeRules } from '../../src/infra/scheduledJobs.ts'
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
  it('are an upgrade in the maintenance window and a nightly backup, each a valid CronJob that never retries blindly', () => {
    const deploy = deployOf(stackConfig('prod'))
    const upgrade = cronJob(prod, 'svc-svcops-upgrade')
    const backup = cronJob(prod, 'svc-svcops-backup')
    for (const job of [upgrade, backup]) {
      expect(() => validateObject(job as unknown as Record<string, unknown>)).not.toThrow()
      expect(job.spec?.concurrencyPolicy).toBe('Forbid')
      expect(job.spec?.jobTemplate.spec?.backoffLimit).toBe(0)
    }
    expect(upgrade.spec?.schedule).toBe(deploy.upgradeSchedule?.schedule)
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
    expect(backup.spec?.jobTemplate.spec?.template.spec?.containers[0]?.command).toEqual([
      ...svcops,
      'backup',
      'run',
      '--env',
      'prod',
      '--json',
    ])
  })

  it('mount the stack file, 0600 copies of the credentials and backup keys, the backup store and a runs volume', () => {
    const backupConfig = stackConfig('prod')['svcops:backup'] as { store: { path: string } }
    const jobs = deployOf(stackConfig('prod')).jobs
    for (const name of ['svc-svcops-upgrade', 'svc-svcops-backup']) {
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

  it('run the upgrade under a ServiceAccount with only the namespaced rights its steps use, and the backup with no API token', () => {
    const role = objectNamed(prod, 'Role', 'svc-svcops-upgrade').unwrapped as unknown as IRole
    const binding = objectNamed(prod, 'RoleBinding', 'svc-svcops-upgrade').unwrapped as unknown as IRoleBinding
    expect(() => validateObject(role as unknown as Record<string, unknown>)).not.toThrow()
    expect(() => validateObject(binding as unknown as Record<string, unknown>)).not.toThrow()
    expect(role.rules).toEqual(upgradeRules('svc-svcops-stack'))
    const granted = (role.rules ?? []).flatMap((r) => (r.resources ?? []).flatMap((res) => (r.verbs ?? []).map((v) => `${res}:${v}`)))
    // Never secrets, never a wildcard, never create or delete: the Deployment (and its scale) and, by
    // name, the jobs' copy of the stack file are the only writes a version change needs.
    expect(granted.filter((g) => /secrets|\*/.test(g))).toEqual([])
    expect(granted.filter((g) => /:(create|delete|update|deletecollection)$/.test(g))).toEqual([])
    expect(granted.filter((g) => g.endsWith(':patch'))).toEqual(['deployments:patch', 'deployments/scale:patch', 'configmaps:patch'])
    expect((role.rules ?? []).find((r) => r.resources?.includes('configmaps'))?.resourceNames).toEqual(['svc-svcops-stack'])
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'svc-svcops-upgrade', namespace: 'svc-prod' }])
    expect(objectsOfKind(prod, 'ClusterRole')).toEqual([])
    const backupAccount = objectNamed(prod, 'ServiceAccount', 'svc-svcops-backup').unwrapped as unknown as IServiceAccount
    expect(backupAccount.automountServiceAccountToken).toBe(false)
    expect(cronJob(prod, 'svc-svcops-backup').spec?.jobTemplate.spec?.template.spec?.automountServiceAccountToken).toBe(false)
    const bindings = objectsOfKind(prod, 'RoleBinding').map((o) => o.unwrapped as unknown as IRoleBinding)
    expect(bindings.flatMap((b) => b.subjects ?? []).map((s) => s.name)).not.toContain('svc-svcops-backup')
  })

  it("are listed in docs/deploy.md's RBAC table row by row, as the Role grants them", () => {
    const doc = readFileSync(join(import.meta.dirname, '../../docs/deploy.md'), 'utf8')
    const table = doc.slice(doc.indexOf('| API group | resources | names | verbs | used by |'))
    const lines = table.split('\n').slice(2)
    const rows = lines
      .slice(
        0,
        lines.findIndex((l) => !l.startsWith('|')),
      )
      .map((l) => l.split('|').map((c) => c.trim().replace(/`/g, '')))
      .map(([, group, resources, names, verbs]) => ({ group, resources, names, verbs }))
    const role = objectNamed(prod, 'Role', 'svc-svcops-upgrade').unwrapped as unknown as IRole
    expect(rows).toEqual(
      (role.rules ?? []).map((r) => ({
        group: r.apiGroups?.[0] === '' ? 'core' : r.apiGroups?.[0],
        resources: (r.resources ?? []).join(', '),
        names: r.resourceNames?.join(', ') ?? 'any',
        verbs: r.verbs.join(', '),
      })),
    )
  })

  it("grant every right the Kubernetes run's preflight asks for in the cluster (the SelfSubjectAccessReviews of src/drivers/kubernetes.ts)", () => {
    const rules = upgradeRules('svc-svcops-stack')
    const target = { namespace: 'svc-prod', deployment: 'svc-recording', container: 'recording-service', port: 8080 }
    const denied = neededRights(target, { portForward: false, stackMap: 'svc-svcops-stack' }).filter(
      (r) =>
        !rules.some(
          (rule) =>
            (rule.apiGroups as string[]).includes(r.group) &&
            (rule.resources as string[]).includes(r.subresource ? `${r.resource}/${r.subresource}` : r.resource) &&
            (rule.verbs as string[]).includes(r.verb) &&
            (!rule.resourceNames || (!!r.name && (rule.resourceNames as string[]).includes(r.name))),
        ),
    )
    expect(denied.map(showRight)).toEqual([])
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
    expect(String(error)).toMatch(/deploy\.upgradeSchedule and deploy\.backupSchedule: the scheduled job cannot run as configured: /)
    expect(String(error)).toMatch(expected)
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
    expect(kubeconfig.users[0]?.user).toEqual({ tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' })
    expect(statSync(join(root, KUBECONFIG)).mode & 0o077).toBe(0)
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
