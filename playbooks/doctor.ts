#!/usr/bin/env node
/**
 * Playbook: the seed's common upgrade problems (Versioning > Recording service, item 6), checked by
 * cause on every host as the service sees it — its config file, its user, its database credentials:
 *
 *   the service does not start   config-syntax, config-options, file-permissions, database-access
 *   migration fails              schema-change-permission, migration-history
 *   recordings inaccessible      storage-paths, storage-location-names, media-api
 *   slow performance             content-info-cache, write-rate-limit, list-query, disk-io
 *
 *   node playbooks/doctor.ts --env lab [--host rec-1] [--json]
 *
 * Read-only. The same causes (src/doctor/causes.ts) run in the upgrade's preflight and on a host
 * that fails during an upgrade, before its rollback.
 */
import type { Environment } from '../src/config/schema.ts'
import type { Diagnosis } from '../src/doctor/diagnose.ts'
import { doctorEnvironment } from '../src/doctor/environment.ts'
import { runAsCommand } from '../src/runs/script.ts'

/** `svcops doctor recording`: every cause on every host (or `hosts`). */
export function doctorRecording(env: Environment, hosts?: string[]): Promise<Diagnosis> {
  return doctorEnvironment(env, hosts)
}

if (import.meta.main) await runAsCommand(['doctor', 'recording'])
