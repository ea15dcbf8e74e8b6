/**
 * The doctor inside the upgrade's runs: `doctorPreflight` checks the causes knowable before a stop
 * on every host of the run and stops it (nothing changed) on an error; `diagnoseHost` checks every
 * cause on a host that failed during the rollout, before the rollback, and never fails itself: its
 * findings go into the report as "why it failed".
 */
import { OperationError, errorMessage } from '../../core/errors.ts'
import { events } from '../../core/events.ts'
import { defineStep } from '../../runs/step.ts'
import type { RecordingContext } from '../recording-context.ts'
import type { RecordingTarget } from '../recording-platform.ts'
import { CAUSES, PREFLIGHT_CAUSES } from './causes.ts'
import type { Diagnosis } from '../../doctor/diagnose.ts'
import { diagnoseHost as diagnose, diagnoseHosts } from './diagnose-hosts.ts'

type Ctx = RecordingContext

/**
 * Why the doctor's steps skip on a platform without hosts: they read a host (its files, its
 * service's view); there a run's check-logs judges the pods, and `svcops doctor recording` reads
 * them through the API.
 */
function noHostsOn(ctx: Ctx): string {
  return `not in a run on ${ctx.platform.name}: the doctor's steps are host checks and check-logs reads the pods; svcops doctor recording reads the pods through the API`
}

function emitFindings(d: Diagnosis): void {
  for (const f of d.findings) events.emit({ kind: 'check', check: `doctor: ${f.cause}`, ok: false, host: f.host, detail: f.summary })
}

export const doctorPreflight = defineStep<Ctx>({
  id: 'doctor',
  title: "check the causes of the seed's common upgrade problems that can be known before a stop",
  report: 'diagnosis',
  once: true,
  describe: (ctx) =>
    !ctx.platform.hostOf
      ? []
      : [
          `on ${ctx.targets.map((h) => h.name).join(', ')}, as the service sees it: ${PREFLIGHT_CAUSES.map((c) => c.id).join(', ')}`,
          'stop before anything changes on an error finding',
        ],
  async preview(ctx) {
    const { hostOf } = ctx.platform
    if (!hostOf) return { skipped: noHostsOn(ctx) }
    const d = await diagnoseHosts(ctx.targets.map(hostOf), ctx.settings, PREFLIGHT_CAUSES)
    return { data: { ...d } }
  },
  async act(ctx) {
    const { hostOf } = ctx.platform
    if (!hostOf) return { skipped: noHostsOn(ctx) }
    const d = await diagnoseHosts(ctx.targets.map(hostOf), ctx.settings, PREFLIGHT_CAUSES)
    emitFindings(d)
    const errors = d.findings.filter((f) => f.severity === 'error')
    const first = errors[0]
    if (first) {
      // The engine journals a failure's message only; the findings get an entry of their own (not the
      // step's name, so a resume still runs the check again) that the report reads.
      const error = new OperationError(
        `Preflight: ${errors.length} problem(s) would make the upgrade fail; first, on ${first.host} (${first.cause}): ${first.summary}`,
        first.remedy,
      )
      error.facts = { findings: d.findings }
      ctx.journal.append({ step: 'doctor-findings', status: 'ok', data: { ...d }, report: 'diagnosis', detail: 'findings before any stop' })
      throw error
    }
    return { data: { ...d } }
  },
})

export const diagnoseHost = defineStep<Ctx, [RecordingTarget, unknown]>({
  id: 'diagnose',
  title: 'why it failed: every cause of the common upgrade problems checked on the failed host',
  report: 'diagnosis',
  describe: (ctx, t) =>
    ctx.platform.hostOf ? [`on ${t.name}, if a step failed: ${CAUSES.map((c) => c.id).join(', ')}`] : [noHostsOn(ctx)],
  async act(ctx, t, failure) {
    // The seed's step 5 first, on every platform: the status and the last log lines of the failed target.
    const seen = await readStatusAndLogs(ctx, t)
    const { hostOf } = ctx.platform
    if (!hostOf) return { skipped: noHostsOn(ctx), data: { failure: errorMessage(failure), ...seen, findings: [], checks: [] } }
    try {
      const d = await diagnose(hostOf(t), ctx.settings)
      emitFindings(d)
      return { data: { failure: errorMessage(failure), ...seen, ...d } }
    } catch (error) {
      // The rollback must run whatever the diagnosis met.
      return { data: { failure: errorMessage(failure), ...seen, findings: [], checks: [], error: errorMessage(error) } }
    }
  },
})

/** How many log lines a diagnosis keeps: the report shows the last ten. */
const LOG_LINES_KEPT = 20

/** The target's status and last log lines, or why they could not be read (a diagnosis never fails). */
async function readStatusAndLogs(ctx: Ctx, t: RecordingTarget): Promise<Record<string, unknown>> {
  const seen: Record<string, unknown> = {}
  try {
    const status = await ctx.platform.status(t)
    seen.status = status.status
  } catch (error) {
    seen.statusError = errorMessage(error)
  }
  try {
    const sinceStart = await ctx.platform.logsSinceStart(t)
    // A target that failed before this run started it has no lines of its own: its last lines then.
    seen.logs = (sinceStart.length ? sinceStart : await ctx.platform.recentLogs(t)).slice(-LOG_LINES_KEPT)
  } catch (error) {
    seen.logsError = errorMessage(error)
  }
  return seen
}
