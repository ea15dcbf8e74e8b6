/**
 * The first checks of every run on the Kubernetes platform, for the recording service and the live
 * production system alike: the Pulumi CLI and its version, the stack (no update running), the
 * Kubernetes API with the stack's context, and this identity's rights (one
 * SelfSubjectAccessReview each). A missing right stops the run before anything changes, naming
 * each right and what the run uses it for.
 */
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { showRight, type KubernetesDriver, type NeededRight } from './kubernetes.ts'
import type { PulumiCli } from './pulumi.ts'

export async function checkClusterAccess(
  cli: PulumiCli,
  kube: KubernetesDriver,
  options: { stack: string; rights: NeededRight[]; grant: string },
): Promise<{ pulumiVersion: string; kubernetes: string }> {
  const pulumiVersion = await cli.version()
  events.emit({ kind: 'check', check: 'Pulumi CLI', ok: true, detail: pulumiVersion })
  await cli.checkStack()
  events.emit({ kind: 'check', check: `Pulumi stack ${options.stack}`, ok: true })
  const kubernetes = await kube.serverVersion()
  events.emit({
    kind: 'check',
    check: 'Kubernetes API reachable with the stack’s context',
    ok: true,
    detail: `${kube.server()} ${kubernetes}`,
  })
  const missing = await kube.missingRights(options.rights)
  events.emit({
    kind: 'check',
    check: 'rights of this identity',
    ok: missing.length === 0,
    detail: missing.map(showRight).join(', ') || 'all',
  })
  if (missing.length)
    throw new OperationError(
      `This identity lacks ${missing.length} right(s) in namespace ${kube.target.namespace} the run needs: ${missing.map((r) => `${showRight(r)} (${r.why})`).join(', ')}.`,
      options.grant,
    )
  return { pulumiVersion, kubernetes }
}
