/**
 * The steps of the in-test engine (./engine.ts): what `pulumi preview --json` lists of a run
 * (create, update with its detailed diff, same, delete, read, refresh), and the refresh that reads
 * every Kubernetes object of a checkpoint back through the provider model (./kubeProvider.ts).
 */
import { KubeProviderModel } from './kubeProvider.ts'
import type { ResourceState } from './providers.ts'
import { plain, type Value } from './wire.ts'

type Obj = Record<string, Value>

/** One step of a run, as `pulumi preview --json` lists them. */
export interface Step {
  op: 'create' | 'update' | 'same' | 'delete' | 'read' | 'refresh'
  urn: string
  type: string
  /** An update's changed input paths in Pulumi's property-path form (`spec.template.spec.containers[0].image`). */
  detailedDiff?: Record<string, { kind: 'add' | 'update' | 'delete'; inputDiff: boolean }>
  /** The initialization errors of the state the step starts from (`oldState.initErrors` in the preview's JSON). */
  initErrors?: string[]
  /** The state an update of a Kubernetes object starts from (the refreshed one with `--refresh`): `oldState` in the preview's JSON. */
  oldState?: ResourceState
}

/** The property paths that differ between two input objects, as Pulumi's detailed diff names them. */
export function detailedDiff(before: Value, after: Value): NonNullable<Step['detailedDiff']> {
  const out: NonNullable<Step['detailedDiff']> = {}
  const key = (path: string, k: string) =>
    /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? (path ? `${path}.${k}` : k) : `${path}[${JSON.stringify(k)}]`
  const walk = (a: Value | undefined, b: Value | undefined, path: string): void => {
    if (a === undefined && b === undefined) return
    if (a === undefined) return void (out[path] = { kind: 'add', inputDiff: true })
    if (b === undefined) return void (out[path] = { kind: 'delete', inputDiff: true })
    if (Array.isArray(a) && Array.isArray(b)) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) walk(a[i], b[i], `${path}[${i}]`)
      return
    }
    if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) walk(a[k], b[k], key(path, k))
      return
    }
    if (JSON.stringify(a) !== JSON.stringify(b)) out[path] = { kind: 'update', inputDiff: true }
  }
  walk(before, after, '')
  return out
}

/**
 * `--refresh`: every Kubernetes object of the checkpoint `prior` read as the provider reads it; one
 * gone leaves `state`, one read back updates its outputs and inputs. Returns the objects the
 * identity may not read, with the API's message (the run fails on them).
 */
export async function refreshCheckpoint(
  prior: Map<string, ResourceState>,
  state: Map<string, ResourceState>,
  env: Record<string, string>,
  steps: Step[],
): Promise<{ urn: string; message: string }[]> {
  const refusals: { urn: string; message: string }[] = []
  for (const [urn, kept] of prior) {
    const type = urn.split('::')[2]?.split('$').at(-1) ?? ''
    if (!type.startsWith('kubernetes:') || !kept.provider) continue
    const o = plain(kept.outputs) as Obj & { apiVersion?: string; kind?: string }
    const model = new KubeProviderModel(kept.provider, env)
    try {
      // pulumi-kubernetes' Read runs the kind's await logic (await.go `Read`): an unready Deployment
      // comes back with initialization errors, which the checkpoint keeps (`initErrors`).
      const { live, initErrors } = await model.refreshRead(type, String(o.apiVersion), String(o.kind), kept.id)
      steps.push({ op: 'refresh', urn, type })
      const { initErrors: _before, ...rest } = kept
      if (!live) state.delete(urn)
      else
        state.set(urn, {
          ...rest,
          outputs: { ...kept.outputs, ...live },
          inputs: refreshedInputs(kept.inputs, live),
          ...(initErrors.length ? { initErrors } : {}),
        })
    } catch (error) {
      refusals.push({ urn, message: (error as Error).message })
    }
  }
  return refusals
}

/**
 * The inputs a refresh leaves in the checkpoint: the old inputs with every value the live object
 * holds at the same path (pulumi-kubernetes' Read derives them so), so a field someone else changed
 * shows as a change in the next preview.
 */
function refreshedInputs(inputs: Obj, live: Obj): Obj {
  const walk = (old: Value, now: Value | undefined): Value => {
    if (now === undefined) return old
    if (old && typeof old === 'object' && !Array.isArray(old) && now && typeof now === 'object' && !Array.isArray(now)) {
      if ('4dabf18193072939515e22adb298388d' in old) return old // secrets stay as the checkpoint holds them
      return Object.fromEntries(Object.entries(old).map(([k, v]) => [k, walk(v, now[k])]))
    }
    if (Array.isArray(old) && Array.isArray(now) && old.length === now.length) return old.map((v, i) => walk(v, now[i]))
    return typeof old === typeof now && !Array.isArray(old) ? now : old
  }
  return walk(inputs, live) as Obj
}
