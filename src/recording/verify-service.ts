/**
 * `svcops verify recording` as a run of the recording service (src/runs/read-only-system.ts): the
 * seed's post-upgrade check alone on every target ("GET / for health; GET /api/v1/content with
 * limit; POST /api/v1/content with a test recording; read the logs"), plus the service's status and
 * the database's schema fingerprint for comparison. One step journals the whole verification (the
 * report and `runs show` read it); the next fails the run, naming what failed, when a check did.
 */
import type { Environment } from '../config/schema.ts'
import { OperationError } from '../core/errors.ts'
import { findLogErrors, linesSince } from '../drivers/services.ts'
import type { Journal } from '../runs/journal.ts'
import type { Opened } from '../runs/playbook.ts'
import { defineStep } from '../runs/step.ts'
import { recordingCheckReader } from './recording-checks.ts'
import { closeRecordingContext, recordingContext, type RecordingContext } from './recording-context.ts'
import { emptyRecordingParams, type RecordingParams } from './recording-params.ts'
import type { RecordingTarget } from './recording-platform.ts'
import { recordingTargets } from './recording-platforms.ts'
import { verifyHost, type CheckResult, type HostVerification } from './verify-target.ts'

export interface ServiceVerification {
  ok: boolean
  environment: string
  fingerprint?: string
  hosts: Array<HostVerification & { version?: string; status: string; lastLines: string[] }>
}

/** A verify run's context: the service's, whether to create the test recording, and what the run found. */
export interface VerifyContext {
  rec: RecordingContext
  testRecording: boolean
  found?: ServiceVerification
}

/** The params of a verify run: every target of the environment. */
export function verifyParams(env: Environment): RecordingParams {
  return { ...emptyRecordingParams(), hosts: recordingTargets(env).map((h) => h.name) }
}

/** Opens a verify run's context; `into` is given what it found once the run ends. */
export function openVerify(testRecording: boolean, into: { found?: ServiceVerification }) {
  return async (env: Environment, journal: Journal<RecordingParams>): Promise<Opened<VerifyContext>> => {
    const ctx: VerifyContext = { rec: await recordingContext(env, journal), testRecording }
    return {
      ctx,
      close: async () => {
        if (ctx.found) into.found = ctx.found
        await closeRecordingContext(ctx.rec)
      },
    }
  }
}

/** The check of one target, in the seed's order (the test recording marked with the run's id). */
async function verifyOne(
  ctx: VerifyContext,
  t: RecordingTarget,
  version: string | undefined,
): Promise<ServiceVerification['hosts'][number]> {
  const { rec } = ctx
  const testRun = ctx.testRecording ? { runId: rec.journal.run.id } : {}
  const declared = { reader: recordingCheckReader(rec.env, rec.platform, t), checks: rec.rec.checks }
  const v = await verifyHost(rec.deps.content, t.url, { host: t.name, limit: rec.settings.contentLimit, declared, ...testRun })
  const status = await rec.platform.status(t)
  const lines = await rec.platform.recentLogs(t)
  const errors = findLogErrors(linesSince(lines, new Date(Date.now() - 600_000).toISOString()), rec.settings.errorPatterns)
  const checks: CheckResult[] = [
    ...v.checks,
    { check: 'service status', ok: status.running, detail: status.status },
    {
      check: 'no error lines in the last 10 minutes of the log',
      ok: errors.length === 0,
      ...(errors.length ? { detail: errors.at(-1) } : {}),
    },
  ]
  return {
    ...v,
    checks,
    ok: checks.every((c) => c.ok),
    ...(version ? { version } : {}),
    status: status.status,
    lastLines: lines.slice(-10),
  }
}

export const verifyEveryTarget = defineStep<VerifyContext>({
  id: 'verify',
  title: 'GET /, the content list, the declared checks, a test recording, status and log of every target; the schema fingerprint',
  describe: (ctx) => [`on ${ctx.rec.allTargets.map((t) => t.name).join(', ')}${ctx.testRecording ? '' : ' (no test recording)'}`],
  async act(ctx) {
    await ctx.rec.platform.connect() // on Kubernetes from outside the cluster: the port-forward to the Service
    const versions = await ctx.rec.platform.versions()
    const hosts = await Promise.all(ctx.rec.allTargets.map((t) => verifyOne(ctx, t, versions[t.name])))
    const fingerprint = await ctx.rec.deps.database.fingerprint() // recorded for comparison with a later run
    ctx.found = { ok: hosts.every((h) => h.ok), environment: ctx.rec.env.name, fingerprint, hosts }
    return { data: { ...ctx.found } }
  },
})

export const everyCheckPassed = defineStep<VerifyContext>({
  id: 'checks-passed',
  title: 'every check passed',
  describe: () => ['the run fails, naming each failed check, when one did'],
  act(ctx) {
    const failed = (ctx.found?.hosts ?? []).flatMap((h) => h.checks.filter((c) => !c.ok).map((c) => `${h.host}: ${c.check}`))
    if (failed.length) return Promise.reject(new OperationError(`${failed.length} check(s) failed: ${failed.join('; ')}.`))
    return Promise.resolve({})
  },
})

/** The verification as text: one block per host, each check on a line. */
export function renderVerification(v: ServiceVerification): string {
  const lines = [
    `Recording service of '${v.environment}': ${v.ok ? 'every check passed' : 'CHECKS FAILED'}; schema fingerprint ${v.fingerprint?.slice(0, 16) ?? '?'}`,
  ]
  for (const h of v.hosts) {
    lines.push(`[${h.host}] ${h.version ?? 'version unknown'}: ${h.ok ? 'ok' : 'FAILED'}`)
    for (const c of h.checks) lines.push(`    ${c.ok ? 'ok  ' : 'FAIL'} ${c.check}${c.detail ? `: ${c.detail}` : ''}`)
  }
  return lines.join('\n')
}
