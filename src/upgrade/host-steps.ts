/**
 * The seed's upgrade steps on one host, each idempotent so that a resumed run can repeat them:
 * stop the service; install the new package (pinned, current config kept); review configuration
 * changes; start (migrations run on first start); wait until healthy (bounded); check status and
 * the last log lines; verify the content. Also the same-host steps of a rollback.
 */
import { events } from '../core/events.ts'
import { installPackage, readInstalledVersion } from '../drivers/packages.ts'
import { findLogErrors, readLogCursor, readServiceLogs, readServiceStatus, startService, stopService } from '../drivers/services.ts'
import { reviewConfig } from './config-review.ts'
import { HostFailure, runStep, type HostHandle, type RunContext } from '../runs/steps.ts'
import { assertVerified, verifyHost } from './verify-host.ts'

/** Stops the service (idempotent). `prefix` is '' for upgrade steps, 'rollback:' for rollback ones. */
export async function stopStep(ctx: RunContext, h: HostHandle, prefix = ''): Promise<void> {
  await runStep(ctx, `${prefix}stop`, h.name, async () => {
    await stopService(ctx.svc, h.transport, h.config, ctx.settings.service)
    return { changed: [`stopped ${ctx.settings.service}`] }
  })
}

/** Installs `version` unless it is already installed (idempotent). */
export async function installStep(ctx: RunContext, h: HostHandle, version: string, prefix = ''): Promise<void> {
  await runStep(ctx, `${prefix}install`, h.name, async () => {
    const current = await readInstalledVersion(ctx.pkg, h.transport, h.config, ctx.settings.package)
    if (current === version) return { skipped: `${ctx.settings.package} ${version} is already installed`, data: { from: current } }
    await installPackage(ctx.pkg, h.transport, h.config, ctx.settings.package, version, ctx.packageFile(version))
    const now = await readInstalledVersion(ctx.pkg, h.transport, h.config, ctx.settings.package)
    if (now !== version)
      throw new HostFailure(
        h.name,
        `${prefix}install`,
        `After installing ${ctx.settings.package} ${version} on ${h.name}, the installed version is ${now ?? 'none'}.`,
      )
    return {
      changed: [`installed ${ctx.settings.package} ${version} over ${current ?? 'nothing'}`],
      data: { from: current ?? null, to: version },
    }
  })
}

/** Starts the service, waits until `GET /` answers (bounded), then checks status and new log lines. */
export async function startAndCheckSteps(ctx: RunContext, h: HostHandle, prefix = ''): Promise<void> {
  const startedAt = new Date().toISOString()
  // Only this start's log lines are judged: earlier errors (the failed release a rollback replaces) are not its fault.
  const cursor = await readLogCursor(ctx.svc, h.transport, h.config, ctx.settings.service, ctx.settings.logPath)
  await runStep(ctx, `${prefix}start`, h.name, async () => {
    const started = await startService(ctx.svc, h.transport, h.config, ctx.settings.service)
    if (!started.ok) events.warn(`start of ${ctx.settings.service} reported: ${started.output}`, h.name)
    return { changed: [`started ${ctx.settings.service}`], data: { startedAt, ...(cursor ? { logCursor: cursor } : {}) } }
  })
  await runStep(ctx, `${prefix}wait-healthy`, h.name, () => waitHealthy(ctx, h, cursor, `${prefix}wait-healthy`))
  await runStep(ctx, `${prefix}check-logs`, h.name, async () => {
    const status = await readServiceStatus(ctx.svc, h.transport, h.config, ctx.settings.service)
    const lines = await readServiceLogs(
      ctx.svc,
      h.transport,
      h.config,
      ctx.settings.service,
      ctx.settings.logLines,
      ctx.settings.logPath,
      cursor,
    )
    const errors = findLogErrors(lines, ctx.settings.errorPatterns)
    const data = { status: status.status, lastLines: lines.slice(-10) }
    if (!status.running)
      throw new HostFailure(
        h.name,
        `${prefix}check-logs`,
        `${ctx.settings.service} on ${h.name} is not running after the start: ${status.status}.`,
      )
    if (errors.length)
      throw new HostFailure(
        h.name,
        `${prefix}check-logs`,
        `The log of ${ctx.settings.service} on ${h.name} has ${errors.length} error line(s) since the start, first: ${errors[0]}`,
      )
    return { data }
  })
}

/**
 * Polls `GET /` until it answers success, at most `healthTimeoutMs`. Fails early when the
 * supervisor says the service is no longer running (crashed at start), with the last log lines.
 */
async function waitHealthy(
  ctx: RunContext,
  h: HostHandle,
  cursor: string | undefined,
  step: string,
): Promise<{ data: Record<string, unknown> }> {
  const deadline = Date.now() + ctx.settings.healthTimeoutMs
  const begun = Date.now()
  let lastError = 'no answer yet'
  let notRunning = 0
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.deps.content.health(h.url)
      return { data: { healthyAfterMs: Date.now() - begun, attempts: attempt } }
    } catch (error) {
      lastError = (error as Error).message
    }
    if (attempt % 2 === 0) {
      const status = await readServiceStatus(ctx.svc, h.transport, h.config, ctx.settings.service)
      // BACKOFF: the process exited and the supervisor retries it; FATAL/EXITED: it gave up. A crash, not a slow start.
      const fatal = /FATAL|EXITED|failed/i.test(status.status)
      notRunning = status.running || /STARTING|activating/i.test(status.status) ? 0 : notRunning + 1
      if (fatal || notRunning >= 2) {
        const lines = await readServiceLogs(
          ctx.svc,
          h.transport,
          h.config,
          ctx.settings.service,
          ctx.settings.logLines,
          ctx.settings.logPath,
          cursor,
        )
        const last = lines.filter((l) => /ERROR|FATAL/i.test(l)).at(-1) ?? lines.at(-1) ?? 'no log lines'
        throw new HostFailure(
          h.name,
          step,
          `${ctx.settings.service} on ${h.name} stopped running after the start (${status.status}); last log line: ${last}`,
        )
      }
    }
    if (Date.now() >= deadline)
      throw new HostFailure(
        h.name,
        step,
        `${ctx.settings.service} on ${h.name} did not become healthy within ${Math.round(ctx.settings.healthTimeoutMs / 1000)} s: ${lastError.replace(/\.$/, '')}.`,
      )
    await new Promise((r) => setTimeout(r, Math.min(250, Math.max(0, deadline - Date.now()))))
  }
}

/** The full upgrade of one host. Resumable: a host whose verification finished is skipped. */
export async function upgradeHost(ctx: RunContext, h: HostHandle, target: string): Promise<void> {
  if (ctx.journal.finished('verify-host', h.name)) {
    events.emit({ kind: 'step', step: 'upgrade', host: h.name, status: 'skipped', detail: 'upgraded and verified before the interruption' })
    return
  }
  await stopStep(ctx, h)
  await installStep(ctx, h, target)
  await runStep(ctx, 'review-config', h.name, async () => {
    const review = await reviewConfig(h.transport, h.config, ctx.settings.configPath, ctx.pkg.newConfigSuffixes)
    if (!review.syntaxOk)
      throw new HostFailure(
        h.name,
        'review-config',
        `The active configuration on ${h.name} is not valid: ${review.syntaxError ?? 'unknown error'}.`,
      )
    return { data: { review } }
  })
  await startAndCheckSteps(ctx, h)
  await verifyHostStep(ctx, h, 'verify-host')
}

/** Verifies one host against the run's snapshot and creates a test recording marked with the run id. */
export async function verifyHostStep(ctx: RunContext, h: HostHandle, step: string, extraKeys: string[] = []): Promise<void> {
  await runStep(ctx, step, h.name, async () => {
    const keys = [...(ctx.journal.run.snapshotIds ?? []), ...extraKeys]
    const v = await verifyHost(ctx.deps.content, h.url, {
      host: h.name,
      limit: ctx.settings.contentLimit,
      expectKeys: keys,
      runId: ctx.journal.run.id,
    })
    if (!v.ok && v.missing.length)
      throw new HostFailure(
        h.name,
        step,
        `Verification of ${h.name} failed: ${v.missing.length} of ${keys.length} recordings of the snapshot are missing after the upgrade.`,
        true,
      )
    assertVerified(v)
    return { data: { checks: v.checks, listed: v.listed } }
  })
}
