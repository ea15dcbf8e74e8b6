/**
 * Playbook: roll back the recording service (seed, Versioning > Recording service, "Rollback"):
 *
 *   rollback:decide     schema fingerprint now vs before the run -> restore or keep the database
 *   rollback:export     (restore only) every recording written after the backup, saved in the run folder
 *   rollback:stop       every affected host (all of them when the database is restored)
 *   rollback:install    the previous version of each host
 *   rollback:restore    (restore only) the run's verified backup
 *   rollback:start / wait-healthy / check-logs
 *   rollback:recreate   (restore only) the exported recordings, re-created through the API
 *   rollback:verify     health, content, every snapshot recording present, test recording
 *
 * `--run ID` (default: the newest upgrade run of the environment) rolls back from that run's
 * journal; `--to V` moves the hosts to V through the upgrade's own path instead.
 *   npx tsx playbooks/rollback.ts --env lab
 */
import type { Environment } from '../src/config/schema.ts'
import { rollbackRun, type RunOutcome } from '../src/upgrade/run.ts'
import { openUpgradeDeps } from '../src/upgrade/wiring.ts'
import { runAsScript } from './as-script.ts'

/** Rolls back run `runId` (or the newest), or moves to version `to`. Throws RolledBackError (exit 4) on success of a rollback. */
export function rollbackRecordingService(
  env: Environment,
  options: { runId?: string; to?: string; breakLock?: boolean },
): Promise<RunOutcome> {
  return rollbackRun(env, options, openUpgradeDeps)
}

runAsScript(import.meta.url, ['rollback', 'recording'])
