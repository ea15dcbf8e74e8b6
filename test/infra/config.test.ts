/**
 * The stack's configuration as a contract: the CLI and the Pulumi program accept the same files,
 * refuse the same mistakes with the field's dot-path, and treat the PSK as the issue demands —
 * generated strong, supplied only if strong, rotated only on purpose.
 */
import { describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { PSK_LENGTH } from '../../src/infra/pskSecret.ts'
import { BadInputError } from '../../src/core/errors.ts'
import { generatePsk } from '../../src/releases/pre-shared-key.ts'
import {
  buildStack,
  containerOf,
  deployOf,
  LAB_STACK,
  dataOf,
  deploymentsUsingSecret,
  envOf,
  nameOf,
  objectNamed,
  objectsOfKind,
  podOf,
  pskOf,
  STACKS_DIR,
  stackConfig,
  writeStack,
  type LooseConfig,
} from './helpers.ts'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { join } from 'node:path'

describe('the Pulumi project', () => {
  it('runs src/infra/index.ts as TypeScript with stacks/ as its config directory, the way the language host loads it', async () => {
    const project = parseYaml(readFileSync(join(STACKS_DIR, '..', 'Pulumi.yaml'), 'utf8')) as {
      runtime: { name: string; options: { nodeargs?: string; typescript: boolean } }
      main: string
      stackConfigDir: string
    }
    expect(project.runtime.name).toBe('nodejs')
    expect(project.runtime.options).toEqual({ typescript: false, packagemanager: 'npm' })
    expect(project.stackConfigDir).toBe('stacks')
    expect(existsSync(join(STACKS_DIR, '..', project.main))).toBe(true)
    // The language host refuses an ES module with both a default export and named exports.
    const entry = (await import('../../src/infra/index.ts')) as Record<string, unknown>
    expect(Object.keys(entry)).toEqual(['default'])
    expect(typeof entry.default).toBe('function')
  })
})

describe('stack files and the CLI', () => {
  it('every stack file in stacks/ passes the environment schema svcops reads with --env', () => {
    const files = readdirSync(STACKS_DIR).filter((f) => /^Pulumi\..+\.yaml$/.test(f) && f !== LAB_STACK)
    expect(files.length).toBeGreaterThanOrEqual(4)
    for (const f of files) expect(() => loadEnvironmentFile(join(STACKS_DIR, f)), f).not.toThrow()
  })

  it('refuses a PSK written in plain text into a stack file, in the CLI and in the program, without echoing it', async () => {
    const psk = generatePsk()
    const file = writeStack('dev', { ...stackConfig('dev'), 'svcops:psk': psk })
    expect(() => loadEnvironmentFile(file, 'dev')).toThrow(
      /psk: a value is not valid; expected a value set with `pulumi config set --secret`/,
    )
    const error = await buildStack('dev', undefined, { config: { 'svcops:psk': psk } }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BadInputError)
    expect(String(error)).toMatch(/psk: a value is stored in plain text; expected it set with `pulumi config set --secret svcops:psk`/)
    expect(String(error)).not.toContain(psk)
  })
})

// Each row: what is wrong, and the dot-path (with what is expected) the message must name.
const INVALID: [string, (c: LooseConfig) => void, RegExp][] = [
  [
    'a live version that is not a release number',
    (c) => (deployOf(c).live.version = 'six'),
    /deploy\.live\.version: "six" is not valid; expected a release number/,
  ],
  [
    'a namespace that is not a Kubernetes name',
    (c) => (deployOf(c).namespace = 'Svc_Dev'),
    /deploy\.namespace: "Svc_Dev" is not valid; expected a Kubernetes name/,
  ],
  [
    'resources without a memory limit',
    (c) => (deployOf(c).manager.resources.limits = { cpu: '1' }),
    /deploy\.manager\.resources\.limits: .* expected at least memory/,
  ],
  [
    'an image with a tag (versions pin the tag)',
    (c) => (deployOf(c).live.ingest.image = 'registry.example.internal/svc/ingest:latest'),
    /deploy\.live\.ingest\.image: .* expected an image repository without tag/,
  ],
  ['an unknown field', (c) => Object.assign(deployOf(c).live.pipeline, { gpus: 2 }), /deploy\.live\.pipeline: unknown field gpus/],
  ['a missing deploy section', (c) => delete c['svcops:deploy'], /deploy: missing/],
  [
    'several recording replicas on a ReadWriteOnce volume',
    (c) => (deployOf(c).recording.replicas = 2),
    /deploy\.recording\.storage\.accessMode: "ReadWriteOnce" is not valid with 2 replicas; expected ReadWriteMany/,
  ],
  [
    'a component of another major release',
    (c) => (deployOf(c).live.ingest.version = '6.0.0'),
    /deploy\.live\.ingest\.version: "6\.0\.0" is not valid; expected a release of major 5/,
  ],
  [
    'two TCP endpoints for a 6.x rendering engine',
    (c) => {
      deployOf(c).live.version = '6.1.0'
      deployOf(c).live.pipeline.tcpEndpoints = ['0.0.0.0:7000', '0.0.0.0:7001']
    },
    /deploy\.live\.pipeline\.tcpEndpoints: 2 endpoints are not valid for release 6\.1\.0; expected exactly one, since SVC_TCP_ENDPOINT takes a single endpoint/,
  ],
  [
    "a metrics port that is the pipeline's TCP endpoint's",
    (c) => {
      deployOf(c).live.pipeline.tcpEndpoints = ['0.0.0.0:7000']
      deployOf(c).live.metrics = { port: 7000, path: '/metrics' }
    },
    /deploy\.live\.metrics\.port: 7000 is not valid; expected a port other than the pipeline's TCP endpoint \(0\.0\.0\.0:7000\), since both are ports of the same pod\./,
  ],
  [
    'a metrics path of two segments (the pod proxy takes one)',
    (c) => (deployOf(c).live.metrics = { port: 9100, path: '/a/metrics' }),
    /deploy\.live\.metrics\.path: .*expected one path segment like \/metrics/,
  ],
  [
    'two system controllers (two keys could be in force during a rotation)',
    (c) => (deployOf(c).live.systemController.replicas = 2 as 1),
    /deploy\.live\.systemController\.replicas: .*expected 1/,
  ],
  [
    'an image digest that is not a sha256 digest',
    (c) => (deployOf(c).live.pipeline.digest = 'latest'),
    /deploy\.live\.pipeline\.digest: .*expected an image digest like sha256:/,
  ],
  [
    'a PSK in the settings file',
    (c) => (deployOf(c).live.systemController.settings = { psk: 'x' }),
    /deploy\.live\.systemController\.settings\.psk: is not allowed/,
  ],
]

describe('a bad stack fails preview, naming the field', () => {
  it.each(INVALID)('%s', async (_what, change, message) => {
    const error = await buildStack('dev', change).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BadInputError)
    expect((error as Error).message).toMatch(message)
    expect((error as Error).message).toMatch(/^\S*Pulumi\.dev\.yaml: /)
  })
})

describe('the PSK', () => {
  it('is generated by a random password of at least 256 bits from letters and digits, kept as a secret', async () => {
    const r = await buildStack('dev')
    const random = r.resources.find((x) => x.type === 'random:index/randomPassword:RandomPassword' && x.name === 'svc-psk-random')
    expect(random?.unwrapped).toMatchObject({
      length: PSK_LENGTH,
      special: false,
      upper: true,
      lower: true,
      numeric: true,
      keepers: { rotation: '2026-11-01' },
    })
    expect(PSK_LENGTH * Math.log2(62)).toBeGreaterThanOrEqual(256)
    expect(pskOf(r)).toMatch(new RegExp(`^[A-Za-z0-9]{${PSK_LENGTH}}$`))
  })

  it('uses a supplied strong PSK (pulumi config set --secret svcops:psk) instead of generating one', async () => {
    const psk = generatePsk()
    const r = await buildStack('prod', undefined, { config: { 'svcops:psk': psk }, secretKeys: ['svcops:psk'] })
    expect(pskOf(r)).toBe(psk)
    expect(r.resources.some((x) => x.type.startsWith('random:') && x.name.startsWith('svc-psk'))).toBe(false)
  })

  it('refuses a weak supplied PSK with the reason, never the value', async () => {
    const weak = 'Password1234Password1234'
    const error = await buildStack('prod', undefined, { config: { 'svcops:psk': weak }, secretKeys: ['svcops:psk'] }).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(BadInputError)
    expect((error as Error).message).toMatch(/Pulumi\.prod\.yaml: psk: .*too weak/)
    expect((error as Error).message).not.toContain(weak)
  })

  it('changes only when pskRotation changes, and then restarts every pod that reads it', async () => {
    const before = await buildStack('staging')
    const again = await buildStack('staging')
    const rotated = await buildStack('staging', (c) => (deployOf(c).pskRotation = '2026-12-24'))
    const checksums = (r: typeof before) =>
      Object.fromEntries(objectsOfKind(r, 'Deployment').map((d) => [nameOf(d), podOf(d).metadata?.annotations ?? {}]))

    // Same configuration: same PSK, no pod template changes, nothing restarts.
    expect(pskOf(again)).toBe(pskOf(before))
    expect(checksums(again)).toEqual(checksums(before))

    expect(pskOf(rotated)).not.toBe(pskOf(before))
    const readers = deploymentsUsingSecret(before, 'svc-psk').map(nameOf)
    expect(readers).toHaveLength(4)
    for (const name of readers) {
      expect(checksums(rotated)[name]?.['checksum/psk'], name).toBeTruthy()
      expect(checksums(rotated)[name]?.['checksum/psk'], name).not.toBe(checksums(before)[name]?.['checksum/psk'])
    }
    // All of them carry the same checksum, so they restart together; the rest do not restart at all.
    expect(new Set(readers.map((n) => checksums(rotated)[n]?.['checksum/psk'])).size).toBe(1)
    for (const name of ['svc-manager', 'svc-recording']) expect(checksums(rotated)[name]).toEqual(checksums(before)[name])
  })
})

describe('rollouts do not cascade', () => {
  it('restarts only the system controller when only its settings change', async () => {
    const before = await buildStack('staging')
    const changed = await buildStack('staging', (c) => (deployOf(c).live.systemController.settings = { log_level: 'info' }))
    const annotations = (r: typeof before) =>
      Object.fromEntries(objectsOfKind(r, 'Deployment').map((d) => [nameOf(d), podOf(d).metadata?.annotations ?? {}]))
    const [a, b] = [annotations(before), annotations(changed)]
    expect(pskOf(changed)).toBe(pskOf(before))
    expect(b['svc-system-controller']?.['checksum/settings']).not.toBe(a['svc-system-controller']?.['checksum/settings'])
    expect(b['svc-system-controller']?.['checksum/psk']).toBe(a['svc-system-controller']?.['checksum/psk'])
    for (const name of Object.keys(a).filter((n) => n !== 'svc-system-controller')) expect(b[name], name).toEqual(a[name])
  })
})

describe('images', () => {
  it('are pinned to their content when the stack gives a digest', async () => {
    const digest = `sha256:${'ab'.repeat(32)}`
    const r = await buildStack('dev', (c) => (deployOf(c).live.pipeline.digest = digest))
    expect(containerOf(objectNamed(r, 'Deployment', 'svc-pipeline')).image).toBe(`registry.example.internal/svc/pipeline:5.2.0@${digest}`)
    expect(containerOf(objectNamed(r, 'Deployment', 'svc-ingest')).image).toBe('registry.example.internal/svc/ingest:5.2.0')
  })
})

describe('product prefix and folder come from svcops:product', () => {
  it('names the variables, the settings file and the settings directory after them', async () => {
    const r = await buildStack('prod', (c) => (c['svcops:product'] = { prefix: 'acme', dir: 'acme-live' }))
    const sc = objectNamed(r, 'Deployment', 'acme-system-controller')
    expect(containerOf(sc).volumeMounts?.map((m) => m.mountPath)).toContain('/etc/opt/acme-live')
    expect(containerOf(sc).args).toEqual(['--settings-path', '/etc/opt/acme-live'])
    expect(Object.keys(dataOf(objectNamed(r, 'Secret', 'acme-system-controller-settings')))).toEqual(['acme_sc_settings.json'])
    expect(envOf(objectNamed(r, 'Deployment', 'acme-pipeline')).ACME_TCP_ENDPOINT?.value).toBe('0.0.0.0:7000')
    for (const d of deploymentsUsingSecret(r, 'acme-psk')) expect(Object.keys(envOf(d))).toContain('ACME_SYSTEM_CONTROLLER_PSK')
  })

  it('probes /api/v1 on a 2.x controller and leaves out --settings-path before 6.0', async () => {
    const r = await buildStack('dev', (c) => (deployOf(c).live.version = '2.4.0'))
    const sc = containerOf(objectNamed(r, 'Deployment', 'svc-system-controller'))
    expect(sc.readinessProbe?.httpGet?.path).toBe('/api/v1/status')
    expect(sc.args).toBeUndefined()
    expect(Object.keys(envOf(objectNamed(r, 'Deployment', 'svc-pipeline')))).toContain('SVC_TCP_ENDPOINTS')
  })
})
