/**
 * The lab's answer to what the seed does not say about the live production system, declared in
 * the lab's stack as a site declares its own (`svcops:live.checks`, docs/contract.md): the
 * controller's `GET <prefix>/status` and `/components`, each component's `/metrics` with its
 * release's metric names and `svc_controller_connected`, and its environment file on its host.
 * svcops has none of these in code; the lab's emulators serve them besides the seed's endpoints.
 * The UUIDs of the instances (`svcops:live.uuids`) are those the lab's controller gives them.
 */
import { labInstanceUuid } from './paths.ts'

/** The lab's declared checks, as the stack holds them. */
export function labLiveChecks(): Array<Record<string, unknown>> {
  const members = ['ingest', 'pipeline', 'control-panel']
  return [
    {
      name: 'the system controller answers on the prefix of its release',
      web: { path: '{api}/status', contains: { version: '{version}', status: 'ok' } },
    },
    {
      name: 'connected to the system controller',
      components: members,
      web: { path: '{api}/components', contains: { name: '{unit}', connected: true, version: '{version}' } },
    },
    {
      name: 'reports itself connected',
      components: members,
      metric: { name: '{product}_controller_connected', equals: 1 },
    },
    { name: 'the metric names of its release', metric: { releaseNames: true } },
    { name: 'its environment file', command: { argv: ['test', '-s', '{root}/etc/default/{product}-{component}'] } },
  ]
}

/** `svcops:live.uuids` of the lab: each connecting instance's UUID by its unit name. */
export function labLiveUuids(unitNames: string[]): Record<string, string> {
  return Object.fromEntries(unitNames.map((n) => [n, labInstanceUuid(n)]))
}
