/**
 * A stale checkout must not downgrade production across a schema: `pulumi up` (and `pulumi
 * preview`) of a stack whose recording service release is older than the one running in the
 * cluster fails before anything changes, unless the stack sets `svcops:allowDowngrade: true`.
 *
 * What runs is read from the cluster through the program's provider: a `Deployment.get` of the
 * recording service's Deployment, whose container's image tag is the running release. A `.get` of
 * an object that does not exist fails the whole run, and the first `pulumi up` of a stack creates
 * that Deployment; so the Deployment is read only once the stack has deployed it, which the
 * stack's own outputs of its last update say (a StackReference of the stack itself, read through
 * the engine like any other).
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import { compareVersions } from '../releases/versions.ts'

export interface DowngradeGuardArgs {
  /** The release the stack file declares. */
  declared: string
  /** The stack file and stack name, for the message. */
  file: string
  stack: string
  /** Where the Deployment is: namespace, name, and its container. */
  namespace: string
  deployment: string
  container: string
  /** The provider the program deploys through (its cluster, its identity). */
  provider: k8s.Provider
  /** `svcops:allowDowngrade`. */
  allowDowngrade: boolean
}

/** The tag of `registry/repo:1.5.0[@sha256:...]`. */
function tagOf(image: string | undefined): string | undefined {
  const noDigest = image?.split('@')[0] ?? ''
  const colon = noDigest.lastIndexOf(':')
  return colon > noDigest.lastIndexOf('/') ? noDigest.slice(colon + 1) : undefined
}

/** The refusal, as one sentence naming the versions, the object and the ways forward. */
export function downgradeRefusal(
  a: Pick<DowngradeGuardArgs, 'file' | 'stack' | 'namespace' | 'deployment'>,
  declared: string,
  running: string,
): string {
  return (
    `${a.file}: recording service ${declared} is older than ${running}, which runs in ${a.namespace}/${a.deployment}; ` +
    `pulumi up would downgrade it across its database schema, so nothing was changed: go back with svcops rollback recording --env ${a.stack} ` +
    `(it restores the database when the schema changed), update this checkout, or set svcops:allowDowngrade: true for one deliberate run.`
  )
}

/**
 * The declared release once it is checked against the running one; rejects (failing the preview
 * of whatever takes it as an input) when it would be a downgrade.
 */
export function checkNoDowngrade(a: DowngradeGuardArgs): pulumi.Output<string> {
  if (a.allowDowngrade) return pulumi.output(a.declared)
  const own = new pulumi.StackReference(`${a.stack}-deployed`, {
    name: `${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`,
  })
  const deployed = own
    .getOutput('versions')
    .apply((v: unknown) => typeof (v as { recording?: unknown } | undefined)?.recording === 'string')
  const running = deployed.apply<string | undefined>((yes) => {
    if (!yes) return pulumi.output(undefined)
    const live = k8s.apps.v1.Deployment.get(`${a.stack}-recording-running`, `${a.namespace}/${a.deployment}`, { provider: a.provider })
    return live.spec.template.spec.containers.apply((cs) => tagOf(cs.find((c) => c.name === a.container)?.image))
  })
  return running.apply((version) => {
    if (version && /^\d+\.\d+\.\d+$/.test(version) && compareVersions(a.declared, version) < 0)
      throw new pulumi.RunError(downgradeRefusal(a, a.declared, version))
    return a.declared
  })
}
