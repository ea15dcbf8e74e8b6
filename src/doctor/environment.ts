/**
 * `svcops doctor recording`: every cause on every host (or the ones named) of an environment, each
 * host reached through its own transport, as its service sees it. Read-only.
 */
import { requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { transportFor } from '../drivers/transports.ts'
import { selectHosts, settingsFor, type HostHandle } from '../upgrade/context.ts'
import { diagnoseHosts, type Diagnosis } from './diagnose.ts'

export async function doctorEnvironment(env: Environment, hostNames?: string[]): Promise<Diagnosis> {
  const rec = requireSection(env, 'recording')
  const all: HostHandle[] = rec.hosts.map((config) => ({ name: config.name, config, transport: transportFor(config), url: config.url }))
  try {
    const hosts = selectHosts(all, hostNames, env.file)
    return await diagnoseHosts(hosts, settingsFor(env, rec))
  } finally {
    await Promise.all(all.map((h) => h.transport.close()))
  }
}
