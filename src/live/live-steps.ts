/**
 * The steps of the live playbooks, each declared once for the run and the dry run and done through
 * the platform the system runs on (live-platform.ts): the preflight (installed versions, packages
 * staged), the gates, the configuration check, the backup of everything the run may change, stop,
 * the configuration svcops writes itself (PSK, settings file, TCP endpoint), install, start and
 * check per component, the check of the whole system, and the restore of what was backed up for
 * the rollback. Each is idempotent or journaled once, so a resumed run repeats only what is safe to
 * repeat.
 */
import type { z } from 'zod'
import { BadInputError, OperationError } from '../core/errors.ts'
import { compareVersions } from '../releases/versions.ts'
import { events } from '../core/events.ts'
import { HostFailure, type Run } from '../runs/engine.ts'
import { defineStep, finishedData, type StepResult } from '../runs/step.ts'
import { assertGatesClear, describeGates, evaluateGates } from './gates.ts'
import { componentPackage } from './layout.ts'
import type { ComponentHandle, LiveContext } from './live-context.ts'
import { failedChecks } from './live-judge.ts'
import type { RoomReading } from './live-platform.ts'
import { checkRoom } from './live-room.ts'
import {
  CONFIG_STEPS,
  configDataSchema,
  gatesDataSchema,
  liveBackupDataSchema,
  preflightDataSchema,
  startDataSchema,
  type LiveBackupData,
} from './live-step-data.ts'

type Ctx = LiveContext
type C = ComponentHandle

/**
 * The release installed before the run (what the rollback returns to); from the preflight. A dry
 * run whose preflight could not read it plans from `--from` (`plannedFrom`) when given; otherwise ''.
 */
export function fromVersion(ctx: Ctx): string {
  const versions = Object.values(ctx.journal.run.params.previousVersions)
  return versions[0] ?? ctx.journal.run.params.plannedFrom ?? ''
}

/** The one sentence a dry run's step shows in place of what depends on the running release when nobody knows it. */
function unknownFrom(ctx: Ctx): string {
  return `the release running on ${ctx.platform.where} could not be read (see the preflight), so this depends on it: give --from VERSION to plan from that release`
}

async function installedVersions(ctx: Ctx): Promise<Record<string, string | undefined>> {
  const out: Record<string, string | undefined> = {}
  for (const u of ctx.units) out[u.name] = await ctx.platform.installedVersion(u)
  return out
}

/** A unit in a sentence: its package, and its host when the system is spread over several (`svc-ingest on live-2`). */
export function unitWords(ctx: Ctx, u: C): string {
  return `${componentPackage(ctx.product, u.component)}${u.name === u.component ? '' : ` on ${u.host}`}`
}

export const preflight = defineStep<Ctx, [], z.infer<typeof preflightDataSchema>>({
  id: 'preflight',
  title: 'read the installed release of every component; refuse mixed releases, downgrades and too little room for the staging',
  once: true,
  data: preflightDataSchema,
  describe: (ctx) => {
    const platform = ctx.platform.describePreflight(ctx.journal.run.targetVersion)
    return [
      `read the installed version of ${[...new Set(ctx.units.map((u) => componentPackage(ctx.product, u.component)))].join(', ')} on ${ctx.platform.where}`,
      `check that ${ctx.journal.run.targetVersion} is newer than all of them${platform.versionCheck}`,
      ...platform.more,
      ...ctx.platform.describeRoom().map((d) => `room before anything is staged (what is written there plus 20%): ${d}`),
      ...(ctx.journal.run.params.plannedFrom
        ? [`--from ${ctx.journal.run.params.plannedFrom}: planned from only when the running release cannot be read`]
        : []),
    ]
  },
  // The dry run reads the room too: it fails where the run would.
  async preview(ctx) {
    const result = await readPreflight(ctx)
    const room = await roomFor(ctx, result)
    return room ? { data: { ...result.data, room } } : result
  },
  async act(ctx) {
    const result = await readPreflight(ctx)
    // The platform's own checks (on Kubernetes: the CLI, the stack, the API, the rights, a preview without anybody else's change).
    const platform = await ctx.platform.checkPreflight(fromVersion(ctx))
    const room = await roomFor(ctx, result)
    return { data: { ...result.data, ...platform, ...(room ? { room } : {}) } }
  },
})

/** The room for what the run writes before its first stop (live-room.ts); none read when already on the target (a no-op writes nothing). */
async function roomFor(ctx: Ctx, preflight: StepResult): Promise<RoomReading[] | undefined> {
  const from = typeof preflight.data?.from === 'string' ? preflight.data.from : ''
  const to = ctx.journal.run.targetVersion
  return from && from !== to ? checkRoom(ctx, from, to) : undefined
}

async function readPreflight(ctx: Ctx): Promise<StepResult> {
  const to = ctx.journal.run.targetVersion
  const versions = await installedVersions(ctx)
  const missing = ctx.units.filter((u) => !versions[u.name])
  if (missing.length)
    throw new OperationError(
      `${missing.map((u) => componentPackage(ctx.product, u.component) + (u.name === u.component ? '' : ` (${u.host})`)).join(', ')} not installed on ${ctx.platform.where}.`,
    )
  const distinct = [...new Set(Object.values(versions))]
  if (distinct.length > 1)
    throw new OperationError(
      `The components run different releases (${Object.entries(versions)
        .map(([c, v]) => `${c} ${v ?? '?'}`)
        .join(', ')}); an unfinished run may have left them so.`,
      `Finish it: svcops runs list, then svcops resume ID or svcops rollback live --env ${ctx.env.name}`,
    )
  const from = distinct[0] as string
  // Already on the target: the preflight passes and alreadyOnTarget ends the run as a no-op.
  if (compareVersions(from, to) > 0)
    throw new BadInputError(
      `--to: ${to} is older than what ${ctx.platform.where} runs (${from}); an upgrade never goes down, nothing was changed.`,
      `To go back to ${to}: svcops rollback live --env ${ctx.env.name} (it rolls back the newest live upgrade run; --run ID for another)`,
    )
  // Both packages of every component must exist before anything is staged: the rollback needs the current one.
  for (const u of ctx.units) for (const v of [to, from]) ctx.platform.assertAvailable(u, v)
  if (!Object.keys(ctx.journal.run.params.previousVersions).length)
    ctx.journal.updateParams({ previousVersions: Object.fromEntries(Object.entries(versions).map(([c, v]) => [c, v ?? ''])) })
  return { data: { from, versions } }
}

/**
 * True when every component already runs the target release (read by the preflight) and is
 * running: the run changes nothing — no stop, no restart — and ends as `no-op` ("Already on V").
 * Scheduled upgrades with a fixed release rely on it. A component on V that is stopped is not
 * "already on V": the run goes on and starts it.
 */
export async function alreadyOnTarget(run: Run<Ctx>): Promise<boolean> {
  const { ctx } = run
  const record = ctx.journal.run
  const versions = record.params.previousVersions
  if (run.resumed || !ctx.units.length || !ctx.units.every((u) => versions[u.name] === record.targetVersion)) return false
  for (const u of ctx.units) if (!(await ctx.platform.status(u)).running) return false
  events.info(`Already on ${record.targetVersion}: every component on ${ctx.platform.where}; nothing to do, nothing was changed.`)
  if (!run.planning) ctx.journal.update({ phase: 'no-op', finishedAt: new Date().toISOString() })
  return true
}

export const stagePackages = defineStep<Ctx, [C]>({
  id: 'stage',
  title: 'make the target and the current package available on the host (nothing stops for a download)',
  describe: (ctx, c) => [
    ...new Set([
      ...ctx.platform.describe('stage', c, ctx.journal.run.targetVersion),
      ...(fromVersion(ctx) ? ctx.platform.describe('stage', c, fromVersion(ctx)) : []),
    ]),
  ],
  act: (ctx, c) => ctx.platform.stage(c, [ctx.journal.run.targetVersion, fromVersion(ctx)]),
})

export const checkGates = defineStep<Ctx, [], z.infer<typeof gatesDataSchema>>({
  id: 'gates',
  title: 'blocking gates: what only people can fix, checked by svcops or acknowledged with --ack',
  once: true,
  data: gatesDataSchema,
  describe: (ctx) =>
    fromVersion(ctx)
      ? describeGates(evaluateGates(ctx.live, fromVersion(ctx), ctx.journal.run.targetVersion, ctx.journal.run.params.acks ?? []))
      : [`the gates of the majors crossed: ${unknownFrom(ctx)}`],
  // The dry run refuses where the run would: an open gate ends it with the gates' ids (exit 5).
  preview(ctx) {
    const from = fromVersion(ctx)
    const to = ctx.journal.run.targetVersion
    // Without a release to plan from, the preflight's refusal is the dry run's answer.
    if (!from) return Promise.resolve({})
    assertGatesClear(evaluateGates(ctx.live, from, to, ctx.journal.run.params.acks ?? []), from, to)
    return Promise.resolve({})
  },
  act(ctx) {
    const from = fromVersion(ctx)
    const to = ctx.journal.run.targetVersion
    const gates = evaluateGates(ctx.live, from, to, ctx.journal.run.params.acks ?? [])
    assertGatesClear(gates, from, to)
    return Promise.resolve({
      // Shown in the report's timeline: which gate was cleared how.
      ...(gates.length ? { changed: gates.map((g) => `gate ${g.id} ${g.state}: ${g.detail}`) } : {}),
      data: { gates: gates.map((g) => ({ id: g.id, state: g.state, detail: g.detail })) },
    })
  },
})

export const checkConfig = defineStep<Ctx>({
  id: 'check-config',
  title: 'read the settings file and every environment file; refuse what svcops cannot change for people',
  describe: (ctx) => ctx.platform.describeConfigCheck(fromVersion(ctx), ctx.journal.run.targetVersion),
  act: (ctx) => ctx.platform.checkConfig(fromVersion(ctx), ctx.journal.run.targetVersion),
})

export const backupFiles = defineStep<Ctx, [], LiveBackupData>({
  id: 'backup',
  title: 'back up every settings and environment file the run may touch (run folder, 0600)',
  once: true,
  data: liveBackupDataSchema,
  describe: (ctx) => ctx.platform.describeConfigBackup(),
  act: (ctx) => ctx.platform.backupConfig(),
})

export const stopComponent = defineStep<Ctx, [C]>({
  id: 'stop',
  title: 'stop the component',
  disruptive: true,
  describe: (ctx, c) => ctx.platform.describe('stop', c),
  async act(ctx, c) {
    await ctx.platform.stop(c)
    return { changed: [`stopped ${unitWords(ctx, c)}`] }
  },
})

export const writeConfig = defineStep<Ctx, [], z.infer<typeof configDataSchema>>({
  id: CONFIG_STEPS.write,
  data: configDataSchema,
  title: 'write what the target needs: PSK in the settings file and every environment together, settings file moved, TCP endpoint renamed',
  describe: (ctx) =>
    fromVersion(ctx)
      ? ctx.platform.describeConfigWrite(fromVersion(ctx), ctx.journal.run.targetVersion)
      : Promise.resolve([`the PSK, settings file and TCP endpoint the target needs: ${unknownFrom(ctx)}`]),
  act: (ctx) => ctx.platform.writeConfig(fromVersion(ctx), ctx.journal.run.targetVersion),
})

export const installComponent = defineStep<Ctx, [C, string]>({
  id: 'install',
  title: 'install the component’s package of the release',
  async describe(ctx, c, version) {
    if (!version) return [`the package of the release gone back to: ${unknownFrom(ctx)}`]
    // A dry run that cannot reach the system (its preflight says why) still shows the commands.
    const current = await ctx.platform.installedVersion(c).then(
      (v) => v ?? 'nothing',
      () => 'the running release (not read: see the preflight)',
    )
    return [`install ${version} over ${current}: ${ctx.platform.describe('install', c, version).join(' && ')}`]
  },
  async act(ctx, c, version) {
    const current = await ctx.platform.installedVersion(c)
    const pkg = componentPackage(ctx.product, c.component)
    const at = c.name === c.component ? '' : ` on ${c.host}`
    if (current === version) return { skipped: `${pkg} ${version} is already installed${at}` }
    await ctx.platform.install(c, version)
    const now = await ctx.platform.installedVersion(c)
    if (now !== version)
      throw new HostFailure(c.name, 'install', `After installing ${pkg} ${version}${at}, the installed version is ${now ?? 'none'}.`)
    return { changed: [`installed ${pkg} ${version} over ${current ?? 'nothing'}${at}`], data: { from: current ?? null, to: version } }
  },
})

export const startComponent = defineStep<Ctx, [C], { logCursor?: string }>({
  id: 'start',
  title: 'start the component',
  data: startDataSchema,
  describe: (ctx, c) => ctx.platform.describe('start', c),
  async act(ctx, c) {
    const cursor = await ctx.platform.start(c)
    return { changed: [`started ${unitWords(ctx, c)}`], data: { ...(cursor ? { logCursor: cursor } : {}) } }
  },
})

export const checkStarted = defineStep<Ctx, [C, string]>({
  id: 'check',
  title: 'check: running, no error lines, connected to the controller, the controller on the release’s prefix, the release’s metrics',
  report: 'verified',
  describe: (ctx, c, version) =>
    version ? ctx.platform.describeCheck(c, version) : [`the checks of the release gone back to: ${unknownFrom(ctx)}`],
  async act(ctx, c, version) {
    const cursor = finishedData(ctx.journal, startComponent, { phase: phaseOf(ctx), host: c.name })?.logCursor
    const results = await ctx.platform.checkComponent(c, version, { cursor, waitMs: ctx.platform.connectTimeoutMs })
    if (results.some((r) => !r.ok))
      throw new HostFailure(
        c.name,
        'check',
        `${c.component} ${version} on ${c.name === c.component ? ctx.platform.where : c.host}: ${failedChecks(results)}.`,
      )
    return { data: { checks: results } }
  },
})

/** The phase whose `start` entry the check reads: the rollback's own start, when rolling back. */
function phaseOf(ctx: Ctx): '' | 'rollback:' {
  return ctx.journal.run.phase === 'rolling-back' ? 'rollback:' : ''
}

export const verifySystem = defineStep<Ctx, [string, string[]]>({
  id: 'verify',
  title: 'the whole system: the controller on the release’s prefix lists every component connected at the release',
  describe: (ctx, version, leftOut) => [
    ...(version ? ctx.platform.describeSystemCheck(version) : [`the checks of the release gone back to: ${unknownFrom(ctx)}`]),
    ...(leftOut.length ? [`except ${leftOut.join(', ')}: failed within --max-fail and stopped`] : []),
  ],
  async act(ctx, version, leftOut) {
    const { checks, data } = await ctx.platform.checkSystem(version, leftOut)
    if (checks.some((r) => !r.ok)) throw new OperationError(`The live system is not whole on ${version}: ${failedChecks(checks)}.`)
    return { data: { ...data, checks } }
  },
})

/** What the backup step journaled in this run (the files kept, or the stack file's values), its shape checked. */
function backedUp(ctx: Ctx): LiveBackupData | undefined {
  return finishedData(ctx.journal, backupFiles)
}

export const restoreConfig = defineStep<Ctx, [], z.infer<typeof configDataSchema>>({
  id: CONFIG_STEPS.restore,
  data: configDataSchema,
  title: 'put back every settings and environment file (and so the PSK) from the run’s backup',
  describe: (ctx) => ctx.platform.describeConfigRestore(backedUp(ctx)),
  act: (ctx) => ctx.platform.restoreConfig(backedUp(ctx)),
})
