/**
 * The steps of the live playbooks, each declared once for the run and the dry run: the preflight
 * (installed versions, packages staged), the gates, the configuration check, the backup of every
 * file the run may touch, stop, the configuration svcops writes itself (PSK, settings file, TCP
 * endpoint), install, start and check per component, the check of the whole system, and the
 * restore of the backed-up files for the rollback. Each is idempotent or journaled once, so a
 * resumed run repeats only what is safe to repeat.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { BadInputError, OperationError } from '../core/errors.ts'
import { redact } from '../core/redact.ts'
import { hostPath } from '../drivers/transports.ts'
import { generatePsk } from '../releases/pre-shared-key.ts'
import { apiPrefix, compareVersions } from '../releases/versions.ts'
import { HostFailure } from '../runs/engine.ts'
import { defineStep, stepName, type StepResult } from '../runs/step.ts'
import { checkComponent, connectionStatus, controllerStatus, failedChecks } from './hosts/live-host-checks.ts'
import {
  backupStackValues,
  checkClusterComponent,
  checkClusterConfig,
  describeClusterCheck,
  describeClusterConfigCheck,
  describeClusterRestore,
  describeClusterWrite,
  describeStackBackup,
  liveClusterOf,
  restoreClusterConfig,
  verifyClusterSystem,
  writeClusterConfig,
} from './kubernetes/live-cluster-config.ts'
import { describeLiveClusterPreflight, liveClusterPreflight } from './kubernetes/live-cluster.ts'
import { NEW_PSK_PLACEHOLDER, planConfig, readConfigState, type ConfigPlan } from './hosts/config-change.ts'
import type { ComponentHandle, LiveContext } from './live-context.ts'
import { assertGatesClear, describeGates, evaluateGates } from './gates.ts'
import { fileDiff, readHostFile, removeHostFile, writeHostFile } from './hosts/host-files.ts'
import { componentEnvFile, componentPackage, settingsCandidates, LIVE_COMPONENTS } from './layout.ts'

type Ctx = LiveContext
type C = ComponentHandle

/** The release installed before the run (what the rollback returns to); from the preflight. */
export function fromVersion(ctx: Ctx): string {
  const versions = Object.values(ctx.journal.run.previousVersions)
  return versions[0] ?? ''
}

async function installedVersions(ctx: Ctx): Promise<Record<string, string | undefined>> {
  const out: Record<string, string | undefined> = {}
  for (const c of ctx.components) out[c.name] = await ctx.platform.installedVersion(c.name)
  return out
}

export const preflight = defineStep<Ctx>({
  id: 'preflight',
  title: 'read the installed release of every component; refuse mixed releases and downgrades',
  once: true,
  describe: (ctx) => [
    `read the installed version of ${ctx.components.map((c) => componentPackage(ctx.product, c.name)).join(', ')} on ${ctx.host.name}`,
    `check that ${ctx.journal.run.targetVersion} is newer than all of them${ctx.cluster ? '' : ' and that their package files exist'}`,
    ...(ctx.cluster ? describeLiveClusterPreflight(ctx.cluster, ctx.env) : []),
  ],
  preview: (ctx) => readPreflight(ctx),
  async act(ctx) {
    const result = await readPreflight(ctx)
    // On Kubernetes: the CLI, the stack, the API, the rights, and a preview without anybody else's change.
    if (!ctx.cluster) return result
    const cluster = await liveClusterPreflight(ctx.cluster, ctx.env, fromVersion(ctx))
    return { data: { ...result.data, cluster } }
  },
})

async function readPreflight(ctx: Ctx): Promise<StepResult> {
  const to = ctx.journal.run.targetVersion
  const versions = await installedVersions(ctx)
  const missing = Object.entries(versions).filter(([, v]) => !v)
  if (missing.length)
    throw new OperationError(
      `${missing.map(([c]) => componentPackage(ctx.product, c as C['name'])).join(', ')} not installed on ${ctx.host.name}.`,
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
  if (compareVersions(from, to) === 0)
    throw new BadInputError(`--to: ${to} is already installed on ${ctx.host.name}; there is nothing to upgrade.`)
  if (compareVersions(from, to) > 0)
    throw new BadInputError(
      `--to: ${to} is older than the installed ${from}; expected a newer release (a live upgrade does not go down).`,
      `To undo an upgrade: svcops rollback live --env ${ctx.env.name}`,
    )
  // Both packages of every component must exist before anything is staged: the rollback needs the current one.
  for (const c of ctx.components) for (const v of [to, from]) ctx.platform.assertAvailable(c.name, v)
  if (!Object.keys(ctx.journal.run.previousVersions).length)
    ctx.journal.update({ previousVersions: Object.fromEntries(Object.entries(versions).map(([c, v]) => [c, v ?? ''])) })
  return { data: { from, versions } }
}

export const stagePackages = defineStep<Ctx, [C]>({
  id: 'stage',
  title: 'make the target and the current package available on the host (nothing stops for a download)',
  describe: (ctx, c) => [
    ...new Set([
      ...ctx.platform.describe('stage', c.name, ctx.journal.run.targetVersion),
      ...(fromVersion(ctx) ? ctx.platform.describe('stage', c.name, fromVersion(ctx)) : []),
    ]),
  ],
  async act(ctx, c) {
    const changed = [
      ...(await ctx.platform.stage(c.name, ctx.journal.run.targetVersion)),
      ...(await ctx.platform.stage(c.name, fromVersion(ctx))),
    ]
    if (ctx.cluster) return { skipped: 'nothing to stage: the kubelet pulls the image when the new pod starts' }
    return changed.length ? { changed } : { skipped: 'both packages already staged' }
  },
})

export const checkGates = defineStep<Ctx>({
  id: 'gates',
  title: 'blocking gates: what only people can fix, checked by svcops or acknowledged with --ack',
  once: true,
  describe: (ctx) => describeGates(evaluateGates(ctx.live, fromVersion(ctx), ctx.journal.run.targetVersion, ctx.journal.run.acks ?? [])),
  act(ctx) {
    const from = fromVersion(ctx)
    const to = ctx.journal.run.targetVersion
    const gates = evaluateGates(ctx.live, from, to, ctx.journal.run.acks ?? [])
    assertGatesClear(gates, from, to)
    return Promise.resolve({
      // Shown in the report's timeline: which gate was cleared how.
      ...(gates.length ? { changed: gates.map((g) => `gate ${g.id} ${g.state}: ${g.detail}`) } : {}),
      data: { gates: gates.map((g) => ({ id: g.id, state: g.state, detail: g.detail })) },
    })
  },
})

/** The configuration change of this run, computed from the host's files (with a placeholder PSK in the dry run). */
async function configPlan(ctx: Ctx, newPsk: () => string): Promise<ConfigPlan> {
  const from = fromVersion(ctx)
  const to = ctx.journal.run.targetVersion
  const state = await readConfigState(ctx.live, ctx.host, from, to)
  return planConfig(ctx.live, state, from, to, { newPsk, tcpEndpoint: ctx.journal.run.tcpEndpoint })
}

export const checkConfig = defineStep<Ctx>({
  id: 'check-config',
  title: 'read the settings file and every environment file; refuse what svcops cannot change for people',
  describe: (ctx) => {
    const cluster = liveClusterOf(ctx)
    if (cluster) return describeClusterConfigCheck(cluster, fromVersion(ctx), ctx.journal.run.targetVersion)
    return [
      `read ${settingsCandidates(ctx.live).join(', ')} and ${LIVE_COMPONENTS.map((c) => componentEnvFile(ctx.product, c)).join(', ')}`,
      'refuse several TCP endpoints where the target takes one, and a missing settings file where the target needs a PSK',
    ]
  },
  async act(ctx) {
    const cluster = liveClusterOf(ctx)
    if (cluster) return checkClusterConfig(cluster, ctx.journal.run.targetVersion)
    const plan = await configPlan(ctx, () => NEW_PSK_PLACEHOLDER)
    return { data: { files: plan.changes.map((c) => c.path) } }
  },
})

/** Backed-up files as the journal records them (never their content). */
interface BackedUp {
  path: string
  existed: boolean
  backup?: string
  sha256?: string
}

function backupName(path: string): string {
  return `backup/${path.replace(/^\/+/, '').replaceAll('/', '__')}`
}

export const backupFiles = defineStep<Ctx>({
  id: 'backup',
  title: 'back up every settings and environment file the run may touch (run folder, 0600)',
  once: true,
  describe: (ctx) => {
    const cluster = liveClusterOf(ctx)
    if (cluster) return describeStackBackup(cluster)
    return [
      `copy ${[...settingsCandidates(ctx.live), ...LIVE_COMPONENTS.map((c) => componentEnvFile(ctx.product, c))]
        .map((p) => hostPath(ctx.host.config, p))
        .join(', ')} (those that exist) to ${ctx.journal.file('backup')}/ with mode 0600`,
    ]
  },
  async act(ctx) {
    const cluster = liveClusterOf(ctx)
    if (cluster) return backupStackValues(cluster)
    const paths = [...settingsCandidates(ctx.live), ...LIVE_COMPONENTS.map((c) => componentEnvFile(ctx.product, c))]
    mkdirSync(ctx.journal.file('backup'), { recursive: true, mode: 0o700 })
    const files: BackedUp[] = []
    for (const path of paths) {
      const text = await readHostFile(ctx.host, path)
      if (text === undefined) {
        files.push({ path, existed: false })
        continue
      }
      const name = backupName(path)
      writeFileSync(ctx.journal.file(name), text, { mode: 0o600 })
      files.push({ path, existed: true, backup: name, sha256: createHash('sha256').update(text).digest('hex') })
    }
    const kept = files.filter((f) => f.existed)
    return { changed: kept.map((f) => `backed up ${f.path}`), data: { files } }
  },
})

export const stopComponent = defineStep<Ctx, [C]>({
  id: 'stop',
  title: 'stop the component',
  disruptive: true,
  describe: (ctx, c) => ctx.platform.describe('stop', c.name),
  async act(ctx, c) {
    await ctx.platform.stop(c.name)
    return { changed: [`stopped ${componentPackage(ctx.product, c.name)}`] }
  },
})

/** The file changes as diffs, secrets masked. */
function showChanges(ctx: Ctx, plan: ConfigPlan): string[] {
  if (!plan.changes.length) return ['nothing to change: the files already suit the target']
  return plan.changes.flatMap((ch) => [
    `${ch.after === undefined ? 'remove' : 'write'} ${hostPath(ctx.host.config, ch.path)}${ch.after === undefined ? '' : ' (0600)'}${ch.why.length ? `: ${ch.why.join('; ')}` : ''}`,
    ...fileDiff(hostPath(ctx.host.config, ch.path), ch.before, ch.after, redact).map((l) => `    ${l}`),
  ])
}

export const writeConfig = defineStep<Ctx>({
  id: 'write-config',
  title: 'write what the target needs: PSK in the settings file and every environment together, settings file moved, TCP endpoint renamed',
  describe: async (ctx) => {
    const cluster = liveClusterOf(ctx)
    if (cluster) return describeClusterWrite(cluster, fromVersion(ctx), ctx.journal.run.targetVersion)
    return showChanges(ctx, await configPlan(ctx, () => NEW_PSK_PLACEHOLDER))
  },
  async act(ctx) {
    const cluster = liveClusterOf(ctx)
    if (cluster) return writeClusterConfig(cluster, fromVersion(ctx), ctx.journal.run.targetVersion)
    const plan = await configPlan(ctx, () => generatePsk())
    // Settings where the target reads them first, then the environments, then the old settings file removed.
    for (const ch of plan.changes) {
      if (ch.after === undefined) await removeHostFile(ctx.host, ch.path)
      else await writeHostFile(ctx.host, ch.path, ch.after)
    }
    if (!plan.changes.length) return { skipped: 'the files already suit the target' }
    return {
      changed: plan.changes.map(
        (ch) => `${ch.after === undefined ? 'removed' : 'wrote'} ${ch.path}${ch.why.length ? `: ${ch.why.join('; ')}` : ''}`,
      ),
      data: {
        ...(plan.newPsk ? { newPsk: plan.newPsk } : {}),
        ...(plan.moved ? { moved: plan.moved } : {}),
        ...(plan.tcp ? { tcp: plan.tcp } : {}),
      },
    }
  },
})

export const installComponent = defineStep<Ctx, [C, string]>({
  id: 'install',
  title: 'install the component’s package of the release',
  async describe(ctx, c, version) {
    const current = await ctx.platform.installedVersion(c.name)
    return [`install ${version} over ${current ?? 'nothing'}: ${ctx.platform.describe('install', c.name, version).join(' && ')}`]
  },
  async act(ctx, c, version) {
    const current = await ctx.platform.installedVersion(c.name)
    const pkg = componentPackage(ctx.product, c.name)
    if (current === version) return { skipped: `${pkg} ${version} is already installed` }
    await ctx.platform.install(c.name, version)
    const now = await ctx.platform.installedVersion(c.name)
    if (now !== version)
      throw new HostFailure(c.name, 'install', `After installing ${pkg} ${version}, the installed version is ${now ?? 'none'}.`)
    return { changed: [`installed ${pkg} ${version} over ${current ?? 'nothing'}`], data: { from: current ?? null, to: version } }
  },
})

export const startComponent = defineStep<Ctx, [C]>({
  id: 'start',
  title: 'start the component',
  describe: (ctx, c) => ctx.platform.describe('start', c.name),
  async act(ctx, c) {
    const cursor = await ctx.platform.start(c.name)
    return { changed: [`started ${componentPackage(ctx.product, c.name)}`], data: { ...(cursor ? { logCursor: cursor } : {}) } }
  },
})

/** What the check of a started component does on a host. */
function describeHostCheck(ctx: Ctx, c: C, version: string): string[] {
  return [
    ...ctx.platform.describe('status', c.name),
    `wait up to ${Math.round(ctx.connectTimeoutMs / 1000)} s until it runs and ${c.name === 'system-controller' ? 'answers on the prefix of ' + version : 'the controller lists it connected as ' + version}`,
    `read its log since the start for ERROR lines; GET /metrics on port ${ctx.live.metricsPorts[c.name]} for the metric names of ${version}`,
  ]
}

export const checkStarted = defineStep<Ctx, [C, string]>({
  id: 'check',
  title: 'check: running, no error lines, connected to the controller, the controller on the release’s prefix, the release’s metrics',
  report: 'verified',
  describe: (ctx, c, version) => {
    const cluster = liveClusterOf(ctx)
    return cluster ? describeClusterCheck(cluster, c.name, version) : describeHostCheck(ctx, c, version)
  },
  async act(ctx, c, version) {
    const started = ctx.journal.finished(stepName(startComponent, phaseOf(ctx)), c.name)
    const cursor = typeof started?.data?.logCursor === 'string' ? started.data.logCursor : undefined
    const cluster = liveClusterOf(ctx)
    const results = cluster
      ? await checkClusterComponent(cluster, c.name, version, ctx.connectTimeoutMs)
      : await checkComponent(ctx, c.name, version, { cursor, waitMs: ctx.connectTimeoutMs })
    if (results.some((r) => !r.ok))
      throw new HostFailure(c.name, 'check', `${c.name} ${version} on ${ctx.host.name}: ${failedChecks(results)}.`)
    return { data: { checks: results } }
  },
})

/** The phase whose `start` entry the check reads: the rollback's own start, when rolling back. */
function phaseOf(ctx: Ctx): '' | 'rollback:' {
  return ctx.journal.run.phase === 'rolling-back' ? 'rollback:' : ''
}

export const verifySystem = defineStep<Ctx, [string]>({
  id: 'verify',
  title: 'the whole system: the controller on the release’s prefix lists every component connected at the release',
  describe: (ctx, version) =>
    ctx.cluster
      ? [
          `GET ${ctx.cluster.reach === 'port-forward' ? 'http://127.0.0.1:PORT (port-forward to the Service)' : ctx.live.controllerUrl.replace(/\/+$/, '')}${apiPrefix(version)}/status; the version of every Deployment; the stack file's version agrees`,
        ]
      : [
          `GET ${ctx.live.controllerUrl.replace(/\/+$/, '')}${apiPrefix(version)}/status and ${apiPrefix(version)}/components; the installed version of every component`,
        ],
  async act(ctx, version) {
    const cluster = liveClusterOf(ctx)
    if (cluster) {
      const checks = await verifyClusterSystem(cluster, version)
      if (checks.some((r) => !r.ok)) throw new OperationError(`The live system is not whole on ${version}: ${failedChecks(checks)}.`)
      return { data: { checks } }
    }
    const results = [await controllerStatus(ctx, version)]
    for (const c of ctx.components.filter((x) => x.name !== 'system-controller')) results.push(await connectionStatus(ctx, c.name, version))
    const versions: Record<string, string | undefined> = {}
    for (const c of ctx.components) versions[c.name] = await ctx.platform.installedVersion(c.name)
    const wrong = Object.entries(versions).filter(([, v]) => v !== version)
    if (wrong.length)
      results.push({ check: `every component on ${version}`, ok: false, detail: wrong.map(([c, v]) => `${c} ${String(v)}`).join(', ') })
    if (results.some((r) => !r.ok)) throw new OperationError(`The live system is not whole on ${version}: ${failedChecks(results)}.`)
    return { data: { versions, checks: results } }
  },
})

/** The backup step's record of this run, from the journal. */
function backedUp(ctx: Ctx): BackedUp[] | undefined {
  const files = ctx.journal.finished(stepName(backupFiles))?.data?.files
  return Array.isArray(files) ? (files as BackedUp[]) : undefined
}

export const restoreConfig = defineStep<Ctx>({
  id: 'restore-config',
  title: 'put back every settings and environment file (and so the PSK) from the run’s backup',
  describe(ctx) {
    const cluster = liveClusterOf(ctx)
    if (cluster) return describeClusterRestore(cluster)
    const files = backedUp(ctx)
    if (!files) return ['the run backed up nothing: no file was changed']
    return files.map((f) =>
      f.existed
        ? `restore ${hostPath(ctx.host.config, f.path)} from ${ctx.journal.file(f.backup ?? '')} (0600)`
        : `remove ${hostPath(ctx.host.config, f.path)} if present (it did not exist before the run)`,
    )
  },
  async act(ctx) {
    const cluster = liveClusterOf(ctx)
    if (cluster) return restoreClusterConfig(cluster)
    const files = backedUp(ctx)
    if (!files) return { skipped: 'the run backed up nothing: no file was changed' }
    const changed: string[] = []
    for (const f of files) {
      const now = await readHostFile(ctx.host, f.path)
      if (!f.existed) {
        if (now !== undefined) {
          await removeHostFile(ctx.host, f.path)
          changed.push(`removed ${f.path}`)
        }
        continue
      }
      const text = readFileSync(ctx.journal.file(f.backup ?? ''), 'utf8')
      if (f.sha256 && createHash('sha256').update(text).digest('hex') !== f.sha256)
        throw new OperationError(
          `The backup of ${f.path} in ${ctx.journal.dir} does not match its checksum; it was changed after the run wrote it.`,
        )
      if (now !== text) {
        await writeHostFile(ctx.host, f.path, text)
        changed.push(`restored ${f.path}`)
      }
    }
    return changed.length ? { changed } : { skipped: 'every file is as before the run' }
  },
})
