/**
 * `--dry-run` of `svcops rollback recording` and `svcops resume`: what the run's journal says was
 * done, and what a rollback or a resume would do from here, per host, with the exact commands.
 * Only reads: the journal, the installed versions and the schema fingerprint. Nothing is locked,
 * stopped, installed or restored.
 */
import { loadEnvironmentFile, requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { databaseTarget, withDatabase } from '../drivers/postgres.ts'
import { schemaFingerprint } from '../drivers/fingerprint.ts'
import { BadInputError } from '../core/errors.ts'
import { isFinished, Journal, type RunRecord } from '../runs/journal.ts'
import { findDebFile, packageDriver } from '../drivers/packages.ts'
import { serviceDriver } from '../drivers/services.ts'
import { readInstalledVersions, showCommand as show, type PlannedStep } from './plan.ts'
import { settingsFor } from '../runs/steps.ts'

/** The steps a host goes through in an upgrade, in order (as the journal names them). */
const HOST_STEPS = ['stop', 'install', 'review-config', 'start', 'wait-healthy', 'check-logs', 'verify-host'] as const
const RUN_STEPS = ['preflight', 'stage', 'snapshot', 'backup'] as const

export interface RunPlan {
  runId: string
  environment: string
  phase: RunRecord['phase']
  what: 'rollback' | 'resume'
  currentVersions: Record<string, string | null>
  steps: PlannedStep[]
}

function currentFingerprint(env: Environment): Promise<string> {
  return withDatabase(databaseTarget(requireSection(env, 'recording').database), (c) => schemaFingerprint(c))
}

/** Plans `svcops resume ID` (continue) or `svcops resume ID --rollback` / `svcops rollback recording`. */
export async function planRunContinuation(id: string, options: { rollback: boolean }): Promise<RunPlan> {
  const journal = Journal.open(id)
  const run = journal.run
  if (isFinished(run) && !options.rollback) throw new BadInputError(`Run ${id} is finished (${run.phase}); there is nothing to resume.`)
  const env = loadEnvironmentFile(run.envFile, run.environment)
  const rec = requireSection(env, 'recording')
  const settings = settingsFor(env, rec)
  const pkg = packageDriver(rec.packageDriver)
  const svc = serviceDriver(rec.serviceDriver)
  const entries = journal.entries()
  const done = (step: string, host?: string) =>
    entries.some((e) => e.step === step && e.host === host && (e.status === 'ok' || e.status === 'skipped'))
  const current = await readInstalledVersions(env)
  const steps: PlannedStep[] = [
    {
      step: 'journal',
      actions: [
        `run ${id} (${run.kind} to ${run.targetVersion}) is ${run.phase}${run.cause ? `: ${run.cause}` : ''}`,
        `${entries.filter((e) => e.status === 'ok').length} step(s) finished; last: ${entries.at(-1) ? `${entries.at(-1)?.step}${entries.at(-1)?.host ? ` on ${entries.at(-1)?.host}` : ''} (${entries.at(-1)?.status})` : 'none'}`,
        `take the run lock of environment '${env.name}' again as this run`,
      ],
    },
  ]
  const hosts = rec.hosts.filter((h) => run.hosts.includes(h.name))
  const file = (v: string) => (rec.packageDriver === 'dpkg' ? findDebFile(rec.packageDir, rec.package, v) : undefined)

  if (!options.rollback && run.phase !== 'rolling-back') {
    for (const step of RUN_STEPS) if (!done(step)) steps.push({ step, actions: [`${step} (not finished before the run stopped)`] })
    for (const h of hosts) {
      const left = HOST_STEPS.filter((s) => !done(s, h.name))
      if (left.length === 0) continue
      steps.push({
        step: 'continue upgrade',
        host: h.name,
        actions: left.map((s) =>
          s === 'stop'
            ? `stop: ${show(svc.stopCommand(h, settings.service))}`
            : s === 'install'
              ? `install ${run.targetVersion} (now ${current[h.name] ?? 'nothing'}): ${pkg.installCommands(h, rec.package, run.targetVersion, file(run.targetVersion)).map(show).join(' && ')}`
              : s === 'start'
                ? `start: ${show(svc.startCommand(h, settings.service))}`
                : s,
        ),
      })
    }
    steps.push({
      step: 'verify',
      actions: ['health, content, every snapshot recording present, a test recording; schema fingerprint recorded'],
    })
    return { runId: id, environment: env.name, phase: run.phase, what: 'resume', currentVersions: current, steps }
  }

  if (!entries.some((e) => e.step === 'stop')) {
    steps.push({ step: 'nothing to roll back', actions: ['no host was stopped by this run; it is only marked failed'] })
    return { runId: id, environment: env.name, phase: run.phase, what: 'rollback', currentVersions: current, steps }
  }
  const now = await currentFingerprint(env)
  const changed = run.fingerprintBefore !== undefined && now !== run.fingerprintBefore
  steps.push({
    step: 'rollback:decide',
    actions: [
      changed
        ? `restore the database: the schema fingerprint changed (${run.fingerprintBefore?.slice(0, 12) ?? '?'} -> ${now.slice(0, 12)})`
        : `keep the database: the schema fingerprint is unchanged (${now.slice(0, 12)}) — unless verification finds snapshot recordings missing`,
    ],
  })
  if (changed)
    steps.push({
      step: 'rollback:export',
      actions: [
        `export every recording not in the run's snapshot (${run.snapshotIds?.length ?? 0} recordings then) to ${journal.file('exported-recordings.json')}`,
      ],
    })
  const touched = new Set(entries.filter((e) => e.host && e.step === 'stop').map((e) => e.host as string))
  for (const h of changed ? rec.hosts : hosts.filter((x) => touched.has(x.name))) {
    const previous = run.previousVersions[h.name]
    steps.push({
      step: 'rollback',
      host: h.name,
      actions: [
        `stop: ${show(svc.stopCommand(h, settings.service))}`,
        previous && previous !== current[h.name]
          ? `install ${previous} (now ${current[h.name] ?? 'nothing'}): ${pkg.installCommands(h, rec.package, previous, file(previous)).map(show).join(' && ')}`
          : `install: ${previous ?? '?'} is already installed`,
        `start: ${show(svc.startCommand(h, settings.service))}; wait until GET ${h.url}/ answers; check status and the new log lines`,
      ],
    })
  }
  if (changed) {
    steps.push({
      step: 'rollback:restore',
      actions: [
        `restore backup ${run.backupId ?? '(none: the rollback would stop here)'} into ${rec.database.name} in one transaction, with every host stopped; check the fingerprint is ${run.fingerprintBefore?.slice(0, 12) ?? '?'} again`,
      ],
    })
    steps.push({ step: 'rollback:recreate', actions: ['re-create the exported recordings through the API'] })
  }
  steps.push({ step: 'rollback:verify', actions: ['health, content, every snapshot recording present, a test recording'] })
  return { runId: id, environment: env.name, phase: run.phase, what: 'rollback', currentVersions: current, steps }
}

/** The plan as text, one step per block. */
export function renderRunPlan(plan: RunPlan): string {
  const lines = [
    `Dry run: ${plan.what} of run ${plan.runId} in environment '${plan.environment}' (nothing will be changed).`,
    `Current versions: ${Object.entries(plan.currentVersions)
      .map(([h, v]) => `${h} ${v ?? 'not installed'}`)
      .join(', ')}`,
    '',
  ]
  for (const s of plan.steps) {
    lines.push(`${s.host ? `[${s.host}] ` : ''}${s.step}`)
    for (const a of s.actions) lines.push(`    ${a}`)
  }
  return lines.join('\n')
}
