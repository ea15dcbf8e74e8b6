/**
 * `svcops rehearse recording` on the Kubernetes platform: release V's image run as a Job in the
 * namespace against a copy of production's database (real PostgreSQL, real pg_dump/pg_restore), no
 * Service selecting its pod; its migrations timed, the upgrade's content checks run on it through a
 * port-forward, the copy rolled back, the Job and the copy removed, also when interrupted. The API
 * server is the in-test STAND-IN (test/support/kube-api-standin.ts) holding production's Deployment
 * and database Secret as the Pulumi program renders them; a Job written to it is run by
 * test/support/job-kubelet.ts as the lab's recording service of the image's release, as a process.
 */
import type { V1Job } from '@kubernetes/client-node'
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSecret } from '../../src/config/secrets.ts'
import { LAB_RECORDING_PRODUCT } from '../../src/lab/hosts-lab.ts'
import { buildRecordingPackages } from '../../src/lab/recording/index.ts'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { predictionOfRun } from '../../playbooks/rehearse.ts'
import { ROOT, crashFailpointEnv, runSvcops } from '../support/cli.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import { kindOfResource } from '../support/kube-kinds.ts'
import { labServiceConfig, startJobKubelet, type JobKubelet } from '../support/job-kubelet.ts'
import { buildStack, objectNamed } from '../infra/helpers.ts'
import { runCliInProcess, startUpgradeLab, type UpgradeLab } from './fixture.ts'
import { REHEARSAL_DATABASE } from './rehearsal-host.ts'

const NS = 'svc-prod'
const JOB = 'svc-recording-rehearsal'
const CLAIM = 'svc-recordings-rehearsal-copy'
const jobs = kindOfResource('batch', 'v1', 'jobs')!
const deployments = kindOfResource('apps', 'v1', 'deployments')!

let lab: UpgradeLab
let api: KubeApiStandin
let kubelet: JobKubelet
let stackFile: string

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '2.0.0', recordings: 4 })
  const env = lab.env()
  const rec = env.recording!
  api = await startKubeApiStandin(
    { version: '2.0.0', replicas: 1, pods: [{ name: 'svc-recording-5f6d7c-a1', version: '2.0.0', log: ['INFO listening on :8080'] }] },
    'lab-cluster',
  )
  // Production as the program renders it: the Deployment (on the lab's release) and its database Secret (the lab's server).
  const prod = await buildStack('prod')
  const deployment = structuredClone(objectNamed(prod, 'Deployment', 'svc-recording').unwrapped) as {
    spec: { template: { spec: { containers: Array<{ name: string; image: string }> } } }
  }
  for (const c of deployment.spec.template.spec.containers) c.image = c.image.replace(/:[^:/]+$/, ':2.0.0')
  expect(api.store.create(deployments, NS, deployment as never, { manager: 'pulumi-kubernetes' }).code).toBe(201)
  const secrets = kindOfResource('', 'v1', 'secrets')!
  const db = rec.database
  const stringData = {
    SVC_DB_HOST: db.host,
    SVC_DB_PORT: String(db.port),
    SVC_DB_NAME: db.name,
    SVC_DB_USER: db.user,
    SVC_DB_PASSWORD: readSecret(db.password!, 'recording.database.password'),
  }
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'svc-recording-database', namespace: NS }, stringData }
  expect(api.store.create(secrets, NS, secret as never, { manager: 'pulumi-kubernetes' }).code).toBe(201)
  // The claim the stack names for rehearsals: a copy of the recordings storage, as a site's snapshot.
  const copy = mkdtempSync(join(tmpdir(), 'svcops-rehearsal-claim-'))
  cpSync(join(rec.hosts[0]!.root!, 'srv/svc/recordings'), copy, { recursive: true, dereference: true })
  kubelet = startJobKubelet(api, {
    packages: await buildRecordingPackages(rec.packageDir!, LAB_RECORDING_PRODUCT),
    product: LAB_RECORDING_PRODUCT,
    baseConfig: labServiceConfig(rec.hosts[0]!.root!, LAB_RECORDING_PRODUCT),
    claims: { [CLAIM]: copy },
  })
  // The lab's stack on the kubernetes platform: no hosts, the Deployment from the prod stack's svcops:deploy.
  const doc = parseYaml(readFileSync(lab.envFile, 'utf8')) as { config: Record<string, Record<string, unknown>> }
  const prodStack = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')) as {
    config: Record<string, Record<string, unknown>>
  }
  const { hosts: _hosts, checks: _checks, ...recording } = doc.config['svcops:recording'] ?? {}
  doc.config['svcops:recording'] = {
    ...recording,
    platform: 'kubernetes',
    healthTimeoutSeconds: 30,
    rehearsal: { database: REHEARSAL_DATABASE, claim: CLAIM },
  }
  const { jobs: _j, upgradeSchedule: _u, backupSchedule: _b, ...deploy } = prodStack.config['svcops:deploy'] ?? {}
  doc.config['svcops:deploy'] = deploy
  doc.config['kubernetes:context'] = 'lab-cluster' as never
  stackFile = join(lab.dir, 'stacks', 'Pulumi.cluster.yaml')
  writeFileSync(stackFile, toYaml(doc))
}, 240_000)

afterAll(async () => {
  await kubelet?.close()
  await api?.close()
  await lab?.stop()
})

/** Production as a user checks it: the Deployment as stored and as the summary runs it, the schema fingerprint, every recording. */
async function production() {
  return {
    deployment: JSON.stringify(api.store.get(deployments, NS, 'svc-recording')),
    running: api.state.pods.map((p) => `${p.name} ${p.version}`),
    fingerprint: await lab.fingerprint(),
    ids: (await lab.listAll()).map((r) => String(r.id)).sort(),
  }
}

function rehearse(to: string) {
  return runCliInProcess(['--stack-file', stackFile, 'rehearse', 'recording', '--to', to, '--window', '30m'], {
    KUBECONFIG: api.kubeconfig,
  })
}

async function scratchExists(): Promise<boolean> {
  const { connectDatabase, databaseTarget } = await import('../../src/drivers/postgres.ts')
  const c = await connectDatabase(databaseTarget(lab.env().recording!.database))
  try {
    return ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [REHEARSAL_DATABASE])).rowCount ?? 0) > 0
  } finally {
    await c.end()
  }
}

function lastRun(): Journal {
  return Journal.open(listRuns(lab.runsDir)[0]?.id ?? '')
}

describe('a rehearsal on Kubernetes: the target image as a Job against a copy', () => {
  it('passes with a prediction: the copy migrated by 2.1.0 and rolled back, checked through a port-forward; production unchanged, no Job left', async () => {
    const before = await production()
    const run = await rehearse('2.1.0')
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/Rehearsal of 2\.0\.0 -> 2\.1\.0 on a copy .*: FITS/)
    const journal = lastRun()
    expect(journal.run.params.hosts).toEqual([JOB])
    const p = predictionOfRun(journal)
    expect(p).toMatchObject({ verdict: 'fits', from: '2.0.0', to: '2.1.0', schemaChanged: true, batches: [['svc-recording']] })
    expect(p?.measures.firstStartMs).toBeGreaterThan(0)
    expect(p?.measures.rollbackRestoreMs).toBeGreaterThan(0)
    // The upgrade's content checks ran on the Job's pod: after the target's start and after the rollback.
    expect(journal.entries().filter((e) => e.step === 'verify-host' && e.status === 'ok' && e.host === JOB)).toHaveLength(2)
    // Each start was a Job of the release's image against the scratch database, on the copy of the recordings, no Service selecting it.
    const written = kubelet.created.map((j) => (j as V1Job).spec?.template)
    const images = written.map((pod) => pod?.spec?.containers[0]?.image)
    expect(images).toEqual([
      'registry.example.internal/svc/recording:2.0.0',
      'registry.example.internal/svc/recording:2.1.0',
      'registry.example.internal/svc/recording:2.1.0',
      'registry.example.internal/svc/recording:2.0.0',
    ])
    for (const pod of written) {
      expect(pod?.metadata?.labels?.['app.kubernetes.io/name']).toBe('recording-rehearsal')
      expect(pod?.spec?.containers[0]?.env).toContainEqual({ name: 'SVC_DB_NAME', value: REHEARSAL_DATABASE })
      expect(pod?.spec?.volumes).toContainEqual({ name: 'recordings', persistentVolumeClaim: { claimName: CLAIM } })
      expect(pod?.spec?.restartPolicy).toBe('Never')
    }
    expect(api.requests.some((r) => r.path === `/api/v1/namespaces/${NS}/pods/${JOB}-00002/portforward`)).toBe(true)
    // Nothing of production was written; nothing of the rehearsal is left.
    expect(api.requests.filter((r) => r.method !== 'GET' && r.path.includes('/deployments'))).toEqual([])
    expect(api.store.list(jobs, NS)).toEqual([])
    expect(kubelet.running()).toBe(0)
    expect(await scratchExists()).toBe(false)
    expect(await production()).toEqual(before)
  })

  it('catches the failing migration of 2.1.0+migfail with its cause and the pod\u2019s log lines; production unchanged, no Job left', async () => {
    const before = await production()
    // A policy of the site that limits every pod's egress (the stand-in does not enforce it): named before the Job starts.
    const policies = kindOfResource('networking.k8s.io', 'v1', 'networkpolicies')!
    const deny = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'default-deny', namespace: NS },
      spec: { podSelector: {}, policyTypes: ['Egress'] },
    }
    expect(api.store.create(policies, NS, deny as never, { manager: 'kubectl' }).code).toBe(201)
    const run = await rehearse('2.1.0+migfail').finally(() => api.store.remove(policies, NS, 'default-deny'))
    expect(run.code).toBe(1)
    expect(run.stdout + run.stderr).toContain("NetworkPolicy default-deny selects the rehearsal's pod and limits its egress")
    const p = predictionOfRun(lastRun())
    expect(p?.verdict).toBe('failed')
    expect(p?.cause).toMatch(/rehearsal Job svc-recording-rehearsal/)
    expect(p?.logLines?.join('\n')).toContain('FATAL migration to schema 3 failed and was rolled back')
    expect(run.stdout + run.stderr).toContain('migration to schema 3 failed')
    expect(api.store.list(jobs, NS)).toEqual([])
    expect(kubelet.running()).toBe(0)
    expect(await scratchExists()).toBe(false)
    expect(await production()).toEqual(before)
  })

  it('SIGINT while the Job runs: exit 130, the Job and its pod deleted, the copy dropped, production unchanged', async () => {
    const before = await production()
    const made = kubelet.created.length
    const run = await runSvcops(['--stack-file', stackFile, 'rehearse', 'recording', '--to', '2.1.0'], {
      env: { SVCOPS_RUNS_DIR: lab.runsDir, KUBECONFIG: api.kubeconfig, ...crashFailpointEnv(`wait-healthy@${JOB}`, 'SIGINT') },
    })
    expect(run.code, run.stderr).toBe(130)
    expect(lastRun().run.phase).toBe('interrupted')
    expect(kubelet.created.length).toBe(made + 1) // interrupted while its first Job waited to be healthy
    expect(api.store.list(jobs, NS)).toEqual([])
    expect(kubelet.running()).toBe(0)
    expect(await scratchExists()).toBe(false)
    expect(await production()).toEqual(before)
  })

  it('refuses in one sentence, before anything is read or made, when this identity may not create the Job', async () => {
    api.state.denied = ['create jobs']
    try {
      const made = kubelet.created.length
      const run = await rehearse('2.1.0')
      expect(run.code).toBe(1)
      expect(run.stderr).toContain(
        "This identity lacks 1 right(s) in namespace svc-prod the rehearsal needs: create batch/jobs (the rehearsal's Job of the target release).",
      )
      expect(kubelet.created.length).toBe(made)
      expect(
        lastRun()
          .entries()
          .filter((e) => e.step === 'rehearsal-backup' || e.step === 'restore-copy'),
      ).toEqual([])
      expect(await scratchExists()).toBe(false)
    } finally {
      api.state.denied = []
    }
  })

  it("without a claim holding a copy of the recordings, its failure says the rehearsal's Job is not like production, and nothing is predicted", async () => {
    const text = readFileSync(stackFile, 'utf8')
    writeFileSync(stackFile, text.replace(`claim: ${CLAIM}`, ''))
    try {
      const before = await production()
      const run = await rehearse('2.1.0')
      // The lab's service lists no recording whose file it cannot read: the first content list fails, and says why.
      expect(run.code).toBe(1)
      expect(run.stderr).toContain(
        "not like production: the rehearsal's Job has its recordings on an empty directory (recording.rehearsal.claim names no copy of the recordings storage)",
      )
      expect(predictionOfRun(lastRun())?.rolloutMs).toBeUndefined()
      expect(api.store.list(jobs, NS)).toEqual([])
      expect(await production()).toEqual(before)
    } finally {
      writeFileSync(stackFile, text)
    }
  })
})
