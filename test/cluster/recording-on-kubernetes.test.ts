/**
 * The Kubernetes platform end to end, on a real cluster with the real Pulumi CLI (`npm run
 * test:cluster`; docs/deploy.md). A throwaway kind cluster (or SVCOPS_E2E_CONTEXT), PostgreSQL in
 * it, the program deployed from a copy of this project on a local file backend with the lab's
 * recording service images at 1.5.0; then `svcops upgrade recording --to 2.0.0` and `svcops rollback
 * recording` as a user runs them, checked through the cluster, the service and the stack file.
 *
 * Needs: pulumi; docker and kind, or SVCOPS_E2E_CONTEXT and SVCOPS_E2E_REGISTRY (and then
 * SVCOPS_E2E_DATABASE, host:port of a PostgreSQL both the pods and this machine reach);
 * SVCOPS_E2E_IMAGES (a registry prefix with images of the manager and the live production system,
 * which the lab does not package) and SVCOPS_E2E_MANAGER_URL (that manager as this machine reaches
 * it, its user's password in SVCOPS_E2E_MANAGER_PASSWORD). The live case (`svcops upgrade live` and
 * `rollback live` on the same stack) also needs SVCOPS_E2E_LIVE_TO, a newer live release whose images
 * SVCOPS_E2E_IMAGES holds, and checks their metrics when SVCOPS_E2E_LIVE_METRICS_PORT names their port. Without them every test is skipped with
 * one line naming what is missing. With kind, PostgreSQL runs as a container publishing its port on
 * the kind network's gateway address, which the pods and this machine both reach.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateBackupKey } from '../../src/backup/keys.ts'
import { findBinary, local, runCommand } from '../../src/core/runner.ts'
import { KubernetesDriver } from '../../src/drivers/kubernetes.ts'
import { readStackVersion } from '../../src/drivers/pulumi.ts'
import type { LiveConfig } from '../../src/config/schema.ts'
import { gateItems } from '../../src/live/gates.ts'
import { ROOT, runSvcops } from '../support/cli.ts'
import { buildRecordingImage } from './images.ts'

const CONTEXT = process.env.SVCOPS_E2E_CONTEXT
const REGISTRY = process.env.SVCOPS_E2E_REGISTRY ?? 'localhost/svcops-e2e'
const IMAGES = process.env.SVCOPS_E2E_IMAGES
/** A live release whose images SVCOPS_E2E_IMAGES also holds, newer than the staging stack's: the live case upgrades to it and back. */
const LIVE_TO = process.env.SVCOPS_E2E_LIVE_TO

/** What is missing for this suite, in one line; undefined when it can run. */
function missingTools(): string | undefined {
  const missing = [
    findBinary('pulumi') ? '' : 'the Pulumi CLI',
    CONTEXT ? (process.env.SVCOPS_E2E_REGISTRY ? '' : 'SVCOPS_E2E_REGISTRY') : findBinary('kind') ? '' : 'kind (or SVCOPS_E2E_CONTEXT)',
    findBinary('docker') ? '' : 'docker',
    IMAGES ? '' : 'SVCOPS_E2E_IMAGES',
    process.env.SVCOPS_E2E_MANAGER_URL ? '' : 'SVCOPS_E2E_MANAGER_URL',
    CONTEXT && !process.env.SVCOPS_E2E_DATABASE ? 'SVCOPS_E2E_DATABASE' : '',
  ].filter(Boolean)
  return missing.length ? `needs ${missing.join(', ')}` : undefined
}

const reason = missingTools()
if (reason) process.stderr.write(`test:cluster skipped: ${reason}.\n`)
if (!reason && !LIVE_TO) process.stderr.write('test:cluster: the live case skipped: needs SVCOPS_E2E_LIVE_TO.\n')
const suite = reason ? describe.skip : describe
const NAMESPACE = 'svc-e2e'
const PASSPHRASE = 'svcops-e2e-passphrase'
const DB_PASSWORD = process.env.SVCOPS_E2E_DB_PASSWORD ?? 'svcops-e2e-db-password'

/** PostgreSQL in a container, its port published on the kind network's gateway address: `host:port`. */
async function startDatabase(): Promise<string> {
  const gateway = (
    await runCommand(local, ['docker', 'network', 'inspect', 'kind', '-f', '{{(index .IPAM.Config 0).Gateway}}'])
  ).stdout.trim()
  await runCommand(local, ['docker', 'rm', '-f', 'svcops-e2e-pg'], { check: false })
  await runCommand(
    local,
    [
      'docker',
      'run',
      '-d',
      '--name',
      'svcops-e2e-pg',
      '-e',
      'POSTGRES_USER=recorder',
      '-e',
      'POSTGRES_PASSWORD',
      '-e',
      'POSTGRES_DB=recordings',
      '-p',
      `${gateway}:55432:5432`,
      'docker.io/library/postgres:16',
    ],
    { env: { POSTGRES_PASSWORD: DB_PASSWORD } },
  )
  return `${gateway}:55432`
}

suite(`the recording service on a real cluster${reason ? ` (skipped: ${reason})` : ''}`, () => {
  const work = mkdtempSync(join(tmpdir(), 'svcops-e2e-'))
  const stackFile = join(work, 'stacks', 'Pulumi.e2e.yaml')
  const context = CONTEXT ?? 'kind-svcops-e2e'
  const env = {
    PULUMI_BACKEND_URL: `file://${join(work, 'state')}`,
    PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
    SVCOPS_STACKS_DIR: join(work, 'stacks'),
    SVCOPS_RUNS_DIR: join(work, 'runs'),
    SVCOPS_MANAGER_PASSWORD: process.env.SVCOPS_E2E_MANAGER_PASSWORD ?? '',
    SVCOPS_E2E_DB_PASSWORD: DB_PASSWORD,
  }
  const pulumi = (args: string[], input?: string) =>
    runCommand(local, ['pulumi', ...args], {
      cwd: work,
      env: { ...env, PATH: process.env.PATH ?? '' },
      timeoutMs: 1_500_000,
      ...(input ? { input } : {}),
    })
  const kube = () =>
    new KubernetesDriver({ namespace: NAMESPACE, deployment: 'svc-recording', container: 'recording-service', port: 8080, context })

  beforeAll(async () => {
    if (!CONTEXT) await runCommand(local, ['kind', 'create', 'cluster', '--name', 'svcops-e2e', '--wait', '300s'], { timeoutMs: 600_000 })
    const database = CONTEXT ? (process.env.SVCOPS_E2E_DATABASE ?? '') : await startDatabase()
    const [dbHost = '', dbPort = '5432'] = database.split(':')
    const key = await generateBackupKey({ name: 'svcops e2e' })
    mkdirSync(join(work, 'keys'), { mode: 0o700 })
    writeFileSync(join(work, 'keys/backup.pub.asc'), key.publicKey)
    writeFileSync(join(work, 'keys/backup.key.asc'), key.privateKey, { mode: 0o600 })
    const managerUrl = `http://svc-manager.${NAMESPACE}.svc.cluster.local:8080`
    for (const version of ['1.5.0', '2.0.0']) {
      const image = await buildRecordingImage(version, {
        registry: REGISTRY,
        jwksUrl: `${managerUrl}/.well-known/jwks.json`,
        issuer: managerUrl,
      })
      if (CONTEXT) await runCommand(local, ['docker', 'push', image], { timeoutMs: 600_000 })
      else await runCommand(local, ['kind', 'load', 'docker-image', image, '--name', 'svcops-e2e'], { timeoutMs: 600_000 })
    }
    // A copy of the project: the program, its dependencies, and a stack on the kubernetes platform.
    for (const f of ['Pulumi.yaml', 'package.json', 'tsconfig.json', 'src']) cpSync(join(ROOT, f), join(work, f), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'))
    const doc = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.staging.yaml'), 'utf8')) as {
      config: Record<string, Record<string, unknown>>
    }
    const deploy = doc.config['svcops:deploy'] as Record<string, Record<string, unknown>>
    doc.config['kubernetes:context'] = context as never
    deploy.namespace = NAMESPACE as never
    deploy.tls = false as never
    delete deploy.imagePullSecret
    delete deploy.jobs
    delete deploy.upgradeSchedule
    delete deploy.backupSchedule
    deploy.recording = {
      ...deploy.recording,
      image: `${REGISTRY}/svc/recording`,
      replicas: 2,
      storage: { size: '1Gi', accessMode: 'ReadWriteMany' },
    }
    for (const [key, image] of Object.entries({ manager: 'manager' })) deploy[key] = { ...deploy[key], image: `${IMAGES}/svc/${image}` }
    const live = deploy.live as Record<string, Record<string, unknown>>
    for (const c of ['systemController', 'ingest', 'pipeline', 'controlPanel'])
      live[c] = { ...live[c], image: `${IMAGES}/svc/${c}`, nodeSelector: {}, tolerations: [] }
    // The port those images serve their metrics on: SVCOPS_E2E_LIVE_METRICS_PORT; without it the
    // metrics check of the live case says "not checked" (docs/live.md).
    const metricsPort = Number(process.env.SVCOPS_E2E_LIVE_METRICS_PORT ?? '')
    if (metricsPort) live.metrics = { port: metricsPort }
    else delete live.metrics
    doc.config['svcops:recording'] = {
      platform: 'kubernetes',
      version: '1.5.0',
      database: { host: dbHost, port: Number(dbPort), name: 'recordings', user: 'recorder', password: { env: 'SVCOPS_E2E_DB_PASSWORD' } },
    }
    // The live production system of the same stack, upgraded by `svcops upgrade live` (docs/live.md).
    doc.config['svcops:live'] = { platform: 'kubernetes' }
    doc.config['svcops:manager'] = {
      ...doc.config['svcops:manager'],
      url: process.env.SVCOPS_E2E_MANAGER_URL ?? '',
      allowInsecureHttp: true,
    }
    doc.config['svcops:backup'] = {
      store: { path: join(work, 'backups') },
      recipients: [join(work, 'keys/backup.pub.asc')],
      identity: { file: join(work, 'keys/backup.key.asc') },
    }
    writeFileSync(stackFile, toYaml(doc))
    await pulumi(['stack', 'init', 'e2e', '--non-interactive'])
    // The secret goes through stdin, never argv.
    await pulumi(['config', 'set', '--secret', '--stack', 'e2e', 'svcops:databasePassword'], DB_PASSWORD)
    await pulumi(['up', '--stack', 'e2e', '--yes', '--non-interactive'])
  })

  afterAll(async () => {
    if (reason) return
    await pulumi(['destroy', '--stack', 'e2e', '--yes', '--non-interactive', '--exclude-protected']).catch(() => undefined)
    if (!CONTEXT) await runCommand(local, ['kind', 'delete', 'cluster', '--name', 'svcops-e2e'], { check: false })
    if (!CONTEXT) await runCommand(local, ['docker', 'rm', '-f', 'svcops-e2e-pg'], { check: false })
  })

  it('upgrades the Deployment to 2.0.0 with a verified backup, and the stack file holds 2.0.0 afterwards', async () => {
    const run = await runSvcops(['upgrade', 'recording', '--env', 'e2e', '--to', '2.0.0', '--yes', '--json'], { cwd: work, env })
    expect(run.code, run.stderr).toBe(0)
    expect((await kube().readDeployment()).version).toBe('2.0.0')
    expect((await kube().listPods()).every((p) => p.version === '2.0.0' && p.ready)).toBe(true)
    expect(readStackVersion(stackFile, 'svcops:recording.version')).toBe('2.0.0')
  })

  it('rolls back to 1.5.0 the same way, the database restored because 2.0.0 migrated it, and the stack file holds 1.5.0', async () => {
    const run = await runSvcops(['rollback', 'recording', '--env', 'e2e', '--yes', '--json'], { cwd: work, env })
    expect(run.code, run.stderr).toBe(0)
    expect((await kube().readDeployment()).version).toBe('1.5.0')
    expect(readStackVersion(stackFile, 'svcops:recording.version')).toBe('1.5.0')
    const verify = await runSvcops(['verify', 'recording', '--env', 'e2e', '--json'], { cwd: work, env })
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true })
  })

  it.skipIf(!LIVE_TO)('upgrades the live system through the stack file and pulumi up, and rolls it back the same way', async () => {
    const from = readStackVersion(stackFile, 'svcops:deploy.live.version') ?? ''
    const to = LIVE_TO ?? ''
    const acks = gateItems(from, to, { prefix: 'svc', productDir: 'svc' } as LiveConfig).map((g) => g.id)
    const liveKube = (c: string) =>
      new KubernetesDriver({ namespace: NAMESPACE, deployment: `svc-${c}`, container: c, app: c, port: 8080, context })
    const components = ['system-controller', 'ingest', 'pipeline', 'control-panel']
    const up = await runSvcops(
      ['upgrade', 'live', '--env', 'e2e', '--to', to, ...(acks.length ? ['--ack', acks.join(',')] : []), '--yes', '--json'],
      {
        cwd: work,
        env,
      },
    )
    expect(up.code, up.stderr).toBe(0)
    expect(readStackVersion(stackFile, 'svcops:deploy.live.version')).toBe(to)
    for (const c of components) expect((await liveKube(c).readDeployment()).version, c).toBe(to)
    const back = await runSvcops(['rollback', 'live', '--env', 'e2e', '--yes', '--json'], { cwd: work, env })
    expect(back.code, back.stderr).toBe(0)
    expect(readStackVersion(stackFile, 'svcops:deploy.live.version')).toBe(from)
    for (const c of components) expect((await liveKube(c).readDeployment()).version, c).toBe(from)
    const verify = await runSvcops(['verify', 'live', '--env', 'e2e', '--json'], { cwd: work, env })
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true })
  })

  it('refuses to start while the stack has a change besides the version, listing it', async () => {
    writeFileSync(stackFile, readFileSync(stackFile, 'utf8').replace('replicas: 2', 'replicas: 3'))
    const run = await runSvcops(['upgrade', 'recording', '--env', 'e2e', '--to', '2.0.0', '--yes'], { cwd: work, env })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain("besides the recording service's version")
  })
})
