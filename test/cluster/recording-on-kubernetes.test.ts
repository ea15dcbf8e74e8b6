/**
 * The Kubernetes platform end to end, on a real cluster with the real Pulumi CLI (`npm run
 * test:cluster`; docs/deploy.md gives the commands for kind from nothing). A throwaway kind cluster
 * (or SVCOPS_E2E_CONTEXT), PostgreSQL beside it, and staging's stack made to fit a laptop
 * (./laptop-stack.ts: RWO storage, no GPU) deployed from a copy of this project on a local file
 * backend, with images the suite builds and loads (./images.ts: the lab's recording service, live
 * components and manager emulator, and svcops itself for the scheduled jobs). Then, as a user runs
 * them: `pulumi up`, `svcops upgrade recording --to 2.0.0` across the schema change, `rollback` with
 * the restore, an upgrade killed after its backup and resumed, the live system's upgrade and
 * rollback, each scheduled job once, and `pulumi destroy` leaving the recordings' claim.
 *
 * Needs: pulumi, kubectl, docker and kind; or, for another cluster, SVCOPS_E2E_CONTEXT,
 * SVCOPS_E2E_REGISTRY (a registry the cluster pulls from, which this machine pushes to) and
 * SVCOPS_E2E_DATABASE (host:port of a PostgreSQL both the pods and this machine reach). Without
 * them every test is skipped, one line on stderr naming what is missing. With kind, PostgreSQL runs
 * as a container publishing its port on the kind network's gateway address.
 *
 * SVCOPS_E2E_UPDATE_FIXTURES=1 writes what the real CLI prints for the preview of a version change
 * into test/drivers/fixtures/preview-version-only.json (the driver tests' fixture; hand-written
 * until someone has run this).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
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
import { LIVE_COMPONENTS } from '../../src/lab/live/releases.ts'
import { ROOT, runSvcops, runSvcopsKilledAt } from '../support/cli.ts'
import { buildLiveImage, buildManagerImage, buildRecordingImage, buildSvcopsImage } from './images.ts'
import { JOB_OBJECTS, makeLaptopStack } from './laptop-stack.ts'

const CONTEXT = process.env.SVCOPS_E2E_CONTEXT
const REGISTRY = process.env.SVCOPS_E2E_REGISTRY ?? 'localhost/svcops-e2e'
/** The live release the stack starts at, and the one the live case upgrades to and back from. */
const LIVE_FROM = process.env.SVCOPS_E2E_LIVE_FROM ?? '6.0.0'
const LIVE_TO = process.env.SVCOPS_E2E_LIVE_TO ?? '7.0.0'
const TAG = '0.0.0-e2e'

/** What is missing for this suite, in one line; undefined when it can run. */
function missingTools(): string | undefined {
  const missing = [
    findBinary('pulumi') ? '' : 'the Pulumi CLI (pulumi)',
    findBinary('kubectl') ? '' : 'kubectl',
    findBinary('docker') ? '' : 'docker',
    CONTEXT ? '' : findBinary('kind') ? '' : 'kind (or SVCOPS_E2E_CONTEXT)',
    CONTEXT && !process.env.SVCOPS_E2E_REGISTRY ? 'SVCOPS_E2E_REGISTRY' : '',
    CONTEXT && !process.env.SVCOPS_E2E_DATABASE ? 'SVCOPS_E2E_DATABASE' : '',
  ].filter(Boolean)
  return missing.length ? `needs ${missing.join(', ')} on PATH or set` : undefined
}

const reason = missingTools()
if (reason) process.stderr.write(`test:cluster skipped: ${reason}.\n`)
const suite = reason ? describe.skip : describe
const NAMESPACE = 'svc-e2e'
const PASSPHRASE = 'svcops-e2e-passphrase'
const DB_PASSWORD = process.env.SVCOPS_E2E_DB_PASSWORD ?? 'svcops-e2e-db-password'
const MANAGER_EMAIL = 'svcops@e2e.svcops.test'
const MANAGER_PASSWORD = process.env.SVCOPS_E2E_MANAGER_PASSWORD ?? 'svcops-e2e-manager-password'
const MANAGER_PORT = 18080

/** The gates between LIVE_FROM and LIVE_TO, acknowledged (the lab's releases need nothing done). */
function liveAcks(): string[] {
  return gateItems(LIVE_FROM, LIVE_TO, { prefix: 'svc', productDir: 'svc' } as LiveConfig).map((g) => g.id)
}

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

suite(`the Kubernetes platform on a real cluster${reason ? ` (skipped: ${reason})` : ''}`, () => {
  const work = mkdtempSync(join(tmpdir(), 'svcops-e2e-'))
  const stackFile = join(work, 'stacks', 'Pulumi.e2e.yaml')
  const context = CONTEXT ?? 'kind-svcops-e2e'
  const runsDir = join(work, 'runs')
  const env = {
    PULUMI_BACKEND_URL: `file://${join(work, 'state')}`,
    PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
    SVCOPS_STACKS_DIR: join(work, 'stacks'),
    SVCOPS_RUNS_DIR: runsDir,
    SVCOPS_MANAGER_PASSWORD: MANAGER_PASSWORD,
    SVCOPS_E2E_DB_PASSWORD: DB_PASSWORD,
  }
  const pulumi = (args: string[], input?: string) =>
    runCommand(local, ['pulumi', ...args], {
      cwd: work,
      env: { ...env, PATH: process.env.PATH ?? '' },
      timeoutMs: 1_500_000,
      ...(input ? { input } : {}),
    })
  const kubectl = (args: string[], options: { check?: boolean; input?: string } = {}) =>
    runCommand(local, ['kubectl', '--context', context, '--namespace', NAMESPACE, ...args], { timeoutMs: 900_000, ...options })
  const kube = () =>
    new KubernetesDriver({ namespace: NAMESPACE, deployment: 'svc-recording', container: 'recording-service', port: 8080, context })
  let forward: ChildProcess | undefined

  /** Builds an image and puts it where the cluster finds it (kind's node, or the registry). */
  const publish = async (image: Promise<string>) => {
    const ref = await image
    if (CONTEXT) await runCommand(local, ['docker', 'push', ref], { timeoutMs: 600_000 })
    else await runCommand(local, ['kind', 'load', 'docker-image', ref, '--name', 'svcops-e2e'], { timeoutMs: 600_000 })
  }

  beforeAll(async () => {
    if (!CONTEXT) await runCommand(local, ['kind', 'create', 'cluster', '--name', 'svcops-e2e', '--wait', '300s'], { timeoutMs: 600_000 })
    const database = CONTEXT ? (process.env.SVCOPS_E2E_DATABASE ?? '') : await startDatabase()
    const [dbHost = '', dbPort = '5432'] = database.split(':')
    const keysDir = join(work, 'keys')
    const key = await generateBackupKey({ name: 'svcops e2e' })
    mkdirSync(keysDir, { mode: 0o700 })
    writeFileSync(join(keysDir, 'backup.pub.asc'), key.publicKey)
    writeFileSync(join(keysDir, 'backup.key.asc'), key.privateKey, { mode: 0o600 })
    const managerUrl = `http://svc-manager.${NAMESPACE}.svc.cluster.local:8080`
    for (const version of ['1.5.0', '2.0.0'])
      await publish(
        buildRecordingImage(version, { registry: REGISTRY, jwksUrl: `${managerUrl}/.well-known/jwks.json`, issuer: managerUrl }),
      )
    for (const version of [LIVE_FROM, LIVE_TO])
      for (const component of LIVE_COMPONENTS) await publish(buildLiveImage(component, version, { registry: REGISTRY }))
    await publish(buildManagerImage({ registry: REGISTRY, tag: TAG, email: MANAGER_EMAIL, password: MANAGER_PASSWORD }))
    await publish(buildSvcopsImage({ registry: REGISTRY, tag: TAG }))

    // A copy of the project: the program, its dependencies, and the laptop stack.
    for (const f of ['Pulumi.yaml', 'package.json', 'tsconfig.json', 'src']) cpSync(join(ROOT, f), join(work, f), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'))
    const doc = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.staging.yaml'), 'utf8')) as { config: Record<string, unknown> }
    makeLaptopStack(doc, {
      namespace: NAMESPACE,
      context,
      registry: REGISTRY,
      tag: TAG,
      database: { host: dbHost, port: Number(dbPort) },
      // svcops reaches the in-cluster manager through a port-forward (started after `pulumi up`).
      managerUrl: `http://127.0.0.1:${MANAGER_PORT}`,
      managerEmail: MANAGER_EMAIL,
      liveVersion: LIVE_FROM,
      liveUpgrade: { to: LIVE_TO, acks: liveAcks() },
      backupDir: join(work, 'backups'),
      keysDir,
    })
    mkdirSync(join(work, 'stacks'))
    writeFileSync(stackFile, toYaml(doc))

    // What the scheduled jobs mount, which the stack references and does not create.
    await runCommand(local, ['kubectl', '--context', context, 'create', 'namespace', NAMESPACE], { check: false })
    await kubectl(['create', 'secret', 'generic', JOB_OBJECTS.credentialsSecret, '--from-env-file=/dev/stdin'], {
      input: `SVCOPS_MANAGER_PASSWORD=${MANAGER_PASSWORD}\nSVCOPS_E2E_DB_PASSWORD=${DB_PASSWORD}\nPULUMI_CONFIG_PASSPHRASE=${PASSPHRASE}\n`,
    })
    await kubectl(['create', 'secret', 'generic', JOB_OBJECTS.backupKeysSecret, `--from-file=${keysDir}`])
    for (const claim of [JOB_OBJECTS.backupStoreClaim, JOB_OBJECTS.runsClaim])
      await kubectl(['apply', '-f', '-'], {
        input: toYaml({
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: claim, namespace: NAMESPACE },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        }),
      })

    await pulumi(['stack', 'init', 'e2e', '--non-interactive'])
    // The secret goes through stdin, never argv.
    await pulumi(['config', 'set', '--secret', '--stack', 'e2e', 'svcops:databasePassword'], DB_PASSWORD)
    await pulumi(['up', '--stack', 'e2e', '--yes', '--non-interactive'])
    forward = spawn('kubectl', ['--context', context, '-n', NAMESPACE, 'port-forward', 'service/svc-manager', `${MANAGER_PORT}:8080`], {
      stdio: 'ignore',
    })
    await kubectl(['wait', '--for=condition=Available', 'deployment/svc-manager', '--timeout=300s'])
  })

  afterAll(async () => {
    if (reason) return
    forward?.kill()
    if (!CONTEXT) await runCommand(local, ['kind', 'delete', 'cluster', '--name', 'svcops-e2e'], { check: false })
    if (!CONTEXT) await runCommand(local, ['docker', 'rm', '-f', 'svcops-e2e-pg'], { check: false })
  })

  it('deploys every component ready, with the versions of the stack file', async () => {
    expect((await kube().readDeployment()).version).toBe('1.5.0')
    expect((await kube().listPods()).every((p) => p.version === '1.5.0' && p.ready)).toBe(true)
  })

  it('previews a version change as the driver tests expect it (and writes their fixture when asked)', async () => {
    const text = readFileSync(stackFile, 'utf8')
    writeFileSync(stackFile, text.replace("version: '1.5.0'", "version: '2.0.0'").replace('version: 1.5.0', 'version: 2.0.0'))
    const preview = await pulumi(['preview', '--stack', 'e2e', '--json', '--refresh', '--non-interactive'])
    writeFileSync(stackFile, text)
    const steps = (JSON.parse(preview.stdout) as { steps: { op: string; urn: string }[] }).steps
    expect(steps.filter((s) => s.op === 'update').map((s) => s.urn)).toEqual([
      expect.stringMatching(/RecordingService\$kubernetes:apps\/v1:Deployment::svc-recording-deployment$/),
    ])
    expect(steps.find((s) => s.urn.includes('pulumi:providers:kubernetes'))?.urn).toMatch(/::pulumi:providers:kubernetes::kubernetes$/)
    if (process.env.SVCOPS_E2E_UPDATE_FIXTURES === '1')
      writeFileSync(join(ROOT, 'test/drivers/fixtures/preview-version-only.json'), preview.stdout)
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

  it('upgrades the live system through the stack file and pulumi up, and rolls it back the same way', async () => {
    const from = readStackVersion(stackFile, 'svcops:deploy.live.version') ?? ''
    const to = LIVE_TO
    const acks = liveAcks()
    const liveKube = (c: string) =>
      new KubernetesDriver({ namespace: NAMESPACE, deployment: `svc-${c}`, container: c, app: c, port: 8080, context })
    const components = LIVE_COMPONENTS
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
  it('resumes an upgrade killed after its stop, to 2.0.0, and rolls it back', async () => {
    const killed = await runSvcopsKilledAt(
      ['upgrade', 'recording', '--env', 'e2e', '--to', '2.0.0', '--yes', '--json'],
      'stop@svc-recording',
      runsDir,
      { cwd: work, env },
    )
    expect(killed.signal).toBe('SIGKILL')
    const id = readdirSync(runsDir).sort().at(-1) ?? ''
    const resumed = await runSvcops(['resume', id, '--yes', '--json'], { cwd: work, env })
    expect(resumed.code, resumed.stderr).toBe(0)
    expect((await kube().readDeployment()).version).toBe('2.0.0')
    const back = await runSvcops(['rollback', 'recording', '--env', 'e2e', '--yes', '--json'], { cwd: work, env })
    expect(back.code, back.stderr).toBe(0)
    expect((await kube().readDeployment()).version).toBe('1.5.0')
  })

  it('runs each scheduled job once to completion, as its CronJob starts it', async () => {
    for (const job of ['svc-backup', 'svc-upgrade', 'svc-live-upgrade']) {
      await kubectl(['create', 'job', `${job}-once`, `--from=cronjob/${job}`])
      const done = await kubectl(['wait', '--for=condition=complete', `job/${job}-once`, '--timeout=1200s'], { check: false })
      const logs = await kubectl(['logs', `job/${job}-once`, '--all-containers'], { check: false })
      expect(done.code, `${job}: ${logs.stdout.slice(-2000)}`).toBe(0)
    }
    expect((await kube().readDeployment()).version).toBe('2.0.0')
    const controller = new KubernetesDriver({
      namespace: NAMESPACE,
      deployment: 'svc-system-controller',
      container: 'system-controller',
      app: 'system-controller',
      port: 8080,
      context,
    })
    expect((await controller.readDeployment()).version).toBe(LIVE_TO)
  })

  it('destroys the stack and leaves the recordings claim in the cluster', async () => {
    await pulumi(['destroy', '--stack', 'e2e', '--yes', '--non-interactive', '--exclude-protected'])
    const claims = await kubectl(['get', 'persistentvolumeclaims', '-o', 'name'])
    expect(claims.stdout).toContain('persistentvolumeclaim/svc-recording-recordings')
    const deployments = await kubectl(['get', 'deployments', '-o', 'name'])
    expect(deployments.stdout.trim()).toBe('')
  })
})
