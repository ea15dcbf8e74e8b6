/**
 * Stand-ins for the providers' Create/Update answers, the part of a deployment the engine gets
 * from provider plugins (none can be installed here). They return what the real plugins return
 * for the fields the program reads: a random password's `result` and a private key's PEM as
 * secrets, certificates, and a Kubernetes object's inputs with its name. In a preview of a new
 * resource every computed field is unknown, as the engine reports it.
 */
import { generateKeyPairSync, randomBytes, randomInt } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import { plain, secret, UNKNOWN, type Value } from './wire.ts'

type Obj = Record<string, Value>

/** What the engine remembers of a resource between runs (its checkpoint). */
export interface ResourceState {
  id: string
  inputs: Obj
  outputs: Obj
  /** A Kubernetes object's field manager (pulumi-kubernetes keeps it in state as `__fieldManager`). */
  fieldManager?: string
  /** A Kubernetes object's provider inputs, for a refresh. */
  provider?: Obj
  /**
   * What the last refresh's Read found unready (the provider's `initErrors`, kept in the checkpoint
   * as the engine keeps them): the next update has a step for it even without a change.
   */
  initErrors?: string[]
  /** What `pulumi destroy` reads: the resource options and what it depends on (parent, provider, dependencies). */
  protect?: boolean
  retainOnDelete?: boolean
  dependsOn?: string[]
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

function pem(kind: string, bytes: number): string {
  const lines =
    randomBytes(bytes)
      .toString('base64')
      .match(/.{1,64}/g) ?? []
  return `-----BEGIN ${kind}-----\n${lines.join('\n')}\n-----END ${kind}-----\n`
}

/** The fields a provider computes, per type; `undefined` for a type the stand-in does not know. */
function computed(type: string, inputs: Obj): Obj | undefined {
  const p = plain(inputs) as Obj
  switch (type) {
    case 'random:index/randomPassword:RandomPassword': {
      const length = Number(p.length ?? 16)
      let result = ''
      while (result.length < length) result += ALNUM[randomInt(ALNUM.length)]
      return { result: secret(result), bcryptHash: secret(pem('HASH', 20)) }
    }
    case 'random:index/randomBytes:RandomBytes': {
      const bytes = randomBytes(Number(p.length ?? 32))
      return { base64: secret(bytes.toString('base64')), hex: secret(bytes.toString('hex')) }
    }
    case 'tls:index/privateKey:PrivateKey': {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      return {
        privateKeyPem: secret(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()),
        publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      }
    }
    case 'tls:index/certRequest:CertRequest':
      return { certRequestPem: pem('CERTIFICATE REQUEST', 300) }
    case 'tls:index/selfSignedCert:SelfSignedCert':
    case 'tls:index/locallySignedCert:LocallySignedCert':
      return { certPem: pem('CERTIFICATE', 480) }
    default:
      if (type.startsWith('kubernetes:') || type.startsWith('pulumi:providers:')) return {}
      return undefined
  }
}

function unknownsFor(fields: Obj): Obj {
  return Object.fromEntries(Object.keys(fields).map((k) => [k, UNKNOWN]))
}

/**
 * The outputs and id the engine answers a RegisterResource with. A resource whose inputs did not
 * change keeps its outputs (random values are generated once); a changed one gets new computed
 * values (every input of random and tls resources forces a new one), or unknowns in a preview.
 */
export function answer(
  type: string,
  urn: string,
  inputs: Obj,
  prior: ResourceState | undefined,
  preview: boolean,
): { id: string; outputs: Obj; unknownType: boolean } {
  if (prior && isDeepStrictEqual(plain(prior.inputs), plain(inputs))) return { id: prior.id, outputs: prior.outputs, unknownType: false }
  const fields = computed(type, inputs)
  if (fields === undefined) return { id: preview ? '' : `${urn}-id`, outputs: inputs, unknownType: true }
  const kept = prior && type.startsWith('kubernetes:') ? prior.id : undefined
  const id = kept ?? (preview ? '' : type.startsWith('pulumi:providers:') ? randomBytes(16).toString('hex') : `${urn}-id`)
  if (preview) return { id, outputs: { ...inputs, ...unknownsFor(fields) }, unknownType: false }
  return { id, outputs: { ...inputs, ...fields }, unknownType: false }
}
