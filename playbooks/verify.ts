#!/usr/bin/env node
/**
 * Playbook: the seed's post-upgrade check alone, on every host of an environment ("GET / for
 * health; GET /api/v1/content with limit; POST /api/v1/content with a test recording; read the
 * logs"), plus the service's status and the database's schema fingerprint for comparison. It only
 * reads, except for the test recording (`--no-test-recording` leaves it out).
 *
 *   npx zx playbooks/verify.ts --env lab [--no-test-recording] [--json]
 *
 * A failed check never stops the others: every host gets every check, and `ok` says whether all passed.
 * Run by node or zx, this file is `svcops verify recording` (its options: playbooks/lib/recording-commands.ts).
 */
import type { Environment } from '../src/config/schema.ts'
import { ExitCode } from '../src/core/errors.ts'
import { findLogErrors, linesSince } from '../src/drivers/services.ts'
import { closeRecordingContext, recordingContext, type RecordingContext } from '../src/recording/recording-context.ts'
import type { RecordingTarget } from '../src/recording/recording-platform.ts'
import { verifyHost, type CheckResult, type HostVerification } from '../src/recording/verify-target.ts'
import { recordingCheckReader } from '../src/recording/recording-checks.ts'
import { Journal } from '../src/runs/journal.ts'
import { newVerifyRecord } from '../src/recording/recording-system.ts'
import { printOn, showProgressOn, type CommandIO } from '../src/edge/command-io.ts'
import { VERIFY_RECORDING, type VerifyRecordingFlags } from './lib/recording-commands.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'

export interface ServiceVerification {
  ok: boolean
  environment: string
  fingerprint?: string
  hosts: Array<HostVerification & { version?: string; status: string; lastLines: string[] }>
}

/** The check of one host, in the seed's order. */
async function verifyOne(
  ctx: RecordingContext,
  h: RecordingTarget,
  options: { testRecording?: boolean },
  versions: Record<string, string>,
): Promise<ServiceVerification['hosts'][number]> {
  const testRun = options.testRecording === false ? {} : { runId: `verify-${new Date().toISOString()}` }
  const declared = { reader: recordingCheckReader(ctx.env, ctx.platform, h), checks: ctx.rec.checks }
  const v = await verifyHost(ctx.deps.content, h.url, { host: h.name, limit: ctx.settings.contentLimit, declared, ...testRun }) // GET /, GET content, the declared checks, POST a test recording
  const { status, lines } = await serviceFacts(ctx, h) // the service runs; read the logs
  const version = versions[h.name]
  const errors = findLogErrors(linesSince(lines, new Date(Date.now() - 600_000).toISOString()), ctx.settings.errorPatterns)
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

/** Status and log lines of the service on a target, through the platform it runs on. */
async function serviceFacts(
  ctx: RecordingContext,
  t: RecordingTarget,
): Promise<{ status: { running: boolean; status: string }; lines: string[] }> {
  return { status: await ctx.platform.status(t), lines: await ctx.platform.recentLogs(t) }
}

/** Verifies every host; never throws for a failed check (see `ok`). */
export async function verifyRecordingService(env: Environment, options: { testRecording?: boolean } = {}): Promise<ServiceVerification> {
  const ctx = await recordingContext(env, Journal.inMemory(newVerifyRecord(env)))
  try {
    await ctx.platform.connect() // on Kubernetes from outside the cluster: the port-forward to the Service
    const versions = await ctx.platform.versions() // the version every target runs
    const hosts = await Promise.all(ctx.allTargets.map((h) => verifyOne(ctx, h, options, versions)))
    const fingerprint = await ctx.deps.database.fingerprint() // recorded for comparison with a later run
    return { ok: hosts.every((h) => h.ok), environment: env.name, fingerprint, hosts }
  } finally {
    await closeRecordingContext(ctx)
  }
}

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

/** `svcops verify recording`, and this file run as a script: every check printed; exit 1 when one failed. */
export async function verifyRecordingCommand(flags: VerifyRecordingFlags, io: CommandIO): Promise<void> {
  const env = await io.environment()
  const stop = await showProgressOn(io)
  try {
    const result = await verifyRecordingService(env, { testRecording: flags.testRecording })
    printOn(io, result, () => renderVerification(result))
    if (!result.ok) io.exitWith(ExitCode.failed)
  } finally {
    stop()
  }
}

if (startedAsScript(import.meta)) await runScript(import.meta, VERIFY_RECORDING, verifyRecordingCommand)
