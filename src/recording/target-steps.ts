/**
 * The seed's steps on one target (a host; on Kubernetes the Deployment), declared once for the run
 * and the dry run, each through the platform the service runs on (recording-platform.ts): stop the
 * service; install a version (on hosts the package, keeping the current configuration; on
 * Kubernetes the version in the stack file); review configuration changes; start (migrations run on
 * first start); wait until healthy (bounded); check status and the last log lines; verify the
 * content. Each is idempotent, so a resumed run can repeat it, and the rollback uses the same steps
 * in its own phase. What a platform reads is judged once, in recording-judge.ts.
 */
import { errorMessage } from '../core/errors.ts'
import { defineStep } from '../runs/step.ts'
import type { RecordingContext } from './recording-context.ts'
import { judgeStarted, judgeStarting, notHealthyInTime, stoppedAfterStart, type Judged } from './recording-judge.ts'
import type { RecordingTarget } from './recording-platform.ts'
import { assertVerified, verifyHost as verify } from './verify-target.ts'
import { describeRecordingChecks, recordingCheckReader } from './recording-checks.ts'
import { HostFailure } from '../runs/engine.ts'

type Ctx = RecordingContext
type T = RecordingTarget

/** The target as the judgements name it. */
function judged(ctx: Ctx, t: T): Judged {
  return { name: t.name, label: ctx.platform.label(t) }
}

export const stopService = defineStep<Ctx, [T]>({
  id: 'stop',
  title: 'stop the service',
  disruptive: true,
  describe: (ctx, t) => ctx.platform.describe('stop', t),
  act: (ctx, t) => ctx.platform.stop(t),
})

export const installPackage = defineStep<Ctx, [T, string | undefined]>({
  id: 'install',
  title: 'install the version: the package, keeping the host’s configuration (on Kubernetes: the version in the stack file)',
  async describe(ctx, t, version) {
    if (!version) return ['no previous version is recorded for this host: nothing to install']
    return ctx.platform.describeInstall(t, version)
  },
  async act(ctx, t, version) {
    if (!version) return { skipped: 'no previous version is recorded for this host' }
    return ctx.platform.install(t, version)
  },
})

export const reviewConfig = defineStep<Ctx, [T]>({
  id: 'review-config',
  title: 'review configuration changes',
  report: 'config-review',
  describe: (ctx, t) => ctx.platform.describe('review-config', t),
  act: (ctx, t) => ctx.platform.reviewConfig(t),
})

export const startService = defineStep<Ctx, [T]>({
  id: 'start',
  title: 'start the service (migrations run on its first start)',
  describe: (ctx, t) => ctx.platform.describe('start', t),
  act: (ctx, t) => ctx.platform.start(t),
})

export const waitHealthy = defineStep<Ctx, [T]>({
  id: 'wait-healthy',
  title: 'wait until the service answers its health check',
  describe: (ctx, t) => ctx.platform.describe('wait-healthy', t),
  act: (ctx, t) => pollHealth(ctx, t),
})

export const checkStatusAndLogs = defineStep<Ctx, [T]>({
  id: 'check-logs',
  title: 'check status and the last log lines',
  describe: (ctx, t) => ctx.platform.describe('check-logs', t),
  async act(ctx, t) {
    // Two independent reads, at once: each is a round trip to the host (or the API) on the batch's path.
    const [status, lines] = await Promise.all([ctx.platform.status(t), ctx.platform.logsSinceStart(t)])
    const record = ctx.platform.versionRecord()
    const running = record ? (await ctx.platform.versions())[t.name] : undefined
    return { data: judgeStarted(judged(ctx, t), { status, lines, errorPatterns: ctx.settings.errorPatterns, record, running }) }
  },
})

export const verifyHost = defineStep<Ctx, [T]>({
  id: 'verify-host',
  title: 'verify health and content, and create a test recording',
  report: 'verified',
  describe: (ctx, h) => [
    `GET ${h.url}/`,
    `GET ${h.url}/api/v1/content?limit=${ctx.settings.contentLimit}: every recording of the snapshot present`,
    `POST ${h.url}/api/v1/content (a test recording marked with the run id), then see it listed`,
    ...describeRecordingChecks(recordingCheckReader(ctx.env, ctx.platform, h), ctx.rec.checks),
    `each answered within ${ctx.settings.slowResponseMs} ms (recording.slowResponseMs), else slow`,
  ],
  async act(ctx, h) {
    const keys = ctx.journal.run.params.snapshotIds ?? []
    const v = await verify(ctx.deps.content, h.url, {
      host: h.name,
      limit: ctx.settings.contentLimit,
      expectKeys: keys,
      runId: ctx.journal.run.id,
      declared: { reader: recordingCheckReader(ctx.env, ctx.platform, h), checks: ctx.rec.checks },
      // Slowness fails a host on the way up only: a rollback that ends slow still ends on the old
      // version (the cause is then not the new one), and its report shows the timings.
      ...(ctx.journal.run.phase === 'running' ? { slowMs: ctx.settings.slowResponseMs } : {}),
    })
    if (!v.ok && v.missing.length) {
      const message = `Verification of ${h.name} failed: ${v.missing.length} of ${keys.length} recordings of the snapshot are missing after the upgrade.`
      throw new HostFailure(h.name, 'verify-host', message, true)
    }
    assertVerified(v)
    return { data: { checks: v.checks, listed: v.listed } }
  },
})

/** Whether the run is going back to the previous release: a rollback's run, or a run's rollback after its failure. */
function onTheWayBack(ctx: Ctx): boolean {
  const run = ctx.journal.run
  return run.kind === 'rollback' || run.phase === 'rolling-back'
}

/**
 * Polls `GET /` until it answers success, at most `healthTimeoutMs`. Fails early when the platform
 * says the service stopped running (crashed at start, a pod in CrashLoopBackOff), with the last
 * log lines.
 */
async function pollHealth(ctx: Ctx, t: T): Promise<{ data: Record<string, unknown> }> {
  const deadline = Date.now() + ctx.settings.healthTimeoutMs
  const begun = Date.now()
  let lastError = 'no answer yet'
  let notRunning = 0
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.deps.content.health(t.url)
      return { data: { healthyAfterMs: Date.now() - begun, attempts: attempt } }
    } catch (error) {
      lastError = errorMessage(error)
    }
    if (attempt % 2 === 0) {
      const status = await ctx.platform.status(t)
      const verdict = judgeStarting(status, notRunning, onTheWayBack(ctx))
      notRunning = verdict.notRunning
      if (verdict.stopped) throw stoppedAfterStart(judged(ctx, t), status, await ctx.platform.logsSinceStart(t))
    }
    if (Date.now() >= deadline) throw notHealthyInTime(judged(ctx, t), ctx.settings.healthTimeoutMs, lastError)
    await new Promise((r) => setTimeout(r, Math.min(ctx.platform.pollMs, Math.max(0, deadline - Date.now()))))
  }
}
