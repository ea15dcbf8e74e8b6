/**
 * `svcops psk rotate`: a new PSK for the live production system as a run of it (kind `psk-rotate`),
 * started through the one run path (src/runs/run-actions.ts) under the live system's lock. Its
 * steps: the release every component runs (one that reads a PSK), the files read, every file kept
 * (the backup step: the run's secret store, 0600), every component stopped, the new key written
 * (the controller's settings first, then each environment), each component started and checked in
 * dependency order, the whole system verified with one strong PSK everywhere, and the gap measured:
 * how long each component was disconnected. The steps of the upgrade are reused where they are the
 * same (backup, stop, start, check, verify); the playbook is playbooks/psk-rotate.ts.
 *
 * On Kubernetes the same run sets a new `deploy.pskRotation` (the program derives the key; svcops
 * never reads it) and its `apply` step is `pulumi up` of the live components, the controller first
 * (kubernetes/psk-rotation.ts); stop and start are nothing there, and the gap is measured from the
 * start of that `pulumi up`.
 */
import type { Environment } from '../config/schema.ts'
import { BadInputError, OperationError } from '../core/errors.ts'
import { pskRequired } from '../releases/versions.ts'
import type { Playbook } from '../runs/playbook.ts'
import type { RunReport } from '../runs/run-report.ts'
import type { RunSystem } from '../runs/run-system.ts'
import { defineStep, finishedData, type StepResult } from '../runs/step.ts'
import { LIVE_COMPONENTS, componentPackage } from './layout.ts'
import { failedChecks } from './live-judge.ts'
import type { LiveContext } from './live-context.ts'
import { liveDescription } from './live-description.ts'
import { liveSystem } from './live-system.ts'
import type { LiveParams } from './live-params.ts'
import type { PskRotation } from './live-platform.ts'
import { liveUnitNames } from './live-platforms.ts'
import { backupFiles } from './live-steps.ts'

type Ctx = LiveContext

/** `svcops psk rotate --env E`'s request. */
export interface PskRotateRequest {
  env: Environment
  breakLock?: boolean
  force?: boolean
}

/** The live system as the engine runs a rotation. */
export type PskRotateSystem = RunSystem<LiveParams, PskRotateRequest, LiveContext>

/** The release every component ran when the rotation started (what it checks and restarts on). */
export function releaseOf(ctx: Ctx): string {
  return Object.values(ctx.journal.run.params.previousVersions)[0] ?? ''
}

/** The platform's rotation; one sentence where it has none. */
function rotationOf(ctx: Ctx): PskRotation {
  const psk = ctx.platform.psk
  if (!psk) throw new BadInputError(`svcops psk rotate: the live system on ${ctx.platform.where} has no PSK files svcops writes.`)
  return psk
}

async function readRelease(ctx: Ctx): Promise<StepResult> {
  const versions: Record<string, string> = {}
  for (const u of ctx.units) {
    const v = await ctx.platform.installedVersion(u)
    if (!v)
      throw new OperationError(`${componentPackage(ctx.product, u.component)} is not installed on ${u.host}; there is no key to rotate.`)
    versions[u.name] = v
  }
  const distinct = [...new Set(Object.values(versions))]
  const release = distinct[0] ?? ''
  if (distinct.length > 1)
    throw new OperationError(
      `The components run different releases (${Object.entries(versions)
        .map(([c, v]) => `${c} ${v}`)
        .join(', ')}); finish the unfinished run first (svcops runs list).`,
    )
  if (!pskRequired(release))
    throw new BadInputError(`The live system runs ${release}, which reads no PSK (from 2.0.0); there is no key to rotate.`)
  if (!Object.keys(ctx.journal.run.params.previousVersions).length) ctx.journal.updateParams({ previousVersions: versions })
  ctx.journal.update({ targetVersion: release })
  return { data: { release } }
}

export const rotationRelease = defineStep<Ctx>({
  id: 'release',
  title: 'read the release every component runs: one release, one that reads a PSK (2.0.0 and later)',
  once: true,
  describe: (ctx) => [
    `read the installed version of every component on ${ctx.platform.where}; refuse mixed releases and a release without a PSK`,
  ],
  preview: readRelease,
  act: readRelease,
})

export const checkPskFiles = defineStep<Ctx>({
  id: 'check-psk-files',
  title: 'read the settings file and every environment file; refuse a settings file without a PSK',
  describe: (ctx) => (releaseOf(ctx) ? rotationOf(ctx).describeCheck(releaseOf(ctx)) : ['read the files, once the release is known']),
  act: (ctx) => rotationOf(ctx).check(releaseOf(ctx)),
})

export const writeNewPsk = defineStep<Ctx>({
  id: 'write-psk',
  title: "write a new PSK: the controller's settings file first, then every component's environment file",
  describe: (ctx) => (releaseOf(ctx) ? rotationOf(ctx).describeWrite(releaseOf(ctx)) : ['write the new key, once the release is known']),
  act: (ctx) => rotationOf(ctx).write(releaseOf(ctx), finishedData(ctx.journal, backupFiles)),
})

export const applyPsk = defineStep<Ctx>({
  id: 'apply-psk',
  title: 'give the components the key where a step of its own does (on Kubernetes: pulumi up, the controller first)',
  disruptive: true,
  describe: (ctx) => rotationOf(ctx).apply?.describe() ?? ['nothing: each component reads the key when it starts (below)'],
  act: (ctx) => rotationOf(ctx).apply?.act() ?? Promise.resolve({ skipped: 'each component reads the key when it starts' }),
})

/**
 * How long each component was disconnected, in this run's journal: from the start of its stop (or,
 * where a step of its own gives the key, from that step's start) to the end of its successful check.
 */
export function measureGap(ctx: Ctx): { gapMs: number; components: Record<string, number> } {
  const entries = ctx.journal.entries()
  const at = (step: string, status: string, host: string | undefined, last: boolean) => {
    const found = entries.filter((e) => e.step === step && e.status === status && e.host === host)
    const e = last ? found.at(-1) : found[0]
    return e ? Date.parse(e.time) : undefined
  }
  const applied = ctx.platform.psk?.apply ? at(applyPsk.id, 'start', undefined, false) : undefined
  const components: Record<string, number> = {}
  let first = Infinity
  let end = 0
  for (const u of ctx.units) {
    const stopped = applied ?? at('stop', 'start', u.name, false)
    const back = at('check', 'ok', u.name, true)
    if (stopped === undefined || back === undefined) continue
    components[u.name] = back - stopped
    first = Math.min(first, stopped)
    end = Math.max(end, back)
  }
  return { gapMs: end > first ? end - first : 0, components }
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

export const verifyRotation = defineStep<Ctx>({
  id: 'verify-psk',
  title: 'every component holds the controller’s new PSK, strong enough; the gap measured',
  report: 'verified',
  describe: () => [
    "on hosts: read the settings file and every environment file: every component's variable is the controller's PSK, which passes the entropy check; on Kubernetes: the stack file's version agrees with the cluster (every component reads the one PSK Secret)",
    'measure the gap: how long each component was disconnected (its stop, or the start of the step that gives the key, to its passing check), and the whole gap',
  ],
  async act(ctx) {
    const checks = await ctx.platform.verifyConfig(releaseOf(ctx))
    if (checks.some((c) => !c.ok)) throw new OperationError(`The PSK is not the same strong key everywhere: ${failedChecks(checks)}.`)
    const gap = measureGap(ctx)
    const longest = Object.entries(gap.components).sort((a, b) => b[1] - a[1])[0]
    const from = ctx.platform.psk?.apply ? `the start of ${ctx.platform.psk.apply.what}` : 'the first stop'
    return {
      changed: [
        `disconnected for ${seconds(gap.gapMs)} in all (${from} to the last reconnection)${longest ? `; longest ${longest[0]} ${seconds(longest[1])}` : ''}`,
      ],
      data: { ...gap, checks },
    }
  },
})

/** What the record of a rotation holds: every unit, the release read by its first step. */
const paramsOf = (env: Environment): LiveParams => ({
  components: liveUnitNames(env),
  previousVersions: {},
  acks: [],
  batchSize: 1,
  maxFail: '0',
})

/** The live system as the engine runs a rotation, every run following `playbook`. */
export function pskRotateSystem(playbook: Playbook<LiveContext, LiveParams>): PskRotateSystem {
  const upgrade = liveSystem(playbook)
  return {
    ...liveDescription,
    newRun(req) {
      return { kind: 'psk-rotate', targetVersion: '', autoRollback: true, params: paramsOf(req.env) }
    },
    announce: (run, env) => `Run ${run.id}: rotate the PSK of the live production system of '${env.name}'.`,
    // The live system's lock and context, as the upgrade takes and opens them.
    lock: (env, run, options) => upgrade.lock(env, run, options),
    open: (env, journal, options) => upgrade.open(env, journal, options),
    openToPlan: (env, journal) => upgrade.openToPlan(env, journal),
    playbook: () => playbook,
    plan: {
      title: (plan) => `Dry run: rotate the PSK of the live production system of '${plan.environment}' (nothing will be changed).`,
      facts: () => ({}),
      lines: (plan) => [
        `Lock: the run lock of the live system of '${plan.environment}' (refused beside a running or interrupted run)`,
        `Order: stop ${[...LIVE_COMPONENTS].reverse().join(', ')}; write the key (on Kubernetes: a new pskRotation, then pulumi up); start and check ${LIVE_COMPONENTS.join(', ')}`,
      ],
      continuation: () => ({ what: 'PSK rotation', unfinished: 'it did not finish', more: [] }),
      nothingToUndo: 'no component was stopped by this run',
    },
  }
}

/** What the verify step of a finished rotation said of the gap (its report's timeline), or undefined. */
export function gapLine(report: unknown): string | undefined {
  const timeline = (report as Partial<RunReport> | undefined)?.timeline ?? []
  const said = timeline.findLast((e) => e.step === verifyRotation.id && e.status === 'ok')?.changed?.[0]
  return said ? `The gap: components ${said}.` : undefined
}
