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
 * The target is chosen by SVCOPS_CLUSTER_TARGET:
 * - `kind` (the default): a throwaway kind cluster; needs pulumi, kubectl, docker and kind;
 *   PostgreSQL runs as a container publishing its port on the kind network's gateway address;
 * - `context`: the cluster of SVCOPS_E2E_CONTEXT, with SVCOPS_E2E_REGISTRY (a registry the cluster
 *   pulls from, which this machine pushes to) and SVCOPS_E2E_DATABASE (host:port of a PostgreSQL
 *   both the pods and this machine reach); SVCOPS_E2E_CONTEXT alone selects it too;
 * - `standin` (CI, `npm run test:cluster:standin`): the Kubernetes API stand-in
 *   (test/support/kube-api-standin.ts), the in-test Pulumi engine behind a `pulumi` command
 *   (test/support/pulumi-argv-recorder.ts with `engine`) and the real `kubectl` (Debian's
 *   kubernetes-client); no image, pod or database. The set-up runs as on a cluster (the runbook's
 *   order: the namespace, the Secrets, the claims, `pulumi up`), so its defects show here, and the
 *   cases that need no running pod run (an operator's `kubectl edit` refused at the upgrade's
 *   preflight, a change besides the version refused, `pulumi destroy`); those that do (an upgrade
 *   through the recording service, the jobs' pods, a verify) are selected by the target: registered
 *   for `kind` and `context` only, never a skip here (docs/testing.md names what each needs).
 * A real cluster's target also needs the backup keys at /etc/svcops/backup-keys on this machine
 * (the stack names them where the jobs mount them, and svcops here reads the same paths): the suite
 * writes its keys there when it may. Without what its target needs every test is skipped, one line
 * on stderr naming what is missing.
 *
 * SVCOPS_E2E_UPDATE_FIXTURES=1 writes what the real CLI prints for the preview of a version change
 * into test/drivers/fixtures/preview-version-only.json (the driver tests' fixture; hand-written
 * until someone has run this).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import {
  accessSync,
  chmodSync,
  constants,
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateBackupKey } from '../../src/backup/keys.ts'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { openKubernetesPlatform } from '../../src/recording/kubernetes/recording-kubernetes-platform.ts'
import { settingsFor } from '../../src/recording/recording-settings.ts'
import { errorMessage } from '../../src/core/errors.ts'
import { findBinary, local, runCommand } from '../../src/core/runner.ts'
import { KubernetesDriver } from '../../src/drivers/kubernetes.ts'
import { readStackVersion } from '../../src/drivers/pulumi.ts'
import type { LiveConfig } from '../../src/config/schema.ts'
import { gateItems } from '../../src/live/gates.ts'
import { JOB_PATHS } from '../../src/infra/jobRules.ts'
import { LIVE_COMPONENTS } from '../../src/lab/live/releases.ts'
import { ROOT, runSvcops, runSvcopsKilledAt } from '../support/cli.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import { createPulumiArgvRecorder } from '../support/pulumi-argv-recorder.ts'
import { buildLiveImage, buildManagerImage, buildRecordingImage, buildSvcopsImage } from './images.ts'
import { BACKUP_KEY_FILES, JOB_OBJECTS, makeLaptopStack } from './laptop-stack.ts'

const CONTEXT = process.env.SVCOPS_E2E_CONTEXT
const TARGETS = ['kind', 'context', 'standin'] as const
type Target = (typeof TARGETS)[number]
const TARGET = (process.env.SVCOPS_CLUSTER_TARGET || (CONTEXT ? 'context' : 'kind')) as Target
if (!TARGETS.includes(TARGET)) throw new Error(`SVCOPS_CLUSTER_TARGET: "${TARGET}" is not a target; expected one of ${TARGETS.join(', ')}.`)
const STANDIN = TARGET === 'standin'
const REGISTRY = process.env.SVCOPS_E2E_REGISTRY ?? 'localhost/svcops-e2e'
/** The live release the stack starts at, and the one the live case upgrades to and back from. */
const LIVE_FROM = process.env.SVCOPS_E2E_LIVE_FROM ?? '6.0.0'
const LIVE_TO = process.env.SVCOPS_E2E_LIVE_TO ?? '7.0.0'
const TAG = '0.0.0-e2e'
/** The manager image's tag: the stack's `deploy.manager.version`, which must be a release number. */
const MANAGER_TAG = '0.0.1'

/** Whether this machine may write the backup keys where the stack names them (root, or a folder made writable). */
function keysWritable(): boolean {
  try {
    mkdirSync(JOB_PATHS.backupKeys, { recursive: true, mode: 0o700 })
    accessSync(JOB_PATHS.backupKeys, constants.W_OK)
    return true
  } catch {
    return false
  }
}

/** What is missing for this suite's target, in one line; undefined when it can run. */
function missingTools(): string | undefined {
  if (STANDIN) return findBinary('kubectl') ? undefined : 'needs kubectl on PATH (Debian: kubernetes-client)'
  const missing = [
    findBinary('pulumi') ? '' : 'the Pulumi CLI (pulumi)',
    findBinary('kubectl') ? '' : 'kubectl',
    findBinary('docker') ? '' : 'docker',
    TARGET === 'context' ? '' : findBinary('kind') ? '' : 'kind (or SVCOPS_E2E_CONTEXT)',
    TARGET === 'context' && !process.env.SVCOPS_E2E_REGISTRY ? 'SVCOPS_E2E_REGISTRY' : '',
    TARGET === 'context' && !process.env.SVCOPS_E2E_DATABASE ? 'SVCOPS_E2E_DATABASE' : '',
    TARGET === 'context' && !CONTEXT ? 'SVCOPS_E2E_CONTEXT' : '',
    keysWritable() ? '' : `a writable ${JOB_PATHS.backupKeys} (the stack's backup keys, read there by svcops on this machine)`,
  ].filter(Boolean)
  return missing.length ? `needs ${missing.join(', ')} on PATH or set` : undefined
}

const reason = missingTools()
if (reason) process.stderr.write(`test:cluster skipped: ${reason}.\n`)
const suite = reason ? describe.skip : describe
/**
 * A case that needs running pods (images, the recording service answering, the jobs' pods): selected
 * by the target, a real cluster's only. On the stand-in it is not registered at all (never a skip);
 * docs/testing.md lists each with the upstream part it needs.
 */
const onCluster: (name: string, fn: () => Promise<void>) => void = (name, fn) => {
  if (!STANDIN) it(name, fn)
}
if (STANDIN && !reason)
  process.stderr.write(
    "test:cluster on the stand-in: the cases that need running pods are a real cluster's and not run here (docs/testing.md lists them).\n",
  )
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

/** The CronJobs the program declares for the stack's schedules (src/infra/scheduledJobs.ts: `<prefix>-svcops-<kind>`). */
const CRONJOBS = ['svc-svcops-backup', 'svc-svcops-upgrade', 'svc-svcops-live-upgrade']

suite(`the Kubernetes platform on ${STANDIN ? 'the stand-ins' : 'a real cluster'}${reason ? ` (skipped: ${reason})` : ''}`, () => {
  const work = mkdtempSync(join(tmpdir(), 'svcops-e2e-'))
  const stackFile = join(work, 'stacks', 'Pulumi.e2e.yaml')
  const context = STANDIN ? 'standin' : (CONTEXT ?? 'kind-svcops-e2e')
  const runsDir = join(work, 'runs')
  const env: Record<string, string> = {
    PULUMI_BACKEND_URL: `file://${join(work, 'state')}`,
    PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
    SVCOPS_STACKS_DIR: join(work, 'stacks'),
    SVCOPS_RUNS_DIR: runsDir,
    SVCOPS_MANAGER_PASSWORD: MANAGER_PASSWORD,
    SVCOPS_E2E_DB_PASSWORD: DB_PASSWORD,
  }
  let api: KubeApiStandin | undefined
  const pulumi = (args: string[], input?: string, check = true) =>
    runCommand(local, ['pulumi', ...args], {
      cwd: work,
      check,
      env: { ...env, PATH: env.PATH ?? process.env.PATH ?? '' },
      timeoutMs: 1_500_000,
      ...(input ? { input } : {}),
    })
  const kubectl = (args: string[], options: { check?: boolean; input?: string } = {}) =>
    runCommand(local, ['kubectl', '--context', context, '--namespace', NAMESPACE, ...args], {
      timeoutMs: 900_000,
      ...(env.KUBECONFIG ? { env: { KUBECONFIG: env.KUBECONFIG } } : {}),
      ...options,
    })
  const kube = () =>
    new KubernetesDriver({
      namespace: NAMESPACE,
      deployment: 'svc-recording',
      container: 'recording-service',
      port: 8080,
      context,
      ...(api ? { kubeconfig: api.kubeconfig } : {}),
    })
  let forward: ChildProcess | undefined
  /**
   * What `svcops upgrade recording --to 2.0.0` says when it stops at its preflight, before its first
   * stop: on a real cluster the CLI's answer (exit 1); on the stand-in, where no database holds the
   * run lock the run takes first, the Kubernetes platform's same preflight in this process.
   */
  const preflightRefusal = async (): Promise<string> => {
    if (!STANDIN) {
      const run = await runSvcops(['upgrade', 'recording', '--env', 'e2e', '--to', '2.0.0', '--yes'], { cwd: work, env })
      expect(run.code, run.stderr).toBe(1)
      return run.stderr
    }
    const before = { ...process.env }
    Object.assign(process.env, env)
    try {
      const stack = loadEnvironmentFile(stackFile, 'e2e')
      const platform = openKubernetesPlatform(stack, { ...settingsFor(stack, stack.recording!), healthTimeoutMs: 120_000 })
      await platform.checkPreflight()
      return ''
    } catch (error) {
      return errorMessage(error)
    } finally {
      process.env = before
    }
  }

  /** Builds an image and puts it where the cluster finds it (kind's node, or the registry). */
  const publish = async (image: Promise<string>) => {
    const ref = await image
    if (CONTEXT) await runCommand(local, ['docker', 'push', ref], { timeoutMs: 600_000 })
    else await runCommand(local, ['kind', 'load', 'docker-image', ref, '--name', 'svcops-e2e'], { timeoutMs: 600_000 })
  }

  /** The stand-ins in place of the cluster and the Pulumi CLI: the API server, and `pulumi` first on PATH. */
  const startStandins = async () => {
    api = await startKubeApiStandin({ namespace: NAMESPACE, preexisting: false, pods: [] }, context)
    const recorder = createPulumiArgvRecorder({
      engine: { config: { 'svcops:databasePassword': DB_PASSWORD }, secretKeys: ['svcops:databasePassword'] },
    })
    recorder.answer('version', 'v3.259.0\n')
    recorder.answer('stack', JSON.stringify([{ name: 'e2e', current: true, updateInProgress: false }]))
    // This file runs alone in its process (vitest.cluster.config.ts): the commands it starts find them.
    process.env.KUBECONFIG = env.KUBECONFIG = api.kubeconfig
    process.env.PATH = env.PATH = `${recorder.binDir}:${process.env.PATH ?? ''}`
    return { host: '127.0.0.1', port: 5432 }
  }

  /** A real cluster (kind's, made here, or SVCOPS_E2E_CONTEXT's) with the suite's images and a database. */
  const startCluster = async () => {
    if (!CONTEXT) await runCommand(local, ['kind', 'create', 'cluster', '--name', 'svcops-e2e', '--wait', '300s'], { timeoutMs: 600_000 })
    const database = CONTEXT ? (process.env.SVCOPS_E2E_DATABASE ?? '') : await startDatabase()
    const [dbHost = '', dbPort = '5432'] = database.split(':')
    const managerUrl = `http://svc-manager.${NAMESPACE}.svc.cluster.local:8080`
    for (const version of ['1.5.0', '2.0.0'])
      await publish(
        buildRecordingImage(version, { registry: REGISTRY, jwksUrl: `${managerUrl}/.well-known/jwks.json`, issuer: managerUrl }),
      )
    for (const version of [LIVE_FROM, LIVE_TO])
      for (const component of LIVE_COMPONENTS) await publish(buildLiveImage(component, version, { registry: REGISTRY }))
    await publish(buildManagerImage({ registry: REGISTRY, tag: MANAGER_TAG, email: MANAGER_EMAIL, password: MANAGER_PASSWORD }))
    await publish(buildSvcopsImage({ registry: REGISTRY, tag: TAG }))
    return { host: dbHost, port: Number(dbPort) }
  }

  beforeAll(async () => {
    const database = STANDIN ? await startStandins() : await startCluster()
    const keysDir = join(work, 'keys')
    const key = await generateBackupKey({ name: 'svcops e2e' })
    mkdirSync(keysDir, { mode: 0o700 })
    writeFileSync(join(keysDir, BACKUP_KEY_FILES.recipient), key.publicKey)
    writeFileSync(join(keysDir, BACKUP_KEY_FILES.identity), key.privateKey, { mode: 0o600 })
    // svcops on this machine reads the keys where the stack names them, as the jobs do.
    if (!STANDIN)
      for (const file of Object.values(BACKUP_KEY_FILES)) {
        copyFileSync(join(keysDir, file), join(JOB_PATHS.backupKeys, file))
        chmodSync(join(JOB_PATHS.backupKeys, file), 0o600)
      }

    // A copy of the project: the program, its dependencies, and the laptop stack.
    for (const f of ['Pulumi.yaml', 'package.json', 'tsconfig.json', 'src']) cpSync(join(ROOT, f), join(work, f), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'))
    const doc = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.staging.yaml'), 'utf8')) as { config: Record<string, unknown> }
    makeLaptopStack(doc, {
      namespace: NAMESPACE,
      context,
      registry: REGISTRY,
      tag: TAG,
      managerVersion: MANAGER_TAG,
      database,
      // svcops reaches the in-cluster manager through a port-forward (started after `pulumi up`).
      managerUrl: `http://127.0.0.1:${MANAGER_PORT}`,
      managerEmail: MANAGER_EMAIL,
      liveVersion: LIVE_FROM,
      liveUpgrade: { to: LIVE_TO, acks: liveAcks() },
      backupDir: join(work, 'backups'),
    })
    mkdirSync(join(work, 'stacks'))
    writeFileSync(stackFile, toYaml(doc))

    // The runbook's order on a cluster where nothing exists (docs/deploy.md): the namespace, then
    // what the scheduled jobs mount, which the stack references and does not create, then `pulumi
    // up`, whose Namespace adopts the one made here (pulumi-kubernetes creates by POST, which
    // answers AlreadyExists: the program declares the Namespace through a provider that upserts).
    await kubectl(['create', 'namespace', NAMESPACE])
    // From an owner-only file (never argv): kubectl opens the file it is given, and /dev/stdin is no
    // file when stdin is the socket a Node child gets.
    const credentials = join(work, 'credentials.env')
    writeFileSync(
      credentials,
      `SVCOPS_MANAGER_PASSWORD=${MANAGER_PASSWORD}\nSVCOPS_E2E_DB_PASSWORD=${DB_PASSWORD}\nPULUMI_CONFIG_PASSPHRASE=${PASSPHRASE}\n`,
      { mode: 0o600 },
    )
    await kubectl(['create', 'secret', 'generic', JOB_OBJECTS.credentialsSecret, `--from-env-file=${credentials}`])
    await kubectl(['create', 'secret', 'generic', JOB_OBJECTS.backupKeysSecret, `--from-file=${keysDir}`])
    // The stand-in serves no OpenAPI document, which kubectl reads to validate a file: there the
    // claims go in unvalidated (the API checks nothing of them either).
    for (const claim of [JOB_OBJECTS.backupStoreClaim, JOB_OBJECTS.runsClaim])
      await kubectl(['apply', '-f', '-', ...(STANDIN ? ['--validate=false'] : [])], {
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
    const up = await pulumi(['up', '--stack', 'e2e', '--yes', '--non-interactive'], undefined, false)
    expect(up.code, up.stdout + up.stderr).toBe(0)
    if (STANDIN) return
    forward = spawn('kubectl', ['--context', context, '-n', NAMESPACE, 'port-forward', 'service/svc-manager', `${MANAGER_PORT}:8080`], {
      stdio: 'ignore',
    })
    await kubectl(['wait', '--for=condition=Available', 'deployment/svc-manager', '--timeout=300s'])
  })

  afterAll(async () => {
    if (reason) return
    forward?.kill()
    await api?.close()
    if (TARGET === 'kind') await runCommand(local, ['kind', 'delete', 'cluster', '--name', 'svcops-e2e'], { check: false })
    if (TARGET === 'kind') await runCommand(local, ['docker', 'rm', '-f', 'svcops-e2e-pg'], { check: false })
  })

  it('deploys every component ready, with the versions of the stack file', async () => {
    expect((await kube().readDeployment()).version).toBe('1.5.0')
    const pods = await kube().listPods()
    expect(pods.length).toBeGreaterThan(0)
    expect(pods.every((p) => p.version === '1.5.0' && p.ready)).toBe(true)
  })

  it("declares the namespace, the Secrets and claims the runbook made are left as they were, and the CronJobs are the program's", async () => {
    const namespace = await kubectl(['get', 'namespace', NAMESPACE, '-o', 'json'])
    expect((JSON.parse(namespace.stdout) as { metadata: { labels: Record<string, string> } }).metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'pulumi',
    })
    const secrets = await kubectl(['get', 'secrets', '-o', 'name'])
    expect(secrets.stdout).toContain(`secret/${JOB_OBJECTS.credentialsSecret}`)
    expect(secrets.stdout).toContain(`secret/${JOB_OBJECTS.backupKeysSecret}`)
    const cronjobs = await kubectl(['get', 'cronjobs', '-o', 'name'])
    expect(cronjobs.stdout.trim().split('\n').sort()).toEqual(CRONJOBS.map((c) => `cronjob.batch/${c}`).sort())
  })

  it('previews a version change as the driver tests expect it (and writes their fixture when asked)', async () => {
    const text = readFileSync(stackFile, 'utf8')
    writeFileSync(stackFile, text.replace("version: '1.5.0'", "version: '2.0.0'").replace('version: 1.5.0', 'version: 2.0.0'))
    const preview = await pulumi(['preview', '--stack', 'e2e', '--json', '--refresh', '--non-interactive'])
    writeFileSync(stackFile, text)
    const steps = (JSON.parse(preview.stdout) as { steps: { op: string; urn: string }[] }).steps
    // The Deployment, and the jobs' copy of the stack file (its ConfigMap holds the version too).
    expect(
      steps
        .filter((s) => s.op === 'update')
        .map((s) => s.urn)
        .sort(),
    ).toEqual([
      expect.stringMatching(/RecordingService\$kubernetes:apps\/v1:Deployment::svc-recording-deployment$/),
      expect.stringMatching(/kubernetes:core\/v1:ConfigMap::svc-svcops-stack/),
    ])
    expect(steps.find((s) => s.urn.includes('pulumi:providers:kubernetes'))?.urn).toMatch(/::pulumi:providers:kubernetes::kubernetes$/)
    if (process.env.SVCOPS_E2E_UPDATE_FIXTURES === '1' && !STANDIN)
      writeFileSync(join(ROOT, 'test/drivers/fixtures/preview-version-only.json'), preview.stdout)
  })

  it("reports an operator's kubectl edit of a field the program owns at the upgrade's preflight, naming the manager, and changes nothing; pulumi up would revert it", async () => {
    const replicas = async () =>
      (JSON.parse((await kubectl(['get', 'deployment', 'svc-recording', '-o', 'json'])).stdout) as { spec: { replicas: number } }).spec
        .replicas
    const declared = await replicas()
    // Twice: right after the create (the preview forces over the provider's create manager, so the
    // edit shows in the diff against the refreshed object), and after an update (the preview's
    // dry-run apply, without the take-over, conflicts with the edit).
    for (const round of ['after the create', 'after an update']) {
      // What `kubectl edit` sends: a patch under the field manager kubectl-edit.
      await kubectl([
        'patch',
        'deployment',
        'svc-recording',
        '--field-manager',
        'kubectl-edit',
        '-p',
        JSON.stringify({ spec: { replicas: declared + 1 } }),
      ])
      expect(await preflightRefusal(), round).toContain(
        `pulumi preview of stack 'e2e': field spec.replicas of Deployment ${NAMESPACE}/svc-recording was changed outside svcops (by manager kubectl-edit); the run would revert it. Nothing was changed.`,
      )
      expect(await replicas(), round).toBe(declared + 1)
      // pulumi-kubernetes' up takes kubectl-edit's fields over (await.go fixCSAFieldManagers) and puts the program's value back.
      const up = await pulumi(['up', '--stack', 'e2e', '--yes', '--refresh', '--non-interactive'], undefined, false)
      expect(up.code, up.stdout + up.stderr).toBe(0)
      expect(await replicas(), round).toBe(declared)
    }
  })

  it("lets the recording service's pods reach the manager's for its signing keys (kind v0.24+ enforces NetworkPolicy), and nothing else new", async () => {
    type Rule = { to?: unknown[]; ports?: { protocol: string; port: number }[] }
    const policy = JSON.parse((await kubectl(['get', 'networkpolicy', 'svc-recording', '-o', 'json'])).stdout) as {
      spec: { egress: Rule[] }
    }
    expect(policy.spec.egress).toContainEqual({
      to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'manager' } } }],
      ports: [{ protocol: 'TCP', port: 8080 }],
    })
    // The manager's own policy lets them in: its port from anywhere in and beyond the namespace.
    const manager = JSON.parse((await kubectl(['get', 'networkpolicy', 'svc-manager', '-o', 'json'])).stdout) as {
      spec: { ingress: Rule[] }
    }
    expect(manager.spec.ingress).toEqual([{ ports: [{ protocol: 'TCP', port: 8080 }] }])
  })

  it("gives the jobs the manager's Service URL where the stack's manager.url is this machine's port-forward, and svcops in the job takes it", async () => {
    const serviceUrl = `http://svc-manager.${NAMESPACE}.svc.cluster.local:8080`
    for (const name of CRONJOBS) {
      const cron = JSON.parse((await kubectl(['get', 'cronjob', name, '-o', 'json'])).stdout) as {
        spec: { jobTemplate: { spec: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } } } }
      }
      const env = cron.spec.jobTemplate.spec.template.spec.containers[0]?.env ?? []
      expect(env.find((e) => e.name === 'SVCOPS_MANAGER_URL')?.value, name).toBe(serviceUrl)
    }
    // The stack file the job reads (the same bytes) with the job's variable: svcops calls the Service.
    const before = process.env.SVCOPS_MANAGER_URL
    process.env.SVCOPS_MANAGER_URL = serviceUrl
    try {
      expect(loadEnvironmentFile(stackFile).manager?.url).toBe(serviceUrl)
    } finally {
      if (before === undefined) delete process.env.SVCOPS_MANAGER_URL
      else process.env.SVCOPS_MANAGER_URL = before
    }
    expect(loadEnvironmentFile(stackFile).manager?.url).toBe(`http://127.0.0.1:${MANAGER_PORT}`)
  })

  onCluster('upgrades the Deployment to 2.0.0 with a verified backup, and the stack file holds 2.0.0 afterwards', async () => {
    const run = await runSvcops(['upgrade', 'recording', '--env', 'e2e', '--to', '2.0.0', '--yes', '--json'], { cwd: work, env })
    expect(run.code, run.stderr).toBe(0)
    expect((await kube().readDeployment()).version).toBe('2.0.0')
    expect((await kube().listPods()).every((p) => p.version === '2.0.0' && p.ready)).toBe(true)
    expect(readStackVersion(stackFile, 'svcops:recording.version')).toBe('2.0.0')
  })

  onCluster(
    'rolls back to 1.5.0 the same way, the database restored because 2.0.0 migrated it, and the stack file holds 1.5.0',
    async () => {
      const run = await runSvcops(['rollback', 'recording', '--env', 'e2e', '--yes', '--json'], { cwd: work, env })
      expect(run.code, run.stderr).toBe(0)
      expect((await kube().readDeployment()).version).toBe('1.5.0')
      expect(readStackVersion(stackFile, 'svcops:recording.version')).toBe('1.5.0')
      const verify = await runSvcops(['verify', 'recording', '--env', 'e2e', '--json'], { cwd: work, env })
      expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true })
    },
  )

  onCluster('upgrades the live system through the stack file and pulumi up, and rolls it back the same way', async () => {
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

  it('refuses to start while the stack has a change besides the version, listing it; the stack file put back after', async () => {
    const text = readFileSync(stackFile, 'utf8')
    const changed = parseYaml(text) as { config: { 'svcops:deploy': { recording: { resources: { requests: { cpu: string } } } } } }
    changed.config['svcops:deploy'].recording.resources.requests.cpu = '60m'
    writeFileSync(stackFile, toYaml(changed))
    try {
      // The requests are shared by every component of the laptop stack: each Deployment's is listed.
      const refusal = await preflightRefusal()
      expect(refusal).toContain("besides the recording service's version, which an upgrade does not apply: ")
      expect(refusal).toContain(
        'update kubernetes:apps/v1:Deployment svc-recording-deployment (spec.template.spec.containers[0].resources.requests.cpu)',
      )
    } finally {
      // The next cases start from the stack as deployed, or every later upgrade is refused the same way.
      writeFileSync(stackFile, text)
    }
  })

  onCluster('resumes an upgrade killed after its stop, to 2.0.0, and rolls it back', async () => {
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

  onCluster('runs each scheduled job once to completion, as its CronJob starts it', async () => {
    for (const job of CRONJOBS) {
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

  // On the stand-in: the in-test engine's destroy (test/infra/engine/destroy.ts, pulumi's
  // `--exclude-protected` and `retainOnDelete` rules) sends pulumi-kubernetes' DELETEs to the API stand-in.
  it('destroys the stack and leaves the recordings claim in the cluster', async () => {
    await pulumi(['destroy', '--stack', 'e2e', '--yes', '--non-interactive', '--exclude-protected'])
    const claims = await kubectl(['get', 'persistentvolumeclaims', '-o', 'name'])
    expect(claims.stdout).toContain('persistentvolumeclaim/svc-recording-recordings')
    const deployments = await kubectl(['get', 'deployments', '-o', 'name'])
    expect(deployments.stdout.trim()).toBe('')
  })
})
