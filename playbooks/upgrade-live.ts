#!/usr/bin/env node
/**
 * Playbook: upgrade the live production system across majors (seed, Versioning > "Live production
 * system: changes per major release"), on one host or across several. Before anything changes: the
 * installed release and the room on each host for what the run writes there, the packages staged,
 * the blocking gates (what only people can fix: checked by svcops or acknowledged with --ack), the
 * files read and a backup of each. Then every instance
 * stops, svcops writes what the target needs (a PSK in the settings file and every environment
 * together, the settings file where the target reads it, one TCP endpoint), and each component is
 * installed, started and checked in dependency order: the controller, ingest, the pipeline, the
 * control panel — a type with several instances (on several hosts) as a canary, then batches of
 * --batch, within --max-fail. Any other failure after the first stop puts every instance on every
 * host back on its previous package, settings, environment and PSK, each verified (the rollback
 * below).
 *
 *   npx zx playbooks/upgrade-live.ts --env lab --to 7.0.0 [--ack 6.0.0/send-message] [--batch 2] [--max-fail 1] [--dry-run]
 *
 * `--dry-run` runs this same procedure in plan mode: every command, every file change as a diff
 * with secrets masked. Every run is journaled; `svcops resume ID` continues it after a kill. Run by
 * node or zx, this file is `svcops upgrade live` (its options: playbooks/lib/live-commands.ts).
 */
import type { Environment } from '../src/config/schema.ts'
import { BadInputError } from '../src/core/errors.ts'
import { ToleratedFailures, type HostFailure, type Run } from '../src/runs/engine.ts'
import { parseMaxFail, planBatches } from '../src/runs/rollout.ts'
import type { Playbook, RunOutcome } from '../src/runs/playbook.ts'
import {
  planSystemContinuation,
  planSystemRun,
  renderRunPlan,
  resumeSystemRun,
  startSystemRun,
  type RecordedFrom,
} from '../src/runs/run-actions.ts'
import type { RunPlan } from '../src/runs/run-system.ts'
import { confirmChange, printPlanOn, showRunOn, type CommandIO } from './lib/command-io.ts'
import { UPGRADE_LIVE, type RollbackLiveFlags, type UpgradeLiveFlags } from './lib/live-commands.ts'
import { runScript, startedAsScript } from './lib/script.ts'
import { upgradeLiveSite } from './site/index.ts'
import type { ComponentHandle, LiveContext } from '../src/live/live-context.ts'
import type { LiveParams } from '../src/live/live-params.ts'
import { stopOrder } from '../src/live/layout.ts'
import { unitsByType } from '../src/live/live-placement.ts'
import { liveUnitNames } from '../src/live/live-platforms.ts'
import { checkRollbackReady, startOnWhatTheyHave } from '../src/live/rollback-ready.ts'
import { findLiveRunToRollBack, liveSystem, type LiveUpgradeRequest } from '../src/live/live-system.ts'
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
    tolerated.push(...(await rollOut(run, instances, tolerated.length, upgradeOne)))
  }
  await run.step(
    verifySystem,
    target,
    tolerated.map((f) => f.host),
  ) // the controller lists every instance connected on the target
  if (tolerated.length) throw toleratedFailures(run, tolerated)
}

/**
 * One instance of a type is upgraded alone; several in the engine's rollout: a canary, then batches
 * of --batch at once, the failures of all types together within --max-fail (a tolerated instance is
 * stopped: it cannot go back alone to a release the controller no longer speaks). Returns those.
 */
async function rollOut(
  run: Run<LiveContext>,
  instances: ComponentHandle[],
  failedBefore: number,
  upgradeOne: (u: ComponentHandle) => Promise<void>,
): Promise<HostFailure[]> {
  const [only] = instances
  if (only && instances.length === 1) {
    await upgradeOne(only)
    return []
  }
  const params = run.ctx.journal.run.params
  const connecting = run.ctx.units.filter((u) => u.component !== 'system-controller').length
  return run.rollout(
    {
      batches: planBatches(instances, params.batchSize),
      maxFail: parseMaxFail(params.maxFail, connecting) - failedBefore,
      onTolerated: async (_failure, u) => {
        await run.onHost(u, stopComponent)
      },
    },
    upgradeOne,
  )
}

function toleratedFailures(run: Run<LiveContext>, failures: HostFailure[]): ToleratedFailures {
  const record = run.ctx.journal.run
  const total = run.ctx.units.length
  return new ToleratedFailures(
    `Upgraded ${total - failures.length} of ${total} instances to ${record.targetVersion}; ${failures.map((f) => f.host).join(', ')} failed ` +
      `and stopped (within --max-fail ${record.params.maxFail}): ${failures[0]?.message ?? ''}`,
    `See the report: ${run.journal.file('report.md')}; roll every host back with: svcops rollback live --env ${record.environment} --run ${record.id}`,
  )
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

// Entry points; the CLI (through playbooks/lib/systems.ts) and the tests call these.

/** `svcops upgrade live`; throws RolledBackError (exit 4) when it failed and was rolled back. */
export function upgradeLiveSystem(request: LiveUpgradeRequest): Promise<RunOutcome> {
  return startSystemRun(live, request)
}

/** `svcops upgrade live --dry-run`: this playbook in plan mode; reads only. */
export function planLiveUpgrade(request: LiveUpgradeRequest): Promise<RunPlan> {
  return planSystemRun(live, request)
}

/** `svcops resume ID [--rollback]` of a live run. */
export function resumeLiveSystem(
  id: string,
  options: { rollback?: boolean; breakLock?: boolean; force?: boolean; env?: Environment } = {},
): Promise<RunOutcome> {
  return resumeSystemRun(live, id, options)
}

/** `svcops resume ID --dry-run` of a live run; `from`: the stack given and the run read into memory. */
export function planLiveResume(id: string, options: { rollback?: boolean } & RecordedFrom = {}): Promise<RunPlan> {
  const { rollback, ...from } = options
  return planSystemContinuation(live, id, { rollback: rollback ?? false, ...from })
}

/** `svcops rollback live`: rolls back run `runId` (default: the environment's newest live upgrade run). */
export async function rollbackLiveSystem(
  env: Environment,
  options: { runId?: string; breakLock?: boolean; force?: boolean; trustUnsigned?: boolean } = {},
): Promise<RunOutcome> {
  const breaking = options.breakLock ? { breakLock: true, force: options.force ?? false } : {}
  const journal = await findLiveRunToRollBack(env, options.runId, { trustUnsigned: options.trustUnsigned ?? false })
  return resumeLiveSystem(journal.run.id, { rollback: true, env, ...breaking })
}

/** `svcops rollback live --dry-run`. */
export async function planLiveRollback(env: Environment, options: { runId?: string; trustUnsigned?: boolean } = {}): Promise<RunPlan> {
  // Read into memory: a dry run writes nothing to the local runs folder.
  const journal = await findLiveRunToRollBack(env, options.runId, { dryRun: true, trustUnsigned: options.trustUnsigned ?? false })
  return planLiveResume(journal.run.id, { rollback: true, env, journal })
}

/** `svcops upgrade live`, and this file run as a script: the dry run's plan, or the run once confirmed. */
export async function upgradeLiveCommand(flags: UpgradeLiveFlags, io: CommandIO): Promise<void> {
  refuseCanaryPause(flags)
  refuseFromOutsideDryRun(flags)
  const env = await io.environment()
  const request = {
    env,
    to: flags.to,
    ...(flags.from ? { from: flags.from } : {}),
    acks: flags.ack ?? [],
    ...(flags.tcpEndpoint ? { tcpEndpoint: flags.tcpEndpoint } : {}),
    batch: flags.batch ?? 1,
    maxFail: flags.maxFail ?? '0',
    autoRollback: flags.autoRollback,
    ...(flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}),
  }
  if (flags.dryRun) {
    const plan = await planLiveUpgrade(request)
    printPlanOn(io, plan, () => renderRunPlan(live, plan), { spread: true })
    return
  }
  const prompts = await io.prompts()
  await confirmChange(() => prompts.upgradePrompt('the live production system', env.name, 'live', liveUnitNames(env), flags.to), flags.yes)
  await showRunOn(io, () => upgradeLiveSystem(request), flags.metricsFile ? { metricsFile: flags.metricsFile } : {})
}

/** `--pause-after-canary` belongs to the recording service's rollout; the live system's types go one after another, without a wait between them. */
function refuseCanaryPause(flags: UpgradeLiveFlags): void {
  if (flags.pauseAfterCanary)
    throw new BadInputError(
      '--pause-after-canary: not offered for the live production system (its component types are upgraded one after another in dependency order, each type across hosts with a canary of its own, and nothing may wait half-way with the controller already on the target); expected it with svcops upgrade recording only.',
      'Check the plan first instead: svcops upgrade live --env ENV --to VERSION --dry-run',
    )
}

/** A run reads the release it upgrades from on the live system itself; `--from` only stands in for it in a plan. */
function refuseFromOutsideDryRun(flags: UpgradeLiveFlags): void {
  if (flags.from !== undefined && !flags.dryRun)
    throw new BadInputError(
      `--from: '${flags.from}' is read by the dry run only (a run reads the release the live system runs); expected it with --dry-run.`,
    )
}

/** `svcops rollback live`: the dry run's plan, or the rollback once confirmed. */
export async function rollbackLiveCommand(flags: RollbackLiveFlags, io: CommandIO): Promise<void> {
  const env = await io.environment()
  const options = { ...(flags.run ? { runId: flags.run } : {}), ...(flags.trustUnsignedRun ? { trustUnsigned: true } : {}) }
  if (flags.dryRun) {
    const plan = await planLiveRollback(env, options)
    printPlanOn(io, plan, () => renderRunPlan(live, plan), { spread: false })
    return
  }
  const prompts = await io.prompts()
  await confirmChange(() => prompts.rollbackPrompt('the live production system', env.name, 'live', flags.run), flags.yes)
  await showRunOn(
    io,
    () => rollbackLiveSystem(env, { ...options, ...(flags.breakLock ? { breakLock: true, force: flags.force ?? false } : {}) }),
    flags.metricsFile ? { metricsFile: flags.metricsFile } : {},
  )
}

if (startedAsScript(import.meta)) await runScript(import.meta, UPGRADE_LIVE, upgradeLiveCommand)
