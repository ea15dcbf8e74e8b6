/**
 * The recording service's causes on its hosts: each host's view opened once (host-view.ts), every
 * cause checked on it by the doctor's loop (src/doctor/diagnose.ts).
 */
import { addDiagnosis, runCauses, type Diagnosis } from '../../doctor/diagnose.ts'
import { runConcurrently } from '../../runs/rollout.ts'
import type { RecordingHost } from '../recording-platform.ts'
import { CAUSES, seedOf } from './causes.ts'
import type { Cause } from './cause-types.ts'
import { openHostView, type DoctorSettings } from './host-view.ts'

/** Checks `causes` on one host as its service sees it. */
export async function diagnoseHost(host: RecordingHost, settings: DoctorSettings, causes: readonly Cause[] = CAUSES): Promise<Diagnosis> {
  const view = await openHostView(host, settings)
  try {
    return await runCauses(view, host.name, causes, seedOf)
  } finally {
    await view.close()
  }
}

/**
 * Hosts checked at once. Each check is a few round trips and a database connection (so not all of a
 * large fleet at once: the server's max_connections); one host after the other, a 50-host upgrade
 * waited ~1 s per host in its preflight before the first stop.
 */
const HOSTS_AT_ONCE = 10

/** Checks every host, `HOSTS_AT_ONCE` at a time; findings and checks in the hosts' order, so the report reads in order. */
export async function diagnoseHosts(
  hosts: RecordingHost[],
  settings: DoctorSettings,
  causes: readonly Cause[] = CAUSES,
): Promise<Diagnosis> {
  const all: Diagnosis = { findings: [], checks: [] }
  for (const result of await runConcurrently(hosts, HOSTS_AT_ONCE, (h) => diagnoseHost(h, settings, causes))) {
    if (result.status === 'rejected') throw result.reason
    addDiagnosis(all, result.value)
  }
  return all
}
