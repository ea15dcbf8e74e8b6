/**
 * The doctor inside the upgrade's runs: `doctorPreflight` checks the causes knowable before a stop
 * on every host of the run and stops it (nothing changed) on an error; `diagnoseHost` checks every
 * cause on a host that failed during the rollout, before the rollback, and never fails itself: its
 * findings go into the report as "why it failed".
 */
import { OperationError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { defineStep } from '../runs/step.ts'
import type { HostHandle, RecordingContext } from '../recording/recording-context.ts'
import { CAUSES, PREFLIGHT_CAUSES } from './causes.ts'
import { diagnoseHost as diagnose, diagnoseHosts, type Diagnosis } from './diagnose.ts'

type Ctx = RecordingContext

/** The doctor's causes are read on a host (its files, its service's view); a Deployment's pods are judged by check-logs. */
const ON_KUBERNETES = "not on Kubernetes: the causes are host checks; the pods' status and last log lines are read by check-logs"

function emitFindings(d: Diagnosis): void {
  for (const f of d.findings) events.emit({ kind: 'check', check: `doctor: ${f.cause}`, ok: false, host: f.host, detail: f.summary })
}

export const doctorPreflight = defineStep<Ctx>({
  id: 'doctor',
  title: "check the causes of the seed's common upgrade problems that can be known before a stop",
  report: 'diagnosis',
  once: true,
  describe: (ctx) =>
    ctx.cluster
      ? []
      : [
          `on ${ctx.hosts.map((h) => h.name).join(', ')}, as the service sees it: ${PREFLIGHT_CAUSES.map((c) => c.id).join(', ')}`,
          'stop before anything changes on an error finding',
        ],
  async preview(ctx) {
    if (ctx.cluster) return { skipped: ON_KUBERNETES }
    const d = await diagnoseHosts(ctx.hosts, ctx.settings, PREFLIGHT_CAUSES)
    return { data: { ...d } }
  },
  async act(ctx) {
    if (ctx.cluster) return { skipped: ON_KUBERNETES }
    const d = await diagnoseHosts(ctx.hosts, ctx.settings, PREFLIGHT_CAUSES)
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

export const diagnoseHost = defineStep<Ctx, [HostHandle, unknown]>({
  id: 'diagnose',
  title: 'why it failed: every cause of the common upgrade problems checked on the failed host',
  report: 'diagnosis',
  describe: (ctx, h) => (ctx.cluster ? [ON_KUBERNETES] : [`on ${h.name}, if a step failed: ${CAUSES.map((c) => c.id).join(', ')}`]),
  async act(ctx, h, failure) {
    if (ctx.cluster) return { skipped: ON_KUBERNETES, data: { failure: errorMessage(failure), findings: [], checks: [] } }
    try {
      const d = await diagnose(h, ctx.settings)
      emitFindings(d)
      return { data: { failure: errorMessage(failure), ...d } }
    } catch (error) {
      // The rollback must run whatever the diagnosis met.
      return { data: { failure: errorMessage(failure), findings: [], checks: [], error: errorMessage(error) } }
    }
  },
})
