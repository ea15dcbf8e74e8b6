/**
 * Playbook: upgrade the recording service (seed, Versioning > Recording service). The procedure,
 * top to bottom — each line a named step in the run's journal (src/ops/upgrade-*.ts do the work):
 *
 *   preflight      config valid; run lock; manager auth with the needed scopes; database reachable
 *                  and the role may change the schema; room for the backup; current version per host
 *   stage          target (and previous) package copied into every host's package cache
 *   snapshot       every recording listed through the API, row counts of every table
 *   backup         encrypted backup, verified by a test restore — nothing stops before it exists
 *   per host       stop -> install (pinned, config kept) -> review-config -> start (migrations run
 *                  on first start) -> wait-healthy -> check-logs -> verify-host
 *                  (canary first, alone; then batches of --batch hosts, concurrently)
 *   verify         schema fingerprint after; every host on the target version
 *   on failure     rollback: stop -> previous version -> restore only if the schema changed, with
 *                  recordings written after the backup exported and re-created -> start -> verify
 *
 * Run it through the CLI (`svcops upgrade recording ...`) or directly with the same flags:
 *   npx tsx playbooks/upgrade.ts --env lab --to 2.0.0 --dry-run
 */
import type { Environment } from '../src/config/schema.ts'
import { planUpgrade, renderPlan, type UpgradePlan } from '../src/upgrade/plan.ts'
import { resumeRun, upgradeRecording, type RunOutcome, type UpgradeRequest } from '../src/upgrade/run.ts'
import { openUpgradeDeps } from '../src/upgrade/wiring.ts'
import { runAsScript } from './as-script.ts'

/** Upgrades the recording service of `request.env`; throws RolledBackError (exit 4) when it failed and was rolled back. */
export function upgradeRecordingService(request: UpgradeRequest): Promise<RunOutcome> {
  return upgradeRecording(request, openUpgradeDeps)
}

/** The --dry-run plan: every step and command per host; reads only. */
export function planRecordingUpgrade(request: Omit<UpgradeRequest, 'env'> & { env: Environment }): Promise<UpgradePlan> {
  return planUpgrade(request.env, request)
}

/** The plan as text. */
export const renderRecordingPlan = renderPlan

/** Continues an interrupted run from its journal (or rolls it back). */
export function resumeRecordingRun(id: string, options: { rollback?: boolean; breakLock?: boolean }): Promise<RunOutcome> {
  return resumeRun(id, options, openUpgradeDeps)
}

runAsScript(import.meta.url, ['upgrade', 'recording'])
