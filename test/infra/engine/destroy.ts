/**
 * `pulumi destroy [--exclude-protected]` of the in-test engine (./cli.ts): every custom resource of
 * the checkpoint, last registered first, deleted through the provider model (./kubeProvider.ts
 * `delete`, a `DELETE` to the API server) or, for the others (random, tls, providers), dropped
 * from the checkpoint, as the engine does once their provider answered.
 *
 * - a resource with `retainOnDelete` leaves the checkpoint without a delete (pulumi/pulumi
 *   pkg/resource/deploy/step.go `DeleteStep.Apply` calls the provider's Delete only without it);
 * - `--exclude-protected` keeps every protected resource and what it depends on — its parent, its
 *   provider, its dependencies, transitively — and destroys the rest (pulumi/pulumi
 *   pkg/cmd/pulumi/operations/destroy.go `separateProtected`, `handleExcludeProtected`);
 * - without it a protected resource refuses the destroy before anything is deleted, as the engine's
 *   step generator does (`unable to delete resource ... as it is currently marked for protection`).
 */
import { KubeProviderModel, ProviderError } from './kubeProvider.ts'
import type { ResourceState } from './providers.ts'
import type { Step } from './steps.ts'
import { plain, type Value } from './wire.ts'

type Obj = Record<string, Value>

/** The resources `--exclude-protected` keeps: each protected one and its dependencies, transitively. */
function keptForProtected(state: Map<string, ResourceState>): Set<string> {
  const kept = new Set<string>()
  const keep = (urn: string): void => {
    if (kept.has(urn)) return
    kept.add(urn)
    for (const d of state.get(urn)?.dependsOn ?? []) keep(d)
  }
  for (const [urn, s] of state) if (s.protect) keep(urn)
  return kept
}

/** Destroys the checkpoint `state` in place; the steps taken, and the failure that stopped it. */
export async function destroyStack(
  state: Map<string, ResourceState>,
  env: Record<string, string>,
  options: { excludeProtected: boolean },
): Promise<{ steps: Step[]; error?: { urn: string; message: string } }> {
  const steps: Step[] = []
  const typeOf = (urn: string) => urn.split('::')[2]?.split('$').at(-1) ?? ''
  const kept = options.excludeProtected ? keptForProtected(state) : new Set<string>()
  if (!options.excludeProtected) {
    const guarded = [...state].find(([, s]) => s.protect)
    if (guarded)
      return {
        steps,
        error: {
          urn: guarded[0],
          message: `unable to delete resource "${guarded[0]}"\nas it is currently marked for protection. To unprotect the resource, remove the \`protect\` flag from the resource in your Pulumi program and run \`pulumi up\``,
        },
      }
  }
  for (const [urn, s] of [...state].reverse()) {
    const type = typeOf(urn)
    if (kept.has(urn) || type === 'pulumi:pulumi:Stack') continue
    if (type.startsWith('kubernetes:') && s.provider && !s.retainOnDelete) {
      try {
        await new KubeProviderModel(s.provider, env).delete(type, plain(s.outputs) as Obj, s.id)
      } catch (error) {
        if (error instanceof ProviderError) return { steps, error: { urn, message: error.message } }
        throw error
      }
    }
    steps.push({ op: 'delete', urn, type })
    state.delete(urn)
  }
  // The stack resource goes with the last of its resources.
  if (state.size === 1) for (const urn of state.keys()) if (typeOf(urn) === 'pulumi:pulumi:Stack') state.delete(urn)
  return { steps }
}
