/**
 * `svcops doctor recording`: the hosts of an environment (or the ones named), each reached through
 * its own transport and checked as its service sees it. Read-only.
 */
import { requireSection } from '../config/load.ts'
import { BadInputError } from '../core/errors.ts'
import type { Environment } from '../config/schema.ts'
import { transportFor } from '../drivers/transports.ts'
import { selectHosts, settingsFor, type HostHandle } from '../recording/recording-context.ts'
import { CAUSES } from './causes.ts'
import { diagnoseHosts, type Diagnosis } from './diagnose.ts'
import type { ProblemId } from './types.ts'

/** Checks one of the seed's problems, cause by cause, on the chosen hosts. */
export type CheckProblem = (problem: ProblemId) => Promise<Diagnosis>

/**
 * Opens the hosts of `env` (all, or `hostNames`), runs `procedure` with a way to check one problem
 * on them, closes the hosts, and returns every finding and check in the procedure's order.
 */
export async function onHostsOf(
  env: Environment,
  hostNames: string[] | undefined,
  procedure: (check: CheckProblem) => Promise<void>,
): Promise<Diagnosis> {
  const rec = requireSection(env, 'recording')
  if (rec.platform === 'kubernetes')
    throw new BadInputError(
      `The doctor checks hosts, and environment '${env.name}' runs the recording service on Kubernetes (recording.platform in ${env.file}).`,
      `Read every pod's status and last log lines: svcops verify recording --env ${env.name}`,
    )
  const all: HostHandle[] = rec.hosts.map((config) => ({ name: config.name, config, transport: transportFor(config), url: config.url }))
  const out: Diagnosis = { findings: [], checks: [] }
  try {
    const hosts = selectHosts(all, hostNames, env.file)
    await procedure(async (problem) => {
      const d = await diagnoseHosts(
        hosts,
        settingsFor(env, rec),
        CAUSES.filter((c) => c.problem === problem),
      )
      out.findings.push(...d.findings)
      out.checks.push(...d.checks)
      return d
    })
    return out
  } finally {
    await Promise.all(all.map((h) => h.transport.close()))
  }
}
