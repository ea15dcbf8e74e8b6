/**
 * Every Kubernetes object the program declares, collected as it declares them (a stack
 * transformation that changes nothing): what `pulumi preview --refresh` reads back, from which the
 * scheduled upgrades' Roles are derived (jobRights.ts). `seal()` once the last object is declared.
 */
import * as pulumi from '@pulumi/pulumi'
import type { StackObject } from './jobRights.ts'

export class ObjectInventory {
  /** The objects, known once the inventory is sealed. */
  readonly objects: pulumi.Output<StackObject[]>
  private readonly found: pulumi.Output<StackObject | undefined>[] = []
  private sealed: () => void = () => undefined

  constructor() {
    const done = new Promise<void>((resolve) => (this.sealed = resolve))
    this.objects = pulumi
      .output(done.then(() => this.found))
      .apply((list) => pulumi.all(list))
      .apply((list) => list.filter((o): o is StackObject => o !== undefined))
    pulumi.runtime.registerStackTransformation((args) => {
      // A patch (DeploymentPatch) reads back the object it patches, which is declared itself.
      if (!args.type.startsWith('kubernetes:') || args.type.endsWith('Patch')) return undefined
      const props = args.props as {
        apiVersion?: pulumi.Input<string>
        kind?: pulumi.Input<string>
        metadata?: pulumi.Input<{ name?: pulumi.Input<string> }>
      }
      // A `.get` declares nothing (its inputs are empty): it reads an object, it does not own one.
      if (props.apiVersion === undefined || props.kind === undefined) return undefined
      this.found.push(
        pulumi
          .all([props.apiVersion, props.kind, pulumi.output(props.metadata).apply((m) => m?.name)])
          .apply(([apiVersion, kind, name]) => (name ? { apiVersion, kind, name } : undefined)),
      )
      return undefined
    })
  }

  /** No object is declared after this: the inventory resolves. */
  seal(): void {
    this.sealed()
  }
}
