/**
 * `svcops doctor recording`: the targets of an environment (or the ones named), by its platform:
 * on hosts each host reached through its own transport and checked as its service sees it; on
 * Kubernetes the Deployment's pods read through the API (cluster-doctor.ts). Read-only.
 */
import { requireSection } from '../config/load.ts'
import { BadInputError } from '../core/errors.ts'
import type { Environment, RecordingConfig } from '../config/schema.ts'
import { selectHosts } from '../recording/recording-context.ts'
import type { RecordingHost } from '../recording/recording-platform.ts'
import { openRecordingPlatform } from '../recording/recording-platforms.ts'
import { settingsFor } from '../recording/recording-settings.ts'
import { CAUSES } from './causes.ts'
import { onClusterOf } from './cluster-doctor.ts'
import { diagnoseHosts, type Diagnosis } from './diagnose.ts'
import type { ProblemId } from './doctor-types.ts'

/** Checks one of the seed's problems, cause by cause, on the chosen hosts. */
export type CheckProblem = (problem: ProblemId) => Promise<Diagnosis>

/**
 * Opens the hosts of `env` (all, or `hostNames`), runs `procedure` with a way to check one problem
 * on them, closes the hosts, and returns every finding and check in the procedure's order.
 */
async function onHostsOf(
  env: Environment,
  hostNames: string[] | undefined,
  procedure: (check: CheckProblem) => Promise<void>,
): Promise<Diagnosis> {
  const rec = requireSection(env, 'recording')
  const settings = settingsFor(env, rec)
  const platform = openRecordingPlatform(env, settings)
  const all: RecordingHost[] = []
  for (const t of platform.targets) {
    const h = platform.hostOf(t)
    if ('unavailable' in h) {
      await platform.close()
      throw new BadInputError(
        `The doctor checks hosts, and environment '${env.name}' runs the recording service on ${platform.name} (recording.platform in ${env.file}).`,
        `${h.unavailable}. Read its status and last log lines: svcops verify recording --env ${env.name}`,
      )
    }
    all.push(h)
  }
  const out: Diagnosis = { findings: [], checks: [] }
  try {
    const hosts = selectHosts(all, hostNames, env.file)
    await procedure(async (problem) => {
      const d = await diagnoseHosts(
        hosts,
        settings,
        CAUSES.filter((c) => c.problem === problem),
      )
      out.findings.push(...d.findings)
      out.checks.push(...d.checks)
      return d
    })
    return out
  } finally {
    await platform.close()
  }
}

type Procedure = (check: CheckProblem) => Promise<void>

/** How each platform's targets are diagnosed: the one place the doctor tells platforms apart. */
const DOCTORS: Readonly<
  Record<RecordingConfig['platform'], (env: Environment, names: string[] | undefined, procedure: Procedure) => Promise<Diagnosis>>
> = {
  hosts: onHostsOf,
  kubernetes: onClusterOf,
}

/**
 * Runs `procedure` on the targets of `env` (all, or `names`) as its platform reaches them, and
 * returns every finding and check in the procedure's order.
 */
export function onTargetsOf(env: Environment, names: string[] | undefined, procedure: Procedure): Promise<Diagnosis> {
  return DOCTORS[requireSection(env, 'recording').platform](env, names, procedure)
}
