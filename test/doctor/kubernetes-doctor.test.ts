/**
 * `svcops doctor recording --env prod` on the Kubernetes platform: one failing state per cause, as
 * the API reference shapes a pod in it (`state.waiting.reason` and `message`,
 * `lastState.terminated.reason`, `restartCount`), a Secret and a claim, and the doctor names that
 * cause and no other, with its evidence and the fix; a healthy Deployment passes every check. The
 * API server is the in-test STAND-IN (test/support/kube-api-standin.ts); the database is a real
 * throwaway PostgreSQL, reached with the credentials the Secret gives the pods.
 */
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { doctorRecording } from '../../playbooks/doctor.ts'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import type { Environment } from '../../src/config/schema.ts'
import { startPostgres, type PostgresCluster } from '../../src/lab/lab-postgres.ts'
import { ROOT, runSvcops } from '../support/cli.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import { kindOfResource } from '../support/kube-kinds.ts'
import type { Json } from '../support/kube-fields.ts'
import type { StandinPod } from '../support/kube-standin-summary.ts'

const PASSWORD = 'recorder-Pa55-for-the-cluster-doctor-3c1f'
const SECRETS = kindOfResource('', 'v1', 'secrets')!
const CLAIMS = kindOfResource('', 'v1', 'persistentvolumeclaims')!
const LISTENING = ['2026-11-25T02:30:01Z INFO recording service 2.0.0 listening on :8080']

let db: PostgresCluster
let api: KubeApiStandin
let env: Environment
let savedKubeconfig: string | undefined

const healthyPods = (): StandinPod[] => [
  { name: 'svc-recording-5f7c-a1', version: '2.0.0', log: LISTENING },
  { name: 'svc-recording-5f7c-b2', version: '2.0.0', log: LISTENING },
]

/** The database Secret as the program writes it, answered as the API does (`data`, base64). */
function putSecret(values: Record<string, string>): void {
  api.store.remove(SECRETS, 'svc-prod', 'svc-recording-database')
  const data = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')]))
  api.store.create(
    SECRETS,
    'svc-prod',
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'svc-recording-database', namespace: 'svc-prod' }, type: 'Opaque', data },
    { manager: 'pulumi-kubernetes-0a1b2c3d' },
  )
}

function goodSecret(): Record<string, string> {
  return {
    SVC_DB_HOST: '127.0.0.1',
    SVC_DB_PORT: String(db.port),
    SVC_DB_NAME: 'recordings',
    SVC_DB_USER: 'recorder',
    SVC_DB_PASSWORD: PASSWORD,
  }
}

/** The recordings claim, with the status the API server and the provisioner give it. */
function putClaim(status: Record<string, Json>): void {
  api.store.remove(CLAIMS, 'svc-prod', 'svc-recording-recordings')
  api.store.create(
    CLAIMS,
    'svc-prod',
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'svc-recording-recordings', namespace: 'svc-prod' },
      spec: { accessModes: ['ReadWriteMany'], storageClassName: 'shared-nfs', resources: { requests: { storage: '2Ti' } } },
      status,
    },
    { manager: 'pulumi-kubernetes-0a1b2c3d' },
  )
}
const BOUND = { phase: 'Bound', accessModes: ['ReadWriteMany'], capacity: { storage: '2Ti' } }

beforeAll(async () => {
  db = await startPostgres({ fsync: false })
  await db.createDatabase('recordings', { user: 'recorder', password: PASSWORD })
  const client = new pg.Client(db.clientConfig('recordings', 'recorder', PASSWORD))
  await client.connect()
  await client.query('CREATE TABLE recordings (id bigint PRIMARY KEY, title text)')
  await client.end()
  api = await startKubeApiStandin({ version: '2.0.0', replicas: 2, pods: healthyPods() }, 'prod-cluster')
  putSecret(goodSecret())
  putClaim(BOUND)
  savedKubeconfig = process.env.KUBECONFIG
  process.env.KUBECONFIG = api.kubeconfig
  env = loadEnvironmentFile(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'prod')
}, 120_000)

afterAll(async () => {
  if (savedKubeconfig === undefined) delete process.env.KUBECONFIG
  else process.env.KUBECONFIG = savedKubeconfig
  await api?.close()
  await db?.stop()
})

/** Runs the doctor with the cluster changed by `change`, then puts the healthy state back. */
async function diagnoseWith(change: () => void | Promise<void>, undo?: () => void | Promise<void>) {
  await change()
  try {
    return await doctorRecording(env)
  } finally {
    api.state.pods = healthyPods()
    putSecret(goodSecret())
    putClaim(BOUND)
    await undo?.()
  }
}

describe('svcops doctor recording on the Kubernetes platform', () => {
  it('finds nothing on a healthy Deployment, checks every cluster cause, and exits 0', async () => {
    const d = await doctorRecording(env)
    expect(d.findings).toEqual([])
    expect(d.checks.map((c) => c.cause)).toEqual([
      'config-syntax',
      'database-access',
      'image-pull',
      'crash-loop',
      'oom-killed',
      'pod-logs',
      'schema-change-permission',
      'storage-claim',
    ])
    expect(d.checks.filter((c) => c.status !== 'ok')).toEqual([])
    expect(d.checks.every((c) => c.host === 'svc-recording')).toBe(true)
    const run = await runSvcops(['doctor', 'recording', '--env', 'prod'], { env: { KUBECONFIG: api.kubeconfig } })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('No problem found (8 checks passed).')
    // Read-only: nothing was written to the cluster.
    expect(api.requests.filter((r) => r.method !== 'GET')).toEqual([])
  })

  it('config-syntax: a Secret whose port is not a number, naming the variable and never the password', async () => {
    const d = await diagnoseWith(() => putSecret({ ...goodSecret(), SVC_DB_PORT: 'five-four-three-two' }))
    expect(d.findings.map((f) => f.cause)).toEqual(['config-syntax'])
    expect(d.findings[0]?.evidence).toEqual([
      'secret svc-recording-database: SVC_DB_PORT: "five-four-three-two" is not a port (expected 1-65535)',
    ])
    expect(d.findings[0]?.remedy).toContain('svcops:recording.database')
    expect(JSON.stringify(d)).not.toContain(PASSWORD)
  })

  it('database-access: the password the pods are given is refused by the database, with the pods’ own log line beside it', async () => {
    const d = await diagnoseWith(() => {
      putSecret({ ...goodSecret(), SVC_DB_PASSWORD: 'not-the-recorder-password-77a0' })
      api.state.pods = [
        {
          name: 'svc-recording-5f7c-a1',
          version: '2.0.0',
          log: ['2026-11-25T02:31:00Z ERROR database: password authentication failed for user "recorder"'],
        },
      ]
    })
    // The log line is also the pod-logs cause's evidence; the database cause names the refusal.
    expect(d.findings.map((f) => f.cause)).toEqual(['database-access', 'pod-logs'])
    const access = d.findings[0]!
    expect(access.evidence[0]).toMatch(/^from svcops: password authentication failed for user "recorder"/)
    expect(access.evidence[1]).toContain('svc-recording-5f7c-a1: 2026-11-25T02:31:00Z ERROR database: password authentication failed')
    expect(access.remedy).toContain('pulumi config set --secret svcops:databasePassword')
    expect(d.checks.find((c) => c.cause === 'schema-change-permission')?.status).toBe('skipped')
  })

  it('schema-change-permission: a table the Secret’s role does not own', async () => {
    const d = await diagnoseWith(
      () => db.query('CREATE TABLE public.foreign_owned (id int)', [], 'recordings').then(() => undefined),
      () => db.query('DROP TABLE public.foreign_owned', [], 'recordings').then(() => undefined),
    )
    expect(d.findings.map((f) => f.cause)).toEqual(['schema-change-permission'])
    expect(d.findings[0]?.evidence).toEqual(['table public.foreign_owned: owner postgres, recorder is not a member of it'])
  })

  it('storage-claim: the recordings claim Pending, with its class and access mode', async () => {
    const d = await diagnoseWith(() => putClaim({ phase: 'Pending' }))
    expect(d.findings.map((f) => f.cause)).toEqual(['storage-claim'])
    expect(d.findings[0]?.summary).toBe(
      'The recordings claim svc-recording-recordings is Pending, not Bound: no pod that mounts it can start.',
    )
    expect(d.findings[0]?.evidence).toEqual([
      'claim svc-recording-recordings: phase Pending, ReadWriteMany, class shared-nfs, asks 2Ti, has nothing',
    ])
  })

  it('pod-logs: an error record in a pod’s last lines, judged by its level field only', async () => {
    const d = await diagnoseWith(() => {
      api.state.pods = [
        {
          name: 'svc-recording-5f7c-a1',
          version: '2.0.0',
          log: [
            ...LISTENING,
            '2026-11-25T02:40:00Z INFO created recording "cam ERROR 3"',
            '2026-11-25T02:41:00Z FATAL storage /var/lib/recordings is not writable',
          ],
        },
      ]
    })
    expect(d.findings.map((f) => f.cause)).toEqual(['pod-logs'])
    expect(d.findings[0]?.evidence).toEqual([
      'svc-recording-5f7c-a1: 2026-11-25T02:41:00Z FATAL storage /var/lib/recordings is not writable',
    ])
  })

  it('image-pull: a pod waiting in ImagePullBackOff, with the kubelet’s message, exit 5 and --json from the CLI', async () => {
    const pulling: StandinPod = {
      name: 'svc-recording-6d9e-a1',
      version: '2.1.0',
      phase: 'Pending',
      ready: false,
      waiting: 'ImagePullBackOff',
      waitingMessage: 'Back-off pulling image "registry.example.internal/svc/recording:2.1.0"',
    }
    const d = await diagnoseWith(() => {
      api.state.pods = [pulling]
    })
    expect(d.findings.map((f) => f.cause)).toEqual(['image-pull'])
    expect(d.findings[0]?.evidence).toEqual([
      'pod svc-recording-6d9e-a1: waiting ImagePullBackOff: Back-off pulling image "registry.example.internal/svc/recording:2.1.0"',
    ])
    api.state.pods = [pulling]
    try {
      const run = await runSvcops(['doctor', 'recording', '--env', 'prod', '--json'], { env: { KUBECONFIG: api.kubeconfig } })
      expect(run.code, run.stderr).toBe(5)
      const answer = JSON.parse(run.stdout) as { ok: boolean; findings: { cause: string; host: string; remedy: string }[] }
      expect(answer.ok).toBe(false)
      expect(answer.findings.map((f) => [f.cause, f.host])).toEqual([['image-pull', 'svc-recording']])
      expect(answer.findings[0]?.remedy).toContain('svcops:deploy.imagePullSecret')
    } finally {
      api.state.pods = healthyPods()
    }
  })

  it('crash-loop: a pod in CrashLoopBackOff, with its restarts, how it last ended and its log before the restart', async () => {
    const d = await diagnoseWith(() => {
      api.state.pods = [
        {
          name: 'svc-recording-5f7c-a1',
          version: '2.0.0',
          phase: 'Running',
          ready: false,
          restarts: 7,
          waiting: 'CrashLoopBackOff',
          waitingMessage: 'back-off 5m0s restarting failed container=recording-service',
          lastState: { reason: 'Error', exitCode: 1, finishedAt: '2026-11-25T02:50:00Z' },
          previousLog: ['2026-11-25T02:49:59Z INFO recording service 2.0.0 starting'],
          log: [],
        },
      ]
    })
    expect(d.findings.map((f) => f.cause)).toEqual(['crash-loop'])
    expect(d.findings[0]?.evidence).toEqual([
      'pod svc-recording-5f7c-a1: restartCount 7, last ended Error with exit code 1 at 2026-11-25T02:50:00.000Z',
      'svc-recording-5f7c-a1 (before its restart): 2026-11-25T02:49:59Z INFO recording service 2.0.0 starting',
    ])
    expect(d.findings[0]?.remedy).toContain('kubectl -n svc-prod logs svc-recording-5f7c-a1 -c recording-service --previous')
  })

  it('oom-killed: a container the OOM killer ended, with its memory limit, and not as a crash loop', async () => {
    const d = await diagnoseWith(() => {
      api.state.pods = [
        {
          name: 'svc-recording-5f7c-a1',
          version: '2.0.0',
          restarts: 4,
          memoryLimit: '2Gi',
          lastState: { reason: 'OOMKilled', exitCode: 137, finishedAt: '2026-11-25T03:10:00Z' },
          previousLog: LISTENING,
          log: LISTENING,
        },
      ]
    })
    expect(d.findings.map((f) => f.cause)).toEqual(['oom-killed'])
    expect(d.findings[0]?.evidence).toEqual([
      'pod svc-recording-5f7c-a1: OOMKilled (exit code 137 at 2026-11-25T03:10:00.000Z), restartCount 4, memory limit 2Gi',
    ])
    expect(d.findings[0]?.remedy).toContain('svcops:deploy.recording.resources.limits.memory')
  })
})
