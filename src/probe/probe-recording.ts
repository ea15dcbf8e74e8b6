/**
 * The recording service's own interfaces as `svcops probe` tries them, the same wherever it runs
 * (a host's URL, or the Service of its Deployment): the seed's `GET /` and
 * `GET /api/v1/content?limit=N` with the read scope, then the site's declared checks
 * (`svcops:recording.checks`, whose commands must only read). No recording is created.
 */
import { managerClientFor } from '../clients/manager-client.ts'
import { RecordingClient } from '../clients/recording-client.ts'
import type { Environment } from '../config/schema.ts'
import { errorMessage } from '../core/errors.ts'
import type { Transport } from '../core/runner.ts'
import { runRecordingCheck } from '../recording/recording-checks.ts'
import { row, type ProbeRow } from './probe-row.ts'

/**
 * `GET /` and the content list of the recording service at `url` (`urlKey` is the stack key of that
 * URL), then every declared check (`svcops:recording.checks`), commands over `host` where there is one.
 */
export async function probeRecordingService(
  env: Environment,
  where: string,
  url: string,
  urlKey: string,
  host?: { transport: Transport; root: string },
): Promise<ProbeRow[]> {
  const rec = env.recording
  if (!rec) return []
  const rows: ProbeRow[] = []
  const manager = env.manager ? managerClientFor(env) : undefined
  const client = new RecordingClient({
    url,
    auth: manager ?? (() => Promise.reject(new Error('svcops:manager is not set'))),
    scopes: rec.scopes,
  })
  const health = await client.health()
  rows.push(
    row({
      part: 'recording',
      where,
      interface: 'GET /',
      source: 'seed',
      holds: health.healthy,
      evidence: health.healthy ? `${health.status ?? ''} in ${health.durationMs} ms` : (health.reason ?? 'no answer'),
      key: urlKey,
    }),
  )
  try {
    const list = await client.list(1)
    rows.push(
      row({
        part: 'recording',
        where,
        interface: 'GET /api/v1/content?limit=N',
        source: 'seed',
        holds: true,
        evidence: `${list.length} record(s)`,
      }),
    )
  } catch (error) {
    rows.push(
      row({
        part: 'recording',
        where,
        interface: 'GET /api/v1/content?limit=N',
        source: 'seed',
        holds: false,
        evidence: errorMessage(error),
        key: 'recording.scopes, manager',
      }),
    )
  } finally {
    await manager?.logout().catch(() => undefined)
  }
  const reader = { name: where, url, root: host?.root ?? '', product: env.product.prefix, ...(host ? { transport: host.transport } : {}) }
  for (const [i, c] of rec.checks.entries()) {
    const r = await runRecordingCheck(reader, c)
    rows.push(
      row({
        part: 'recording',
        where,
        interface: c.name,
        source: 'assumed',
        holds: r.ok,
        evidence: r.detail ?? 'passes',
        key: `recording.checks[${i}] (${c.name})`,
      }),
    )
  }
  return rows
}
