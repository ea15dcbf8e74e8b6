/**
 * The seed's steps on one host, declared once for the run and the dry run: stop the service;
 * install a package version (pinned, current config kept); review configuration changes; start
 * (migrations run on first start); wait until healthy (bounded); check status and the last log
 * lines; verify the content. Each is idempotent, so a resumed run can repeat it, and the rollback
 * uses the same steps in its own phase.
 */
import { errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { installPackage as install, readInstalledVersion, showCommand } from '../drivers/packages.ts'
import { hostPath } from '../drivers/transports.ts'
import {
  findLogErrors,
  readLogCursor,
  readServiceLogs,
  readServiceStatus,
  startService as start,
  stopService as stop,
} from '../drivers/services.ts'
import { HostFailure } from '../runs/engine.ts'
import { defineStep } from '../runs/step.ts'
import { reviewConfig as review } from './hosts/config-review.ts'
import type { HostHandle, RecordingContext } from './recording-context.ts'
import { assertVerified, verifyHost as verify } from './verify-target.ts'
import {
  clusterCheckLogs,
  clusterInstall,
  clusterOf,
  clusterReview,
  clusterStart,
  clusterStop,
  clusterWaitHealthy,
} from './kubernetes/recording-kubernetes-steps.ts'

type Ctx = RecordingContext

/** Log positions taken right before each host's start: only that start's lines are judged. */
const logCursors = new WeakMap<Ctx, Map<string, string | undefined>>()
/** The service's log lines written since this host's last start (all of the last lines when unknown). */
function logsSinceStart(ctx: Ctx, h: HostHandle): Promise<string[]> {
  const cursor = logCursors.get(ctx)?.get(h.name)
  return readServiceLogs(ctx.svc, h.transport, h.config, ctx.settings.service, ctx.settings.logLines, ctx.settings.logPath, cursor)
}

export const stopService = defineStep<Ctx, [HostHandle]>({
  id: 'stop',
  title: 'stop the service',
  disruptive: true,
  describe: (ctx, h) => {
    const k = clusterOf(ctx)
    return k ? clusterStop.describe(k) : [showCommand(ctx.svc.stopCommand(h.config, ctx.settings.service))]
  },
  async act(ctx, h) {
    const k = clusterOf(ctx)
    if (k) return clusterStop.act(k, h)
    await stop(ctx.svc, h.transport, h.config, ctx.settings.service)
    return { changed: [`stopped ${ctx.settings.service}`] }
  },
})

export const installPackage = defineStep<Ctx, [HostHandle, string | undefined]>({
  id: 'install',
  title: 'install the version: the package, keeping the host’s configuration (on Kubernetes: the version in the stack file)',
  async describe(ctx, h, version) {
    if (!version) return ['no previous version is recorded for this host: nothing to install']
    const k = clusterOf(ctx)
    if (k) return clusterInstall.describe(k, version)
    const current = await readInstalledVersion(ctx.pkg, h.transport, h.config, ctx.settings.package)
    const commands = ctx.pkg.installCommands(h.config, ctx.settings.package, version, ctx.packageFile(version)).map(showCommand)
    return [`install ${version} over ${current ?? 'nothing'}: ${commands.join(' && ')}`]
  },
  async act(ctx, h, version) {
    if (!version) return { skipped: 'no previous version is recorded for this host' }
    const k = clusterOf(ctx)
    if (k) return clusterInstall.act(k, h, version)
    const current = await readInstalledVersion(ctx.pkg, h.transport, h.config, ctx.settings.package)
    if (current === version) return { skipped: `${ctx.settings.package} ${version} is already installed`, data: { from: current } }
    await install(ctx.pkg, h.transport, h.config, ctx.settings.package, version, ctx.packageFile(version))
    const now = await readInstalledVersion(ctx.pkg, h.transport, h.config, ctx.settings.package)
    if (now !== version) {
      throw new HostFailure(
        h.name,
        'install',
        `After installing ${ctx.settings.package} ${version} on ${h.name}, the installed version is ${now ?? 'none'}.`,
      )
    }
    return {
      changed: [`installed ${ctx.settings.package} ${version} over ${current ?? 'nothing'}`],
      data: { from: current ?? null, to: version },
    }
  },
})

export const reviewConfig = defineStep<Ctx, [HostHandle]>({
  id: 'review-config',
  title: 'review configuration changes',
  report: 'config-review',
  describe: (ctx, h) => {
    const k = clusterOf(ctx)
    if (k) return clusterReview.describe(k)
    return [
      `look for ${ctx.pkg.newConfigSuffixes.map((s) => hostPath(h.config, ctx.settings.configPath) + s).join(', ')}; diff -u against ${hostPath(h.config, ctx.settings.configPath)}; ` +
        'check its JSON syntax; warn on options the new default no longer has',
    ]
  },
  async act(ctx, h) {
    const k = clusterOf(ctx)
    if (k) return clusterReview.act(k, h)
    const result = await review(h.transport, h.config, ctx.settings.configPath, ctx.pkg.newConfigSuffixes)
    if (!result.syntaxOk) {
      throw new HostFailure(
        h.name,
        'review-config',
        `The active configuration on ${h.name} is not valid: ${result.syntaxError ?? 'unknown error'}.`,
      )
    }
    return { data: { review: result } }
  },
})

export const startService = defineStep<Ctx, [HostHandle]>({
  id: 'start',
  title: 'start the service (migrations run on its first start)',
  describe: (ctx, h) => {
    const k = clusterOf(ctx)
    return k ? clusterStart.describe(k) : [showCommand(ctx.svc.startCommand(h.config, ctx.settings.service))]
  },
  async act(ctx, h) {
    const k = clusterOf(ctx)
    if (k) return clusterStart.act(k, h)
    const startedAt = new Date().toISOString()
    const cursor = await readLogCursor(ctx.svc, h.transport, h.config, ctx.settings.service, ctx.settings.logPath)
    if (!logCursors.has(ctx)) logCursors.set(ctx, new Map())
    logCursors.get(ctx)?.set(h.name, cursor)
    const started = await start(ctx.svc, h.transport, h.config, ctx.settings.service)
    if (!started.ok) events.warn(`start of ${ctx.settings.service} reported: ${started.output}`, h.name)
    return { changed: [`started ${ctx.settings.service}`], data: { startedAt, ...(cursor ? { logCursor: cursor } : {}) } }
  },
})

export const waitHealthy = defineStep<Ctx, [HostHandle]>({
  id: 'wait-healthy',
  title: 'wait until the service answers its health check',
  describe: (ctx, h) => {
    const k = clusterOf(ctx)
    return k
      ? clusterWaitHealthy.describe(k, h)
      : [`GET ${h.url}/ until it answers, at most ${Math.round(ctx.settings.healthTimeoutMs / 1000)} s`]
  },
  act: (ctx, h) => {
    const k = clusterOf(ctx)
    return k ? clusterWaitHealthy.act(k, h) : pollHealth(ctx, h)
  },
})

export const checkStatusAndLogs = defineStep<Ctx, [HostHandle]>({
  id: 'check-logs',
  title: 'check status and the last log lines',
  describe: (ctx, h) => {
    const k = clusterOf(ctx)
    if (k) return clusterCheckLogs.describe(k)
    return [
      showCommand(ctx.svc.statusCommand(h.config, ctx.settings.service)),
      showCommand(ctx.svc.logsCommand(h.config, ctx.settings.service, ctx.settings.logLines, ctx.settings.logPath)),
      `fail on ${ctx.settings.errorPatterns.join(' | ')}`,
    ]
  },
  async act(ctx, h) {
    const k = clusterOf(ctx)
    if (k) return clusterCheckLogs.act(k, h)
    const status = await readServiceStatus(ctx.svc, h.transport, h.config, ctx.settings.service)
    const lines = await logsSinceStart(ctx, h)
    const errors = findLogErrors(lines, ctx.settings.errorPatterns)
    if (!status.running)
      throw new HostFailure(h.name, 'check-logs', `${ctx.settings.service} on ${h.name} is not running after the start: ${status.status}.`)
    if (errors.length) {
      throw new HostFailure(
        h.name,
        'check-logs',
        `The log of ${ctx.settings.service} on ${h.name} has ${errors.length} error line(s) since the start, first: ${errors[0]}`,
      )
    }
    return { data: { status: status.status, lastLines: lines.slice(-10) } }
  },
})

export const verifyHost = defineStep<Ctx, [HostHandle]>({
  id: 'verify-host',
  title: 'verify health and content, and create a test recording',
  report: 'verified',
  describe: (ctx, h) => [
    `GET ${h.url}/`,
    `GET ${h.url}/api/v1/content?limit=${ctx.settings.contentLimit}: every recording of the snapshot present`,
    `POST ${h.url}/api/v1/content (a test recording marked with the run id), then see it listed`,
    `each answered within ${ctx.settings.slowResponseMs} ms (recording.slowResponseMs), else slow`,
  ],
  async act(ctx, h) {
    const keys = ctx.journal.run.snapshotIds ?? []
    const v = await verify(ctx.deps.content, h.url, {
      host: h.name,
      limit: ctx.settings.contentLimit,
      expectKeys: keys,
      runId: ctx.journal.run.id,
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

/**
 * Polls `GET /` until it answers success, at most `healthTimeoutMs`. Fails early when the
 * supervisor says the service is no longer running (crashed at start), with the last log lines.
 */
async function pollHealth(ctx: Ctx, h: HostHandle): Promise<{ data: Record<string, unknown> }> {
  const deadline = Date.now() + ctx.settings.healthTimeoutMs
  const begun = Date.now()
  let lastError = 'no answer yet'
  let notRunning = 0
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.deps.content.health(h.url)
      return { data: { healthyAfterMs: Date.now() - begun, attempts: attempt } }
    } catch (error) {
      lastError = errorMessage(error)
    }
    if (attempt % 2 === 0) {
      const status = await readServiceStatus(ctx.svc, h.transport, h.config, ctx.settings.service)
      // BACKOFF: the process exited and the supervisor retries it; FATAL/EXITED: it gave up. A crash, not a slow start.
      const fatal = /FATAL|EXITED|failed/i.test(status.status)
      notRunning = status.running || /STARTING|activating/i.test(status.status) ? 0 : notRunning + 1
      if (fatal || notRunning >= 2) {
        const lines = await logsSinceStart(ctx, h)
        const last = lines.filter((l) => /ERROR|FATAL/i.test(l)).at(-1) ?? lines.at(-1) ?? 'no log lines'
        throw new HostFailure(
          h.name,
          'wait-healthy',
          `${ctx.settings.service} on ${h.name} stopped running after the start (${status.status}); last log line: ${last}`,
        )
      }
    }
    if (Date.now() >= deadline) {
      const seconds = Math.round(ctx.settings.healthTimeoutMs / 1000)
      throw new HostFailure(
        h.name,
        'wait-healthy',
        `${ctx.settings.service} on ${h.name} did not become healthy within ${seconds} s: ${lastError.replace(/\.$/, '')}.`,
      )
    }
    await new Promise((r) => setTimeout(r, Math.min(250, Math.max(0, deadline - Date.now()))))
  }
}
