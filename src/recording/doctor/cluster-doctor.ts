/**
 * `svcops doctor recording` on the Kubernetes platform: the Deployment of the stack is the one
 * target, its pods read through the API (pod-view.ts) and checked by the cluster causes
 * (cluster-causes.ts). Read-only: nothing is written to the cluster or the database.
 */
import type { Environment } from '../../config/schema.ts'
import { selectHosts } from '../recording-context.ts'
import { openRecordingCluster } from '../kubernetes/recording-deployment.ts'
import { CLUSTER_CAUSES } from './cluster-causes.ts'
import { addDiagnosis, runCauses, type Diagnosis } from '../../doctor/diagnose.ts'
import { seedOf } from './causes.ts'
import type { ProblemId } from './cause-types.ts'
import { openPodView } from './pod-view.ts'

/**
 * Reads the pods of `env`'s Deployment (`names`, when given, must name it), runs `procedure` with a
 * way to check one problem on them, and returns every finding and check in the procedure's order.
 */
export async function onClusterOf(
  env: Environment,
  names: string[] | undefined,
  procedure: (check: (problem: ProblemId) => Promise<Diagnosis>) => Promise<void>,
): Promise<Diagnosis> {
  const cluster = openRecordingCluster(env)
  selectHosts([{ name: cluster.target.deployment }], names, env.file)
  const view = await openPodView(cluster.kube(), env.product.prefix)
  const out: Diagnosis = { findings: [], checks: [] }
  try {
    await procedure(async (problem) => {
      const d = await runCauses(
        view,
        cluster.target.deployment,
        CLUSTER_CAUSES.filter((c) => c.problem === problem),
        seedOf,
      )
      addDiagnosis(out, d)
      return d
    })
    return out
  } finally {
    await view.close()
    await cluster.close()
  }
}
