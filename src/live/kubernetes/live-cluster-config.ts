/**
 * What the live playbook's configuration steps and checks do on the Kubernetes platform, where the
 * Pulumi program writes the files the host steps write: the settings Secret mounted as
 * `/etc/opt/<product_dir>` (with `--settings-path` from 6.0), the release's TCP endpoint variable,
 * the PSK from one Secret in every component. svcops only decides and confirms:
 *
 *   check-config   several `tcpEndpoints` where the target takes one: refused, naming them
 *   backup         the stack file's version and pskRotation, as they are (the journal keeps them)
 *   write-config   a new PSK through `svcops:deploy.pskRotation` when the target needs one (2.0) or
 *                  the stack's last update reported the PSK failing the entropy check (6.0); the
 *                  PSK itself is never read: the program reports only whether it passes
 *   restore-config the previous pskRotation
 *   check          pods, log lines, the pod template as the release needs it, the seed's
 *                  endpoint of the instance by UUID through the controller's Service, the
 *                  declared checks (src/live/kubernetes/controller-service.ts)
 */
import { BadInputError } from '../../core/errors.ts'
import { events } from '../../core/events.ts'
import { pulumiArgv, readStackVersion } from '../../drivers/pulumi.ts'
import {
  pskEntropyEnforced,
  pskRequired,
  pskVariable,
  settingsPathFlag,
  settingsSearchPaths,
  supportsSettingsPathFlag,
  tcpEndpointSingleValue,
  tcpEndpointVariable,
} from '../../releases/versions.ts'
import type { StepResult } from '../../runs/step.ts'
import { etcSettingsDir, LIVE_COMPONENTS, type LiveComponentName } from '../layout.ts'
import type { CheckResult } from '../live-judge.ts'
import type { LivePlatform, LiveScope } from '../live-platform.ts'
import type { CheckPlan } from '../live-checks.ts'
import type { LiveBackupData } from '../live-step-data.ts'
import { clusterCheckPlan, clusterUnitChecks, deploymentUnit, describeClusterUnitChecks } from './controller-service.ts'
import { LIVE_VERSION_KEY, PSK_ROTATION_KEY, shownPulumi, type LiveCluster } from './live-cluster-handle.ts'

/** A live run on Kubernetes: its scope, its cluster, and the platform's reads of the components. */
export interface ClusterRun extends LiveScope {
  cluster: LiveCluster
  platform: Pick<LivePlatform, 'installedVersion' | 'status' | 'errorLines' | 'describe' | 'connectTimeoutMs'>
}

type Ctx = ClusterRun

/** The stack output the program writes about the PSK: whether it passes the entropy check (never the PSK). */
export const PSK_STRENGTH_OUTPUT = 'passesEntropyCheck'

// ---- check-config ----

/** What the configuration check reads on Kubernetes (the stack file's TCP endpoints, the settings mount), for the dry run. */
export function describeClusterConfigCheck(ctx: Ctx, from: string, to: string): string[] {
  const endpoints = ctx.live.tcpEndpoints
  return [
    `svcops:deploy.live.pipeline.tcpEndpoints (${endpoints.join(', ')}): the program gives the pipeline ${tcpEndpointVariable(to, ctx.live.prefix)}` +
      `${tcpEndpointSingleValue(to) ? '; several are refused before anything changes, naming them' : ''}`,
    `the settings file: the program mounts it at ${etcSettingsDir(ctx.product)}${supportsSettingsPathFlag(to) ? ` and passes ${settingsPathFlag()} ${etcSettingsDir(ctx.product)}` : ''}` +
      ` for ${to} (from ${from || 'the installed release'})`,
  ]
}

/** Refuses what the program cannot deploy for the target: several TCP endpoints where one is taken; `--tcp-endpoint` (the stack file holds them). */
export function checkClusterConfig(ctx: Ctx, to: string): StepResult {
  if (ctx.journal.run.params.tcpEndpoint)
    throw new BadInputError(
      `--tcp-endpoint: not taken on the Kubernetes platform; the pipeline's endpoints are svcops:deploy.live.pipeline.tcpEndpoints in ${ctx.env.file}.`,
      'Keep the one endpoint there (a reviewed change of the stack file), then run again without --tcp-endpoint.',
    )
  const endpoints = ctx.live.tcpEndpoints
  if (tcpEndpointSingleValue(to) && endpoints.length > 1)
    throw new BadInputError(
      `svcops:deploy.live.pipeline.tcpEndpoints: ${endpoints.length} endpoints (${endpoints.join(', ')}); expected exactly one, since ${to} reads ${tcpEndpointVariable(to, ctx.live.prefix)}, a single endpoint that accepts several connections. Nothing was changed.`,
      `Keep one of ${endpoints.join(', ')} in ${ctx.env.file} (control panels connect to it), then run again.`,
    )
  const dir = etcSettingsDir(ctx.product)
  const read = supportsSettingsPathFlag(to) || settingsSearchPaths(to, ctx.product.dir).includes(dir) || !!ctx.live.legacySettingsDir
  if (!read)
    events.warn(
      `Release ${to} reads its settings file from a fixed directory the seed does not name; the program mounts it at ${dir}. Set svcops:deploy.live.systemController.legacySettingsDir if the image looks elsewhere.`,
    )
  return {
    data: {
      tcpVariable: tcpEndpointVariable(to, ctx.live.prefix),
      tcpEndpoints: endpoints,
      settingsDir: supportsSettingsPathFlag(to) ? `${dir} (${settingsPathFlag()})` : dir,
    },
  }
}

// ---- backup, write-config, restore-config ----

/** The stack file's values the run may change, as they are now. */
export function backupStackValues(ctx: Ctx): StepResult {
  const file = ctx.cluster.stack().stackFile
  const values = {
    version: readStackVersion(file, LIVE_VERSION_KEY) ?? null,
    pskRotation: readStackVersion(file, PSK_ROTATION_KEY) ?? null,
  }
  return { changed: [`recorded ${LIVE_VERSION_KEY} and ${PSK_ROTATION_KEY} of ${file}`], data: { stackFile: values } }
}

/** What the backup records of the stack file, for the dry run. */
export function describeStackBackup(ctx: Ctx): string[] {
  return [
    `record ${LIVE_VERSION_KEY} and ${PSK_ROTATION_KEY} of ${ctx.cluster.stack().stackFile} in the journal (the stack file is the record; it holds no PSK)`,
  ]
}

/** Why the run needs a new PSK, or undefined; `strength` reads the program's verdict only when it matters. */
async function rotationReason(ctx: Ctx, from: string, to: string, strength: () => Promise<unknown>): Promise<string | undefined> {
  if (pskRequired(to) && !pskRequired(from)) return `${to} needs a new PSK (from 2.0.0 every component connects with it)`
  if (!pskEntropyEnforced(to)) return undefined
  const verdict = await strength()
  if (verdict === true) return undefined
  if (verdict === false) return `the PSK fails the entropy check the controller enforces from 6.0.0 (the stack's last update reported it)`
  return `the stack's last update did not report whether the PSK passes the entropy check the controller enforces from 6.0.0`
}

/** The new rotation value: one per run, so a resumed run sets the same one. */
function rotationValue(ctx: Ctx): string {
  return `svcops-${ctx.journal.run.id}`
}

/** What the write of the configuration does on Kubernetes (a new pskRotation when needed), for the dry run. */
export function describeClusterWrite(ctx: Ctx, from: string, to: string): string[] {
  const set = shownPulumi(ctx.cluster, pulumiArgv.configSet(ctx.cluster.stack(), PSK_ROTATION_KEY, rotationValue(ctx)))
  const lines = [
    `the settings file (${etcSettingsDir(ctx.product)}), ${tcpEndpointVariable(to, ctx.live.prefix)} and ${pskVariable(ctx.live.prefix)} of every component: written by the program for ${to} at \`pulumi up\``,
  ]
  if (ctx.cluster.suppliedPsk)
    return [...lines, 'the PSK is the stack’s own (svcops:psk): kept; the program checks its strength at every preview']
  if (pskRequired(to) && !pskRequired(from)) return [...lines, `a new PSK, since ${to} needs one: ${set}`]
  if (pskEntropyEnforced(to))
    return [
      ...lines,
      `whether the PSK passes the entropy check of ${to}: ${shownPulumi(ctx.cluster, pulumiArgv.outputs(ctx.cluster.stack()))} (psk.${PSK_STRENGTH_OUTPUT}; the PSK is never read)`,
      `when it does not, or is not reported: ${set}`,
    ]
  return [...lines, 'the PSK is kept']
}

/** Sets a new pskRotation when the target needs a new PSK; never reads the PSK. */
export async function writeClusterConfig(ctx: Ctx, from: string, to: string): Promise<StepResult> {
  if (ctx.cluster.suppliedPsk) return { skipped: 'the PSK is the stack’s own (svcops:psk); the program checks its strength' }
  const reason = await rotationReason(ctx, from, to, async () => {
    const psk = (await ctx.cluster.pulumi().outputs()).psk
    return psk && typeof psk === 'object' ? (psk as Record<string, unknown>)[PSK_STRENGTH_OUTPUT] : undefined
  })
  if (!reason) return { skipped: `the PSK passes what ${to} needs; pskRotation kept` }
  const file = ctx.cluster.stack().stackFile
  const before = readStackVersion(file, PSK_ROTATION_KEY) ?? 'initial'
  const value = rotationValue(ctx)
  if (before !== value) await ctx.cluster.pulumi().setVersion(PSK_ROTATION_KEY, value)
  return {
    changed: [`set ${PSK_ROTATION_KEY} = ${value} in ${file} (was ${before}): ${reason}`],
    data: { pskRotation: { from: before, to: value }, reason },
  }
}

/** The stack file's values before the run, from the backup step's record (its shape checked: live-step-data.ts). */
function recordedValues(backup: LiveBackupData | undefined): LiveBackupData['stackFile'] {
  return backup?.stackFile
}

/** What the restore puts back in the stack file, for the dry run. */
export function describeClusterRestore(ctx: Ctx, backup: LiveBackupData | undefined): string[] {
  const before = recordedValues(backup)
  if (!before) return ['the run recorded nothing: the stack file was not changed']
  const value = before.pskRotation ?? 'initial'
  return [
    `${PSK_ROTATION_KEY} back to ${value} when the run changed it: ${shownPulumi(ctx.cluster, pulumiArgv.configSet(ctx.cluster.stack(), PSK_ROTATION_KEY, value))}` +
      ' (Pulumi generates the key of that rotation again; every component gets it together)',
    `${LIVE_VERSION_KEY} back to ${before.version ?? '?'} by the install below`,
  ]
}

/** Puts the previous pskRotation back in the stack file. */
export async function restoreClusterConfig(ctx: Ctx, backup: LiveBackupData | undefined): Promise<StepResult> {
  const before = recordedValues(backup)
  if (!before) return { skipped: 'the run recorded nothing: the stack file was not changed' }
  const file = ctx.cluster.stack().stackFile
  const now = readStackVersion(file, PSK_ROTATION_KEY) ?? 'initial'
  const value = before.pskRotation ?? 'initial'
  if (now === value) return { skipped: `${PSK_ROTATION_KEY} is as before the run (${value})` }
  await ctx.cluster.pulumi().setVersion(PSK_ROTATION_KEY, value)
  return { changed: [`set ${PSK_ROTATION_KEY} back to ${value} in ${file} (was ${now})`], data: { pskRotation: { from: now, to: value } } }
}

// ---- checks ----

interface EnvVarShape {
  name: string
  valueFrom?: { secretKeyRef?: { name?: string } }
}

/** The pod template as the release needs it: what the program writes per version, confirmed from the API's answer. */
async function templateChecks(ctx: Ctx, c: LiveComponentName, version: string): Promise<CheckResult[]> {
  const d = await ctx.cluster.kube(c).readDeploymentObject()
  const container = d.spec?.template.spec?.containers.find((x) => x.name === c)
  const env = (container?.env ?? []) as EnvVarShape[]
  const names = env.map((e) => e.name)
  const checks: CheckResult[] = []
  const psk = pskVariable(ctx.live.prefix)
  if (pskRequired(version))
    checks.push({
      check: `${psk} from the PSK Secret`,
      ok: env.some((e) => e.name === psk && !!e.valueFrom?.secretKeyRef),
      ...(names.includes(psk) ? {} : { detail: 'the variable is missing' }),
    })
  if (c === 'system-controller') {
    const dir = etcSettingsDir(ctx.product)
    const mounted = (container?.volumeMounts ?? []).some((m) => m.mountPath === dir)
    const args = container?.args ?? []
    const flagged =
      !supportsSettingsPathFlag(version) || (args[args.indexOf(settingsPathFlag()) + 1] === dir && args.includes(settingsPathFlag()))
    checks.push({
      check: `settings file where ${version} reads it`,
      ok: mounted && flagged,
      detail: `${mounted ? `mounted at ${dir}` : `not mounted at ${dir}`}${supportsSettingsPathFlag(version) ? `; ${flagged ? `${settingsPathFlag()} ${dir}` : `no ${settingsPathFlag()} ${dir}`}` : ''}`,
    })
  }
  if (c === 'pipeline') {
    const want = tcpEndpointVariable(version, ctx.live.prefix)
    const other = ['2.0.0', '6.0.0'].map((v) => tcpEndpointVariable(v, ctx.live.prefix)).find((n) => n !== want) ?? ''
    checks.push({
      check: `${want} set${other ? `, ${other} not` : ''}`,
      ok: names.includes(want) && !names.includes(other),
      detail: names.filter((n) => n === want || n === other).join(', ') || 'neither variable',
    })
  }
  return checks
}

/** The checks the stack declares on this platform, with the seed's UUIDs. */
function planOf(ctx: Ctx): CheckPlan {
  return clusterCheckPlan(ctx.live, ctx.product)
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const STUCK = /CrashLoopBackOff|ImagePullBackOff|ErrImagePull|CreateContainerConfigError|InvalidImageName/

/** What the check of a component does on Kubernetes, for the dry run. */
export function describeClusterCheck(ctx: Ctx, c: LiveComponentName, version: string): string[] {
  return [
    ...ctx.platform.describe('status', deploymentUnit(ctx.cluster, c)),
    `wait up to ${Math.round(ctx.platform.connectTimeoutMs / 1000)} s until its pods run on ${version} and its checks pass:`,
    ...describeClusterUnitChecks(ctx.cluster, planOf(ctx), c, version).map((line) => `  ${line}`),
    `the pod template as ${version} needs it (from the Deployment above)`,
  ]
}

/**
 * Every check of one component on Kubernetes, as on a host: its pods Running and ready on the
 * version and its checks passing — the seed's endpoint for its UUID through the controller's
 * Service, then the declared checks (waited for up to `waitMs`; a pod stuck in CrashLoopBackOff is
 * not waited for) — no ERROR in their last lines, and the pod template as the release needs it.
 */
export async function checkClusterComponent(ctx: Ctx, c: LiveComponentName, version: string, waitMs: number): Promise<CheckResult[]> {
  const deadline = Date.now() + waitMs
  const unit = deploymentUnit(ctx.cluster, c)
  const passing = async (): Promise<boolean> => (await clusterUnitChecks(ctx.cluster, planOf(ctx), c, version, true)).every((r) => r.ok)
  let status = await ctx.platform.status(unit)
  let installed = await ctx.platform.installedVersion(unit)
  while (!(status.running && installed === version && (await passing())) && Date.now() < deadline && !STUCK.test(status.status)) {
    await sleep(1000)
    status = await ctx.platform.status(unit)
    installed = await ctx.platform.installedVersion(unit)
  }
  const errors = await ctx.platform.errorLines(unit, undefined)
  return [
    { check: `Deployment on ${version}`, ok: installed === version, detail: installed ?? 'no version' },
    { check: 'pods running and ready', ok: status.running, detail: status.status },
    { check: 'no error lines in the last lines of its pods', ok: errors.length === 0, ...(errors.length ? { detail: errors.at(-1) } : {}) },
    ...(await templateChecks(ctx, c, version)),
    ...(await clusterUnitChecks(ctx.cluster, planOf(ctx), c, version)),
  ]
}

/** The whole system: every component's checks (the seed's by UUID, the declared ones), every Deployment on the version, the stack file agreeing. */
export async function verifyClusterSystem(ctx: Ctx, version: string): Promise<CheckResult[]> {
  const results: CheckResult[] = []
  for (const c of LIVE_COMPONENTS)
    results.push(...(await clusterUnitChecks(ctx.cluster, planOf(ctx), c, version)).map((r) => ({ ...r, check: `${c}: ${r.check}` })))
  const versions: Record<string, string | undefined> = {}
  for (const c of LIVE_COMPONENTS) versions[c] = await ctx.platform.installedVersion(deploymentUnit(ctx.cluster, c))
  const wrong = Object.entries(versions).filter(([, v]) => v !== version)
  results.push({
    check: `every component on ${version}`,
    ok: wrong.length === 0,
    ...(wrong.length ? { detail: wrong.map(([c, v]) => `${c} ${String(v)}`).join(', ') } : {}),
  })
  results.push(stackFileAgreement(ctx, version))
  return results
}

/** What `verifyClusterSystem` asks, for the dry run. */
export function describeClusterSystemCheck(ctx: Ctx, version: string): string[] {
  return [
    ...LIVE_COMPONENTS.flatMap((c) => describeClusterUnitChecks(ctx.cluster, planOf(ctx), c, version).map((line) => `${c}: ${line}`)),
    "the version of every Deployment; the stack file's version agrees",
  ]
}

/** The stack file against the cluster: the report says when they disagree. */
export function stackFileAgreement(ctx: Ctx, running: string | undefined): CheckResult {
  const recorded = readStackVersion(ctx.cluster.stack().stackFile, LIVE_VERSION_KEY)
  return {
    check: `the stack file's ${LIVE_VERSION_KEY} agrees with the cluster`,
    ok: recorded === running,
    detail:
      recorded === running
        ? `${recorded ?? '?'}`
        : `the stack file holds ${recorded ?? 'nothing'}, the cluster runs ${running ?? 'nothing'}`,
  }
}

/** `svcops verify live` on Kubernetes: what stands for the host's files (the stack file's record). */
export function verifyClusterFiles(ctx: Ctx, version: string): CheckResult[] {
  return [stackFileAgreement(ctx, version)]
}
