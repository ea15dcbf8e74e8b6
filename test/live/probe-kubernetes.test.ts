/**
 * `svcops probe` on the Kubernetes platform (docs/contract.md, "Probe"): the recording service's
 * Deployment through the API and the seed's `GET /` and content list through its Service (a
 * port-forward the client library makes, to the lab's real recording service standing behind the
 * pod's port, on the lab's PostgreSQL and manager); the live Deployments, then the seed's endpoint
 * of each instance by its UUID through the controller's Service and the declared checks through the
 * pod proxy. The API server is the in-test STAND-IN (test/support/kube-api-standin.ts), the
 * controller's Service the seed-only STAND-IN (test/support/live-controller-service.ts). With one
 * assumption broken the probe names exactly that one, with the key to set; it writes nothing.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LIVE_COMPONENTS } from '../../src/live/layout.ts'
import { ROOT, runSvcopsInProcess } from '../support/cli.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import { liveDeployment, startControllerServiceStandin, type ControllerServiceStandin } from '../support/live-controller-service.ts'
import { startUpgradeLab, type UpgradeLab } from '../recording/fixture.ts'

let lab: UpgradeLab
let api: KubeApiStandin
let controller: ControllerServiceStandin
let stackFile: string
let doc: { config: Record<string, Record<string, unknown>> }

/** The lab's declared checks on this platform: the release's metric names and the connection metric, on every pod. */
const CHECKS = [
  { name: 'the metric names of its release', components: ['ingest', 'pipeline', 'control-panel'], metric: { releaseNames: true } },
  {
    name: 'reports itself connected',
    components: ['ingest', 'pipeline', 'control-panel'],
    metric: { name: '{product}_controller_connected', equals: 1 },
  },
]

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '2.0.0', recordings: 2 })
  api = await startKubeApiStandin({ others: LIVE_COMPONENTS.map((c) => liveDeployment(c, '6.2.0')) }, 'lab-cluster')
  controller = await startControllerServiceStandin(api)
  const project = join(lab.dir, 'project')
  mkdirSync(join(project, 'stacks'), { recursive: true })
  copyFileSync(join(ROOT, 'Pulumi.yaml'), join(project, 'Pulumi.yaml'))
  doc = parseYaml(readFileSync(lab.envFile, 'utf8')) as typeof doc
  const prod = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')) as typeof doc
  // The lab's hosts and its host checks (a command check: refused on Kubernetes, which has no host) stay behind.
  const { hosts: _hosts, checks: _checks, ...recording } = doc.config['svcops:recording'] ?? {}
  doc.config['svcops:recording'] = { ...recording, platform: 'kubernetes' }
  const deploy = prod.config['svcops:deploy'] as { live: { version: string } }
  deploy.live.version = '6.2.0'
  doc.config['svcops:deploy'] = deploy
  doc.config['kubernetes:context'] = 'lab-cluster' as never
  doc.config['svcops:live'] = { platform: 'kubernetes', controllerUrl: controller.url, uuids: controller.uuids, checks: CHECKS }
  stackFile = join(project, 'stacks', 'Pulumi.lab.yaml')
  writeFileSync(stackFile, toYaml(doc))
  // The recording service's pods are the lab's service: a port-forward to any pod reaches it.
  const service = new URL(lab.env().recording?.hosts[0]?.url ?? '')
  api.state.forwardTo = { host: service.hostname, port: Number(service.port) }
}, 240_000)

afterAll(async () => {
  await controller?.close()
  await api?.close()
  await lab?.stop()
})

interface Row {
  part: string
  where: string
  interface: string
  source: string
  holds: boolean | null
  evidence: string
  key?: string
}

/** Writes the stack's live section with `live` merged in. */
function setLive(live: Record<string, unknown>): void {
  writeFileSync(stackFile, toYaml({ ...doc, config: { ...doc.config, 'svcops:live': { ...doc.config['svcops:live'], ...live } } }))
}

async function probe(): Promise<{ code: number; rows: Row[]; stderr: string }> {
  const run = await runSvcopsInProcess(['probe', '--stack-file', stackFile, '--env', 'lab', '--json'], {
    env: { KUBECONFIG: api.kubeconfig, SVCOPS_RUNS_DIR: lab.runsDir },
  })
  return { code: run.code ?? -1, stderr: run.stderr, rows: (JSON.parse(run.stdout) as { rows: Row[] }).rows }
}

describe('svcops probe on Kubernetes', () => {
  it('every interface holds: the Deployments, the recording service through its Service, the seed endpoints by UUID and the declared checks (exit 0), writing nothing', async () => {
    const { code, rows, stderr } = await probe()
    expect(code, stderr).toBe(0)
    expect(rows.filter((r) => r.holds === false)).toEqual([])
    const shown = rows.map((r) => `${r.holds === undefined || r.holds === null ? '?' : r.holds ? '+' : '-'} ${r.where} ${r.interface}`)
    expect(shown).toEqual(
      expect.arrayContaining([
        '+ svc-recording the Deployment svc-prod/svc-recording',
        '+ svc-recording GET /',
        '+ svc-recording GET /api/v1/content?limit=N',
        '+ system-controller the Deployment svc-prod/svc-system-controller',
        '? system-controller a check of the controller itself',
        '+ ingest GET /api/v2/ingests/{uuid}?expand=true',
        '+ pipeline GET /api/v2/pipelines/{uuid}?expand=true',
        '+ control-panel GET /api/v2/controlpanels/{uuid}',
        '+ ingest the metric names of its release',
        '+ control-panel reports itself connected',
      ]),
    )
    expect(rows.find((r) => r.where === 'ingest' && r.source === 'seed')?.evidence).toContain('svc_ingest_source_dropped_audio_frames')
    // The seed's endpoints were asked on the running release's prefix, by each instance's UUID.
    expect(controller.requests).toContain(`GET /api/v2/pipelines/${controller.uuids.pipeline ?? ''}?expand=true`)
    // Read only: nothing but GETs reached the API (the port-forward is a GET upgraded to a WebSocket).
    expect(api.requests.filter((r) => r.method !== 'GET')).toEqual([])
  })

  it('with one assumption broken (the connection metric under another name) names exactly that one on each instance, with the key to set (exit 5)', async () => {
    setLive({
      checks: CHECKS.map((c) => (c.name === 'reports itself connected' ? { ...c, metric: { name: '{product}_link_up', equals: 1 } } : c)),
    })
    try {
      const { code, rows } = await probe()
      expect(code).toBe(5)
      const failed = rows.filter((r) => r.holds === false)
      expect(failed.map((r) => `${r.where} ${r.interface}`)).toEqual([
        'ingest reports itself connected',
        'pipeline reports itself connected',
        'control-panel reports itself connected',
      ])
      expect(failed[0]?.evidence).toBe('svc-ingest-5f6d7c-x1: svc_link_up is not exposed')
      expect(failed[0]?.key).toBe('live.checks[1] (reports itself connected)')
    } finally {
      setLive({})
    }
  })

  it("with an instance's UUID wrong names the seed endpoint of that instance alone, with live.uuids.<unit> (exit 5)", async () => {
    setLive({ uuids: { ...controller.uuids, pipeline: '00000000-0000-4000-8000-000000000000' } })
    try {
      const { code, rows } = await probe()
      expect(code).toBe(5)
      const failed = rows.filter((r) => r.holds === false)
      expect(failed.map((r) => `${r.where} ${r.interface} ${r.key ?? ''}`)).toEqual([
        'pipeline GET /api/v2/pipelines/{uuid}?expand=true live.uuids.pipeline',
      ])
      expect(failed[0]?.evidence).toBe('GET /api/v2/pipelines/00000000-0000-4000-8000-000000000000?expand=true answered 404')
    } finally {
      setLive({})
    }
  })
})
