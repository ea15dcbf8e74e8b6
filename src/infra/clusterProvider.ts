/**
 * The one Kubernetes provider of the program (index.ts), configured so that every machine that
 * runs `pulumi preview` or `pulumi up` registers it with the same inputs.
 */
import type * as k8s from '@pulumi/kubernetes'

/**
 * The explicit provider's inputs, the same on every machine that runs `pulumi preview` or `up`.
 * `@pulumi/kubernetes/provider.js` fills an input left unset from the environment: `kubeconfig`
 * from KUBECONFIG (set in the scheduled job, usually not on a workstation) and the flags from
 * `PULUMI_K8S_*`; each side would then see the other's provider as changed. So every one of them
 * is given: `kubeconfig: ''`, which the provider reads as unset (it loads KUBECONFIG or
 * ~/.kube/config itself, as client-go does, on whichever machine it runs), the context from
 * `kubernetes:context`, and `clusterIdentifier` fixed per stack, so that a kubeconfig that moves
 * (or this very change of the input) updates the provider instead of replacing it and every object.
 * `enablePatchForce: false` outranks PULUMI_K8S_ENABLE_PATCH_FORCE: only an object's own
 * `pulumi.com/patchForce` annotation forces a field away from another manager.
 */
export function providerArgs(stack: string, context: string | undefined): k8s.ProviderArgs {
  return {
    kubeconfig: '',
    ...(context ? { context } : {}),
    clusterIdentifier: `svcops-${stack}`,
    enableServerSideApply: true,
    enablePatchForce: false,
    enableSecretMutable: true,
    enableConfigMapMutable: true,
    upsertExistingObjects: false,
    deleteUnreachable: false,
    skipUpdateUnreachable: false,
    suppressDeprecationWarnings: false,
    suppressHelmHookWarnings: false,
  }
}

/**
 * The inputs of the provider that declares the platform's Namespace alone: the program's own, with
 * `upsertExistingObjects: true`. The runbook (docs/deploy.md) creates the namespace with kubectl
 * before the first `pulumi up`, since the Secrets and claims the scheduled jobs mount go into it
 * first; and pulumi-kubernetes (4.29+) creates an object by a client-side POST that answers
 * AlreadyExists for one that is there (provider/pkg/await/await.go, `Creation`), so the program's
 * Namespace would fail on a cluster set up as the runbook says. Upserting adopts the namespace by
 * a server-side apply instead; upstream's reason against it (a renamed resource's delete removing
 * the adopted object) does not hold for this one, which the program never deletes
 * (`retainOnDelete`). Every other object keeps the provider that refuses to adopt.
 */
export function namespaceProviderArgs(stack: string, context: string | undefined): k8s.ProviderArgs {
  return { ...providerArgs(stack, context), upsertExistingObjects: true }
}
