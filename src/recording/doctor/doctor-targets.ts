/**
 * `svcops doctor recording`: the targets of an environment (or the ones named), by its platform:
 * on hosts each host reached through its own transport and checked as its service sees it; on
 * Kubernetes the Deployment's pods read through the API (cluster-doctor.ts). Read-only.
 */
import { requireSection } from '../../config/load.ts'
import type { Environment } from '../../config/schema.ts'
import { selectHosts } from '../recording-context.ts'
import { openRecordingPlatform } from '../recording-platforms.ts'
import { settingsFor } from '../recording-settings.ts'
import { CAUSES } from './causes.ts'
import { onClusterOf } from './cluster-doctor.ts'
import { addDiagnosis, type Diagnosis } from '../../doctor/diagnose.ts'
import { diagnoseHosts } from './diagnose-hosts.ts'
import type { ProblemId } from './cause-types.ts'

/** Checks one of the seed's problems, cause by cause, on the chosen hosts. */
export type CheckProblem = (problem: ProblemId) => Promise<Diagnosis>

/**
 * Runs `procedure` on the targets of `env` (all, or `names`) as its platform offers them, and returns
 * every finding and check in the procedure's order: on a platform with hosts (`hostOf`) each host
 * reached through its own transport and checked as its service sees it; on one without (Kubernetes)
 * the Deployment's pods read through the API (cluster-doctor.ts).
 */
export async function onTargetsOf(env: Environment, names: string[] | undefined, procedure: Procedure): Promise<Diagnosis> {
  const rec = requireSection(env, 'recording')
  const settings = settingsFor(env, rec)
  const platform = openRecordingPlatform(env, settings)
  const { hostOf } = platform
  if (!hostOf) {
    await platform.close()
    return onClusterOf(env, names, procedure)
  }
  const out: Diagnosis = { findings: [], checks: [] }
  try {
    const hosts = selectHosts(platform.targets.map(hostOf), names, env.file)
    await procedure(async (problem) => {
      const d = await diagnoseHosts(
        hosts,
        settings,
        CAUSES.filter((c) => c.problem === problem),
      )
      addDiagnosis(out, d)
      return d
    })
    return out
  } finally {
    await platform.close()
  }
}

type Procedure = (check: CheckProblem) => Promise<void>
