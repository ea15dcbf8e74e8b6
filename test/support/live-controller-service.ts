/**
 * A STAND-IN of the system controller's Service for the live system on the Kubernetes stand-in
 * (kube-api-standin.ts): it answers what the seed names and nothing else, on the prefix of the
 * release the controller's Deployment runs (seed, 3.0.0 and 7.0.0: `/api/v1` before 3.0, `/api/v2`
 * from 3.0, `/api/v3` from 7.0; any other prefix: 404). An instance is known by the UUID the test
 * gives its Deployment and answered while its pods run and it is connected:
 *
 *   GET <prefix>/ingests/{uuid}[?expand=true]  with `?expand=true` the ingest metrics of its release
 *                                              (seed, 6.0.0: split into audio and video from 6.0)
 *   GET <prefix>/pipelines/{uuid}[?expand=true], GET <prefix>/controlpanels/{uuid}
 *
 * An instance not connected, unknown or without a running pod is a 404, as a controller answers an
 * instance it does not know. Written from the seed's tables, not from svcops' catalog. Beside it,
 * the live Deployments as the program writes them (`liveDeployment`), their pods serving metrics.
 */
import { createServer, type Server } from 'node:http'
import type { LiveComponentName } from '../../src/live/layout.ts'
import { settingsPathFlag, supportsSettingsPathFlag, tcpEndpointVariable } from '../../src/releases/versions.ts'
import type { KubeApiStandin, StandinDeployment } from './kube-api-standin.ts'

/** The API prefix of a release, from the seed's 3.0.0 and 7.0.0 tables. */
export function seedPrefix(version: string): string {
  const major = Number(version.split('.')[0])
  return major >= 7 ? '/api/v3' : major >= 3 ? '/api/v2' : '/api/v1'
}

/** The ingest's metric names of a release, from the seed's 6.0.0 table. */
export function seedIngestMetrics(version: string, prefix = 'svc'): string[] {
  const major = Number(version.split('.')[0])
  return ['dropped', 'duplicated', 'lost'].flatMap((k) =>
    major >= 6
      ? [`${prefix}_ingest_source_${k}_audio_frames`, `${prefix}_ingest_source_${k}_video_frames`]
      : [`${prefix}_ingest_source_${k}_frames`],
  )
}

/** The seed's collection of each instance type. */
const COLLECTION: Record<string, string> = { ingests: 'ingest', pipelines: 'pipeline', controlpanels: 'control-panel' }

export interface ControllerServiceStandin {
  url: string
  /** The UUID of each instance (by its Deployment's `app`), as a site would copy them into `svcops:live.uuids`. */
  uuids: Record<string, string>
  /** Requests answered, as `METHOD path?query`. */
  requests: string[]
  close(): Promise<void>
}

/**
 * Starts the stand-in on a free loopback port. `connected(d)` says whether the instance of a
 * Deployment is connected to the controller (default: its pods all ready).
 */
export async function startControllerServiceStandin(
  api: Pick<KubeApiStandin, 'state'>,
  options: { uuids?: Record<string, string>; connected?: (d: StandinDeployment) => boolean } = {},
): Promise<ControllerServiceStandin> {
  const uuids = options.uuids ?? {
    ingest: '0a3c9e52-6f1d-4b8e-9c27-5d41e8a7b093',
    pipeline: '7b2e4f90-1c6a-4d3b-8e5f-a09c2d71b468',
    'control-panel': 'c41d8a27-93e5-4f0b-b6d2-18e7f5a3c920',
  }
  const connected = options.connected ?? ((d: StandinDeployment) => d.pods.every((p) => p.ready !== false))
  const requests: string[] = []
  const server: Server = createServer((req, res) => {
    requests.push(`${req.method ?? 'GET'} ${req.url ?? '/'}`)
    const send = (status: number, body?: unknown): void => {
      res.writeHead(status, body === undefined ? {} : { 'Content-Type': 'application/json' })
      res.end(body === undefined ? undefined : JSON.stringify(body))
    }
    const controller = api.state.others.find((d) => d.app === 'system-controller')
    if (!controller || !controller.pods.some((p) => p.ready !== false)) return send(503)
    const [path = '/', query = ''] = (req.url ?? '/').split('?')
    const prefix = seedPrefix(controller.version)
    const route =
      req.method === 'GET' && path.startsWith(`${prefix}/`)
        ? /^\/(ingests|pipelines|controlpanels)\/([0-9a-f-]{36})$/.exec(path.slice(prefix.length))
        : null
    if (!route) return send(404, { error: 'not found' })
    const kind = COLLECTION[route[1] ?? '']
    const uuid = route[2] ?? ''
    const d = api.state.others.find((x) => x.app === kind && uuids[x.app] === uuid)
    if (!d || d.pods.length === 0 || !connected(d)) return send(404, { error: 'not found' })
    const expand = new URLSearchParams(query).get('expand') === 'true'
    const body: Record<string, unknown> = { uuid }
    if (expand && kind === 'ingest')
      body.sources = [{ source_id: 0, metrics: Object.fromEntries(seedIngestMetrics(d.version).map((n) => [n, 0])) }]
    return send(200, body)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const address = server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  return { url, uuids, requests, close: () => new Promise<void>((r) => server.close(() => r())) }
}

/** The media components' metrics port in the shipped prod stack (`svcops:deploy.live.metrics.port`). */
export const METRICS_PORT = 9100

/**
 * What a media component of `version` serves on its metrics port, written from the seed's table (not
 * from svcops' catalog): the pipeline's queue metric renamed at 4.0, the ingest's frame counters
 * split into audio and video at 6.0, and the connection metric.
 */
export function podMetrics(c: LiveComponentName, version: string): string {
  const major = Number(version.split('.')[0])
  const names =
    c === 'pipeline'
      ? [major >= 4 ? 'svc_video_frames_in_queue' : 'svc_queueing_video_frames']
      : c === 'ingest'
        ? seedIngestMetrics(version)
        : []
  return [
    ...names.flatMap((n) => [`# TYPE ${n} gauge`, `${n} 0`]),
    '# TYPE svc_controller_connected gauge',
    'svc_controller_connected 1',
    '',
  ].join('\n')
}

/** The pod template the program writes for a component of `version` (src/infra/systemController.ts, mediaComponent.ts). */
export function liveDeployment(c: LiveComponentName, version: string, tcpEndpoints = ['0.0.0.0:7000']): StandinDeployment {
  const psk = { name: 'SVC_SYSTEM_CONTROLLER_PSK', valueFrom: { secretKeyRef: { name: 'svc-psk', key: 'psk' } } }
  const env: NonNullable<StandinDeployment['env']> = [psk]
  if (c === 'pipeline') env.push({ name: tcpEndpointVariable(version, 'svc'), value: tcpEndpoints.join(',') })
  return {
    deployment: `svc-${c}`,
    app: c,
    container: c,
    image: `registry.example.internal/svc/${c}`,
    version,
    replicas: 1,
    pods: [
      {
        name: `svc-${c}-5f6d7c-x1`,
        version,
        log: [`2026-11-25T02:30:00Z INFO ${c} ${version} started`],
        ...(c === 'system-controller' ? {} : { metrics: podMetrics(c, version), metricsPort: METRICS_PORT }),
      },
    ],
    env,
    ...(c === 'system-controller'
      ? {
          mountPaths: ['/tmp', '/etc/opt/svc'],
          ...(supportsSettingsPathFlag(version) ? { args: [settingsPathFlag(), '/etc/opt/svc'] } : {}),
        }
      : {}),
  }
}
