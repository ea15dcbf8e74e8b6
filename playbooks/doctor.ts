#!/usr/bin/env node
/**
 * Playbook: the seed's common upgrade problems (Versioning > Recording service, item 6), checked by
 * cause on every host as the service sees it — its config file, its user, its database credentials —
 * or, on Kubernetes, on the Deployment's pods as the API reports them (src/recording/doctor/cluster-causes.ts):
 *
 *   the service does not start   config-syntax, config-options, file-permissions, database-access
 *   migration fails              schema-change-permission, migration-history
 *   recordings inaccessible      storage-paths, storage-location-names, media-api
 *   slow performance             content-info-cache, write-rate-limit, list-query, disk-io
 *
 *   npx zx playbooks/doctor.ts --env lab [--host rec-1] [--json]
 *
 * Read-only. The same causes (src/recording/doctor/causes.ts) run in the upgrade's preflight and on a host
 * that fails during an upgrade, before its rollback. Run by node or zx, this file is `svcops doctor
 * recording` (its options: playbooks/lib/recording-commands.ts).
 */
import type { Environment } from '../src/config/schema.ts'
import { ExitCode } from '../src/core/errors.ts'
import { formatDiagnosis, type Diagnosis } from '../src/doctor/diagnose.ts'
import { onTargetsOf } from '../src/recording/doctor/doctor-targets.ts'
import { printOn, type CommandIO } from '../src/edge/command-io.ts'
import { DOCTOR_RECORDING, type DoctorRecordingFlags } from './lib/recording-commands.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'

/** `svcops doctor recording`: the seed's four problems, in its order, on every host (or `hosts`), or the Deployment. */
export function doctorRecording(env: Environment, hosts?: string[]): Promise<Diagnosis> {
  return onTargetsOf(env, hosts, async (check) => {
    await check('problem-no-start') // the service does not start: logs, configuration syntax, file permissions, database access
    await check('problem-migration') // migration fails: connectivity, schema-change permission, migration logs
    await check('problem-recordings') // recordings inaccessible: storage paths, permissions, location names, media API
    await check('problem-slow') // slow performance: content info cache, write rate limit, query performance, disk I/O
  })
}

/** `svcops doctor recording`, and this file run as a script: the findings printed; exit 5 when there are any. */
export async function doctorRecordingCommand(flags: DoctorRecordingFlags, io: CommandIO): Promise<void> {
  const env = await io.environment()
  const diagnosis = await doctorRecording(env, flags.host)
  printOn(io, { ok: diagnosis.findings.length === 0, ...diagnosis }, () => formatDiagnosis(diagnosis))
  if (diagnosis.findings.length) io.exitWith(ExitCode.findings)
}

if (startedAsScript(import.meta)) await runScript(import.meta, DOCTOR_RECORDING, doctorRecordingCommand)
