/**
 * The one pre-shared key of the live production system, in one Secret that the system controller
 * and every media component read. Generated once by `@pulumi/random` and kept in Pulumi state as a
 * secret; a new one is generated only when `rotation` changes. An operator may supply their own
 * (`pulumi config set --secret svcops:psk`): it must pass the same check as `svcops psk check`.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import * as random from '@pulumi/random'
import { assessPsk, assertStrongPsk } from '../releases/pre-shared-key.ts'
import { registerSecret } from '../core/redact.ts'
import { checksumOf, secretData } from './kube.ts'

/** Strength of a generated PSK. */
export const PSK_BITS = 256
// Letters and digits only: the PSK travels in an environment variable and a JSON file unescaped.
const ALPHABET_SIZE = 26 + 26 + 10
/** Length that gives at least PSK_BITS with that alphabet (43 characters of 5.95 bits). */
export const PSK_LENGTH = Math.ceil(PSK_BITS / Math.log2(ALPHABET_SIZE))

/** Key of the PSK inside its Secret. */
export const PSK_KEY = 'psk'

export interface PskArgs {
  /** Namespace of the Secret. */
  namespace: pulumi.Input<string>
  /** Any text; changing it replaces the random password, which generates a new PSK. */
  rotation: string
  /** An operator's PSK (already decrypted by Pulumi); checked for entropy before anything is created. */
  supplied?: string
  /** Labels of the Secret. */
  labels: Record<string, string>
  /** Key of the checksum annotation (a Pulumi secret). */
  checksumKey: pulumi.Input<string>
}

export class Psk extends pulumi.ComponentResource {
  /** Name of the Secret holding the PSK (an output, never the value). */
  readonly secretName: pulumi.Output<string>
  /** Key inside the Secret. */
  readonly secretKey: string = PSK_KEY
  /** The PSK itself, always a Pulumi secret. */
  readonly value: pulumi.Output<string>
  /** Keyed checksum annotation value: changes exactly when the PSK does, and reveals nothing of it. */
  readonly checksum: pulumi.Output<string>
  /**
   * Whether the PSK passes the entropy check the system controller enforces from 6.0 (`svcops psk
   * check`'s rule): a stack output, so that a live upgrade decides on a rotation without reading the key.
   */
  readonly passesEntropyCheck: pulumi.Output<boolean>

  constructor(name: string, args: PskArgs, opts?: pulumi.ComponentResourceOptions) {
    super('svcops:infra:Psk', name, {}, opts)
    if (args.supplied !== undefined) {
      registerSecret(args.supplied)
      assertStrongPsk(args.supplied, 'svcops:psk')
      this.value = pulumi.secret(args.supplied)
    } else {
      const password = new random.RandomPassword(
        `${name}-random`,
        { length: PSK_LENGTH, special: false, upper: true, lower: true, numeric: true, keepers: { rotation: args.rotation } },
        { parent: this },
      )
      // The engine marks `result` secret; the mock runtime does not, so say it here too.
      this.value = pulumi.secret(password.result)
    }
    const secret = new k8s.core.v1.Secret(
      `${name}-secret`,
      {
        metadata: { name, namespace: args.namespace, labels: args.labels },
        type: 'Opaque',
        stringData: secretData({ [PSK_KEY]: this.value }),
      },
      { parent: this },
    )
    this.secretName = secret.metadata.name
    this.checksum = checksumOf(args.checksumKey, this.value)
    this.passesEntropyCheck = pulumi.unsecret(this.value.apply((v) => assessPsk(v).ok))
    this.registerOutputs({ secretName: this.secretName })
  }
}
