#!/usr/bin/env node
/**
 * Playbook: upgrade the live production system across majors (seed, Versioning > "Live production
 * system: changes per major release"), on one host or across several. Before anything changes: the
 * installed release and the room on each host, the packages staged, the blocking gates (checked by
 * svcops or acknowledged with --ack), the files read and a backup of each. Then every instance
 * stops, svcops writes what the target needs (PSK, settings file, environments, one TCP endpoint,
 * all together), and each component is installed, started and checked in dependency order: the
 * controller, ingest, the pipeline, the control panel; a type with several instances as a canary,
 * then batches of --batch, within --max-fail. Any other failure after the first stop puts every
 * instance back on its previous package, settings, environment and PSK, each verified (the rollback
 * below).
 *
 *   npx zx playbooks/upgrade-live.ts --env lab --to 7.0.0 [--ack 6.0.0/send-message] [--batch 2] [--max-fail 1] [--dry-run]
 *
 * `--dry-run` runs this same procedure in plan mode: every command, every file change as a diff
 * with secrets masked. Every run is journaled; `svcops resume ID` continues it after a kill. Run by
 * node or zx, this file is `svcops upgrade live` (its options: playbooks/lib/live-commands.ts; what
 * the command does with them: playbooks/lib/live-actions.ts).
 */
import type { HostFailure, Run } from '../src/runs/engine.ts'
import type { Playbook } from '../src/runs/playbook.ts'
import { upgradeLiveCommand } from './lib/live-actions.ts'
import { UPGRADE_LIVE } from './lib/live-commands.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'
import { upgradeLiveSite } from './site/index.ts'
import type { ComponentHandle, LiveContext } from '../src/live/live-context.ts'
import type { LiveParams } from '../src/live/live-params.ts'
import { stopOrder } from '../src/live/layout.ts'
import { unitsByType } from '../src/live/live-placement.ts'
import { checkRollbackReady, startOnWhatTheyHave } from '../src/live/rollback-ready.ts'
import { rollOutType, toleratedFailures } from '../src/live/live-rollout.ts'
import { sampleLiveBaseline } from '../src/live/live-soak.ts'
import { liveSystem } from '../src/live/live-system.ts'
import {
  alreadyOnTarget,
  backupFiles,
  checkConfig,
  checkGates,
  checkStarted,
  fromVersion,
  installComponent,
  preflight,
  restoreConfig,
  stagePackages,
  startComponent,
  stopComponent,
  verifySystem,
  writeConfig,
} from '../src/live/live-steps.ts'

/** The procedure, top to bottom. */
async function upgradeLive(run: Run<LiveContext>): Promise<void> {
  const { ctx } = run
  const target = ctx.journal.run.targetVersion
  const pending = (u: ComponentHandle) => !run.finished(checkStarted, u.name) // not yet upgraded and checked before an interruption
  await run.step(preflight) // the installed release of every instance; a downgrade, mixed releases or too little room for the staging refused
  if (await alreadyOnTarget(run)) return // every instance running the target: no stop, no restart, a no-op run
  await run.step(checkGates) // what only people can fix: unacknowledged gates stop here, nothing changed
  await run.everyHost(ctx.units, (u) => run.onHost(u, stagePackages)) // target and current package on every host
  await run.step(checkConfig) // settings and environment files read on every host; several TCP endpoints refused
  await run.step(backupFiles) // every file the run may touch, into the run folder (0600)
  await run.step(checkRollbackReady, 'upgrade') // what a rollback would need: previous packages, the saved settings, every host
  await sampleLiveBaseline(run) // with a soak: each soaked type's instances on the old release, the baseline its canary is judged against
  for (const u of stopOrder(ctx.units).filter(pending)) await run.onHost(u, stopComponent) // control panels first, controller last
  await run.step(writeConfig) // PSK, settings file, TCP endpoint: all together on every host, while nothing runs
  const tolerated: HostFailure[] = []
  for (const instances of unitsByType(ctx.units)) {
    // the controller alone, then the ingest, pipeline and control panel instances: a canary, then batches of --batch
    const upgradeOne = async (u: ComponentHandle) => {
      if (!pending(u)) return // upgraded and checked before an interruption
      await run.onHost(u, installComponent, target)
      await run.onHost(u, startComponent)
      await run.onHost(u, checkStarted, target) // running, no error lines, connected, the new prefix, the renamed metrics
    }
    tolerated.push(...(await rollOutType(run, instances, tolerated.length, upgradeOne)))
  }
  const failed = tolerated.map((f) => f.host)
  await run.step(verifySystem, target, failed) // the controller lists every instance connected on the target
  if (tolerated.length) throw toleratedFailures(run, tolerated)
}

/** The way back on every host: every instance on its previous package, settings, environment and PSK, each verified. */
async function rollBackLive(run: Run<LiveContext>): Promise<string> {
  await run.step(checkRollbackReady, 'rollback') // previous packages, the saved settings, the host: before anything stops
  // Whatever fails after the check (a package gone since) leaves no component stopped that could run.
  return putBackLive(run).catch((e: unknown) => startOnWhatTheyHave(run, e))
}

async function putBackLive(run: Run<LiveContext>): Promise<string> {
  const { ctx } = run
  // A dry run that could not read the running release plans the way back to --from's.
  const previous = (u: ComponentHandle) => ctx.journal.run.params.previousVersions[u.name] ?? fromVersion(ctx)
  for (const u of stopOrder(ctx.units)) await run.onHost(u, stopComponent)
  await run.step(restoreConfig) // settings file, environments and PSK from the run's backup, on every host
  for (const instances of unitsByType(ctx.units))
    // the controller first, then each type's instances at once
    await run.everyHost(instances, async (u) => {
      await run.onHost(u, installComponent, previous(u))
      await run.onHost(u, startComponent)
      await run.onHost(u, checkStarted, previous(u))
    })
  const first = ctx.units[0]
  const version = first ? previous(first) : ''
  await run.step(verifySystem, version, [])
  return `rolled back to ${version}; settings, environments and PSK restored from the run's backup`
}

/** The playbook: this procedure, and its rollback as the failure policy. */
export const upgradeLivePlaybook: Playbook<LiveContext, LiveParams> = {
  kind: 'upgrade',
  what: (record) => `Upgrade of the live production system to ${record.targetVersion}`,
  rollbackCommand: (record) => `svcops rollback live --env ${record.environment} --run ${record.id}`,
  procedure: upgradeLive,
  rollback: rollBackLive,
  site: upgradeLiveSite, // the site's steps (playbooks/site/), their undos after the rollback
}

/** The live system as the engine runs it, every run following this playbook. */
export const live = liveSystem(upgradeLivePlaybook)

if (startedAsScript(import.meta)) await runScript(import.meta, UPGRADE_LIVE, upgradeLiveCommand(live))
